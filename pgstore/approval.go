// Approval gates: Approve and Reject, writes of one task by the Rulebook,
// and the graph's ApprovalPolicy in taskgraph_approval, read by every
// Create and CreatePlan that could be gated by it, in its transaction.

package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

var (
	_ taskgraph.Approver        = (*Store)(nil)
	_ taskgraph.ApprovalPolicer = (*Store)(nil)
)

// Approve implements taskgraph.Approver.
func (s *Store) Approve(ctx context.Context, id taskgraph.ID, by string) (taskgraph.Task, error) {
	return s.holderWrite(ctx, func() error { return taskgraph.Rules.ApproveArgs(by) }, id, func(t *taskgraph.Task, now time.Time) error {
		return taskgraph.Rules.Approve(t, by, now)
	})
}

// Reject implements taskgraph.Approver.
func (s *Store) Reject(ctx context.Context, id taskgraph.ID, by, reason string) (taskgraph.Task, error) {
	return s.holderWrite(ctx, func() error { return taskgraph.Rules.RejectArgs(by, reason) }, id, func(t *taskgraph.Task, now time.Time) error {
		return taskgraph.Rules.Reject(t, by, reason, now)
	})
}

// SetApprovalPolicy implements taskgraph.ApprovalPolicer.
func (s *Store) SetApprovalPolicy(ctx context.Context, p taskgraph.ApprovalPolicy) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	p, err := taskgraph.Rules.ApprovalPolicyArgs(p) // before any SQL
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		if len(p.Labels)+len(p.Via) == 0 {
			_, err := tx.Exec(ctx, `DELETE FROM taskgraph_approval WHERE graph = $1`, s.graph)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO taskgraph_approval (graph, labels, via) VALUES ($1, $2, $3)
			ON CONFLICT (graph) DO UPDATE SET labels = excluded.labels, via = excluded.via`, s.graph, nonNil(p.Labels), nonNil(p.Via))
		return err
	})
}

// nonNil is list, or an empty list for a NOT NULL array column.
func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// ApprovalPolicy implements taskgraph.ApprovalPolicer.
func (s *Store) ApprovalPolicy(ctx context.Context) (taskgraph.ApprovalPolicy, error) {
	return readSettings(ctx, s, s.approvalPolicy)
}

// approvalPolicy reads the graph's approval policy.
func (s *Store) approvalPolicy(ctx context.Context, q querier) (taskgraph.ApprovalPolicy, error) {
	rows, err := q.Query(ctx, `SELECT labels, via FROM taskgraph_approval WHERE graph = $1`, s.graph)
	if err != nil {
		return taskgraph.ApprovalPolicy{}, err
	}
	var p taskgraph.ApprovalPolicy
	_, err = pgx.ForEachRow(rows, []any{&p.Labels, &p.Via}, func() error { return nil })
	if len(p.Labels) == 0 {
		p.Labels = nil // stored normal (ApprovalPolicyArgs): only '{}' reads back as []
	}
	if len(p.Via) == 0 {
		p.Via = nil
	}
	return p, err
}

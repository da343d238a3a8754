// The graph's settings tables, taskgraph_limits, taskgraph_liveness and
// taskgraph_approval: how they are read, and the defaults a create takes
// from them.

package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

// readSettings is what the getters of the settings tables (Limits,
// LivenessDefaults, ApprovalPolicy) do: read on a usable store, outside
// a transaction, retried as every statement is.
func readSettings[T any](ctx context.Context, s *Store, read func(context.Context, querier) (T, error)) (T, error) {
	var out T
	if err := s.usable(ctx); err != nil {
		return out, err
	}
	err := retry(ctx, func() (err error) {
		out, err = read(ctx, s.pool)
		return err
	})
	return out, err
}

// perLabel reads a per-label table into a map: query selects, for the
// graph $1, the label and then the columns scanned into dest, from which
// value makes the label's entry.
func perLabel[V any](ctx context.Context, q querier, query, graph string, dest []any, value func() V) (map[string]V, error) {
	rows, err := q.Query(ctx, query, graph)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var label string
	dest = append([]any{&label}, dest...)
	out := map[string]V{}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		out[label] = value()
	}
	return out, rows.Err()
}

// withDefaults returns nts with the graph's settings applied, read in tx:
// the label defaults (Rules.DefaultLiveness), then the approval policy
// (Rules.DefaultApproval), in the order the root's stores apply them. A
// table no task could take a default from is not read (most creates
// carry no label): the policy gates by label or by how a task was
// created.
func (s *Store) withDefaults(ctx context.Context, tx pgx.Tx, nts []taskgraph.NewTask) ([]taskgraph.NewTask, error) {
	labelled, via := false, false
	for _, nt := range nts {
		labelled = labelled || len(nt.Labels) > 0
		via = via || nt.CreatedVia != ""
	}
	if labelled {
		defaults, err := s.livenessDefaults(ctx, tx)
		if err != nil {
			return nil, err
		}
		nts = taskgraph.Rules.DefaultLiveness(nts, defaults)
	}
	if labelled || via {
		p, err := s.approvalPolicy(ctx, tx)
		if err != nil {
			return nil, err
		}
		nts = taskgraph.Rules.DefaultApproval(nts, p)
	}
	return nts, nil
}

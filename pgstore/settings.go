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

// perLabel reads the graph's rows of a per-label table: query, of $1 the
// graph, selects the label and then the columns it scans into dest; value
// makes a label's entry of them.
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

// withDefaults returns nts with what the graph's settings default, read
// in tx: the label defaults (Rules.DefaultLiveness), then the approval
// policy (Rules.DefaultApproval), as the Rulebook's Create and Plan take
// them. A table no task could take a default from is not read: most
// creates carry no label.
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

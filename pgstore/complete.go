// Completing a task, and reporting the dependents the completion readies.

package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

// Complete implements taskgraph.Store. The dependents are locked with the
// task, so that of two blockers of one task completed at once, the second
// to commit sees the first and reports the task as unblocked.
func (s *Store) Complete(ctx context.Context, id taskgraph.ID, owner string, opts ...taskgraph.CompleteOption) (taskgraph.Completion, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Completion{}, err
	}
	set, err := taskgraph.Rules.CompleteOptions(opts) // before any SQL
	if err != nil {
		return taskgraph.Completion{}, err
	}
	result := set.Result
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Completion, error) {
		t, deps, now, err := s.lockWithDependents(ctx, tx, id)
		if err != nil {
			return taskgraph.Completion{}, err
		}
		if err := taskgraph.Rules.Complete(t, owner, result, now); err != nil {
			return taskgraph.Completion{}, err
		}
		st, err := s.statuses(ctx, tx, t.BlockedBy)
		if err != nil {
			return taskgraph.Completion{}, err
		}
		if err := taskgraph.Rules.Blocked(t, st.status); err != nil {
			return taskgraph.Completion{}, err
		}
		var c taskgraph.Completion
		if c.Task, err = s.save(ctx, tx, t, updateTask); err != nil {
			return taskgraph.Completion{}, err
		}
		c.Unblocked, err = s.unblocked(ctx, tx, deps)
		return c, err
	})
}

// unblocked returns, in id order, those of the dependents deps of a task
// just completed that are pending with every blocker completed.
func (s *Store) unblocked(ctx context.Context, tx pgx.Tx, deps []*taskgraph.Task) ([]taskgraph.Task, error) {
	if len(deps) == 0 {
		return nil, nil
	}
	ids := make([]taskgraph.ID, len(deps))
	for i, d := range deps {
		ids[i] = d.ID
	}
	rows, err := tx.Query(ctx, `SELECT `+columns+`, `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = ANY($2)
		AND status = 'pending' AND `+readyCondition+` ORDER BY id`, s.graph, int64s(ids))
	if err != nil {
		return nil, err
	}
	return pgx.AppendRows([]taskgraph.Task(nil), rows, func(r pgx.CollectableRow) (taskgraph.Task, error) { return scanView(r) })
}

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
	var c taskgraph.Completion
	err = s.begin(ctx, func(tx pgx.Tx) error {
		t, deps, now, err := s.lockWithDependents(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := taskgraph.Rules.Complete(t, owner, result, now); err != nil {
			return err
		}
		st, err := s.statuses(ctx, tx, t.BlockedBy)
		if err != nil {
			return err
		}
		if err := taskgraph.Rules.Blocked(t, st.status); err != nil {
			return err
		}
		if c.Task, err = s.save(ctx, tx, t, updateTask); err != nil {
			return err
		}
		if len(deps) == 0 {
			return nil
		}
		ids := make([]taskgraph.ID, len(deps))
		for i, d := range deps {
			ids[i] = d.ID
		}
		rows, err := tx.Query(ctx, `SELECT `+columns+`, `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = ANY($2)
			AND status = 'pending' AND `+readyCondition+` ORDER BY id`, s.graph, int64s(ids))
		if err != nil {
			return err
		}
		c.Unblocked, err = pgx.AppendRows(c.Unblocked, rows, func(r pgx.CollectableRow) (taskgraph.Task, error) { return scanView(r) })
		return err
	})
	if err != nil {
		return taskgraph.Completion{}, err
	}
	return c, nil
}

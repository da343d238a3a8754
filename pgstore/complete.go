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
		t, deps, st, now, err := s.lockWithDependents(ctx, tx, id, true)
		if err != nil {
			return taskgraph.Completion{}, err
		}
		if err := taskgraph.Rules.Complete(t, owner, result, now); err != nil {
			return taskgraph.Completion{}, err
		}
		if err := taskgraph.Rules.Blocked(t, st.status); err != nil {
			return taskgraph.Completion{}, err
		}
		// The task's row, the dependents it readies, the COMMIT and the
		// notification: one round trip.
		var c taskgraph.Completion
		w, err := s.saving(t, updateTask, &c.Task)
		if err != nil {
			return taskgraph.Completion{}, err
		}
		s.unblocked(&w.b, deps, &c.Unblocked)
		err = s.commit(ctx, tx, &w.b) // before c is read: it fills c in
		return c, err
	})
}

// unblocked queues in b the query that reads into *out, in id order, those
// of the dependents deps of a task just completed (by a statement before
// it in b) that are pending with every blocker completed.
func (s *Store) unblocked(b *pgx.Batch, deps []*taskgraph.Task, out *[]taskgraph.Task) {
	if len(deps) == 0 {
		return
	}
	ids := make([]taskgraph.ID, len(deps))
	for i, d := range deps {
		ids[i] = d.ID
	}
	b.Queue(`SELECT `+columns+`, `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = ANY($2)
		AND status = 'pending' AND `+readyCondition+` ORDER BY id`, s.graph, int64s(ids)).Query(func(rows pgx.Rows) error {
		var err error
		*out, err = pgx.AppendRows([]taskgraph.Task(nil), rows, func(r pgx.CollectableRow) (taskgraph.Task, error) { return scanView(r) })
		return err
	})
}

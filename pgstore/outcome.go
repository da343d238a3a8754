// The outcomes other than completion: failing and cancelling a task, and
// reopening one that has finished.

package pgstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

// Fail implements taskgraph.Store.
func (s *Store) Fail(ctx context.Context, id taskgraph.ID, owner, reason string) (taskgraph.Task, error) {
	return s.holderWrite(ctx, func() error { return taskgraph.Rules.FailArgs(reason) }, id, func(t *taskgraph.Task, now time.Time) error {
		return taskgraph.Rules.Fail(t, owner, reason, now)
	})
}

// Cancel implements taskgraph.Store.
func (s *Store) Cancel(ctx context.Context, id taskgraph.ID, reason string) (taskgraph.Task, error) {
	return s.holderWrite(ctx, func() error { return taskgraph.Rules.CancelArgs(reason) }, id, func(t *taskgraph.Task, now time.Time) error {
		return taskgraph.Rules.Cancel(t, reason, now)
	})
}

// Reopen implements taskgraph.Store. The dependents are locked with the
// task, as by Complete: none can be claimed while the decision that they
// are not started stands. Reopening a completed task also writes each
// dependent's row, unchanged: a ClaimNext whose snapshot predates this
// transaction's commit, and which reaches a dependent's row only after
// it, still reads the task as completed, but finds the dependent's row
// changed and leaves the claim to the Rulebook's check (unchangedSQL).
// Locking the row is not enough: a claim that finds the row unlocked and
// unchanged re-checks nothing.
func (s *Store) Reopen(ctx context.Context, id taskgraph.ID) (taskgraph.Task, error) {
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Task, error) {
		t, ids, st, _, now, err := s.lockWithDependents(ctx, tx, id, false)
		if err != nil {
			return taskgraph.Task{}, err
		}
		finished := t.Status == taskgraph.Completed
		if err := taskgraph.Rules.Reopen(t, now, ids, st.status); err != nil {
			return taskgraph.Task{}, err
		}
		if finished && len(ids) > 0 {
			// The same values: no new rev (a watcher reports no
			// change), but a new row version.
			if _, err := tx.Exec(ctx, `UPDATE taskgraph_tasks SET blocked_by = blocked_by WHERE graph = $1 AND id = ANY($2)`,
				s.graph, int64s(ids)); err != nil {
				return taskgraph.Task{}, err
			}
		}
		return s.save(ctx, tx, t, updateTask)
	})
}

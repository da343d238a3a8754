// Completing a task, and reporting the dependents the completion readies.

package pgstore

import (
	"context"
	"slices"

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
		t, deps, _, st, now, err := s.lockWithDependents(ctx, tx, id, true)
		if err != nil {
			return taskgraph.Completion{}, err
		}
		if err := taskgraph.Rules.Complete(t, owner, result, now); err != nil {
			return taskgraph.Completion{}, err
		}
		if err := taskgraph.Rules.Blocked(t, st.status); err != nil {
			return taskgraph.Completion{}, err
		}
		if err := stored(t); err != nil {
			return taskgraph.Completion{}, err
		}
		// The task's row, the dependents it readies, the COMMIT and the
		// notification: one round trip. The row is t as the Rulebook left
		// it, and its dependents are deps, locked: reading it back would
		// only repeat t (TestCompleteReturnsTheRow).
		c := taskgraph.Completion{Task: *t}
		c.Task.Blocks = deps
		w := &writes{s: s}
		w.put(updateTask, t)
		s.unblocked(&w.b, id, deps, &c.Unblocked)
		err = s.commit(ctx, tx, &w.b) // before c is read: it fills c in
		return c, err
	})
}

// unblocked queues in b the query that reads into *out, in id order, the
// dependents of task id, just completed (by a statement before it in b),
// that are pending with every blocker completed (unblockedSQL); deps are
// its dependents, locked: none can be added or lose the edge before the
// transaction ends, so the query finds them again by the index on
// blocked_by, as dependentsSQL does.
func (s *Store) unblocked(b *pgx.Batch, id taskgraph.ID, deps []taskgraph.ID, out *[]taskgraph.Task) {
	if len(deps) == 0 {
		return
	}
	b.Queue(unblockedSQL, s.graph, id).Query(func(rows pgx.Rows) error {
		ready, err := pgx.AppendRows([]taskgraph.Task(nil), rows, newViewRow().collect)
		*out = slices.DeleteFunc(ready, func(t taskgraph.Task) bool { return t.Status != taskgraph.Pending })
		return err
	})
}

// unblockedSQL reads the dependents of task $2 of graph $1 whose every
// blocker is completed, in id order, with their blocksOf; those pending
// are the ones unblocked. Their status is not asked here: the plan
// PostgreSQL keeps (genericPlansSQL) would then AND the index on
// blocked_by with the claim index, which holds every pending task.
const unblockedSQL = `SELECT ` + columns + `, ` + blocksOf + ` FROM taskgraph_tasks t WHERE (graph = $1) IS TRUE AND blocked_by @> ARRAY[$2::bigint]
	AND ` + readyCondition + ` ORDER BY id`

// genericPlansSQL makes the statements of a transaction use the plans
// PostgreSQL keeps for them (generic plans). Those of Complete and Reopen
// were planned anew at every call otherwise: a plan made without knowing
// the task estimates it more dependents than one made knowing it, so
// PostgreSQL never settled on the first, and planning unblockedSQL alone
// took a fifth of a millisecond. The kept plans are the ones
// TestDependentsByBlockedByIndex and TestBlockersByPrimaryKey check.
const genericPlansSQL = `SET LOCAL plan_cache_mode = force_generic_plan`

// Completing a task, and reporting the dependents the completion readies.

package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"time"

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
	if owner != "" && set.Evidence == nil && !set.SkipCheck && taskgraph.Rules.CompleteArgs(result) == nil && taskgraph.WriteKeyOf(ctx) == "" {
		// (A keyed write takes the Rulebook's transaction, which records
		// its key with it: queueWriteKey.)
		c, done, err := s.completeHeld(ctx, id, owner, result)
		if done || err != nil {
			return c, err
		}
	}
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Completion, error) {
		t, deps, _, st, now, err := s.lockWithDependents(ctx, tx, id, true)
		if err != nil {
			return taskgraph.Completion{}, err
		}
		if err := taskgraph.Rules.Complete(t, owner, set, now); err != nil {
			return taskgraph.Completion{}, err
		}
		if err := taskgraph.Rules.Blocked(t, st.status, st.early); err != nil {
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
		if lt, ok := tx.(*lazyTx); ok {
			lt.answer = []taskgraph.ID{id} // for its key (commit)
		}
		err = s.commit(ctx, tx, &w.b) // before c is read: it fills c in
		return c, err
	})
}

// completeHeld is Complete of task id by its holder, owner, in one round
// trip: the locks Complete's transaction takes, in its order (the task,
// its dependents, its blockers), then the Rulebook's Complete of a task in
// progress held by owner, whose blockers are all completed and whose
// history has room, written in SQL (completeSQL), then the dependents it
// readies, the COMMIT and the notification. It reports done false, having
// written nothing, if the task is not so (missing, not in progress, held by
// another, blocked, too big, its history full, naming a check): the Rulebook's
// transaction then decides, and says why.
func (s *Store) completeHeld(ctx context.Context, id taskgraph.ID, owner, result string) (c taskgraph.Completion, done bool, err error) {
	// The history entry of the completion, its time the statement's own.
	entry, _ := json.Marshal(taskgraph.Rules.CompleteTransition(owner, result, time.Time{}))
	c, err = transact(ctx, s, func(tx pgx.Tx) (taskgraph.Completion, error) {
		lt, ok := tx.(*lazyTx)
		if !ok {
			return taskgraph.Completion{}, nil // not done: the Rulebook's transaction
		}
		var c taskgraph.Completion
		var deps []taskgraph.ID
		done = false // a retried transaction decides again
		b := &pgx.Batch{}
		b.Queue(lockForGenericPlansSQL, s.graph, id)
		b.Queue(dependentsSQL, s.graph, id).Query(func(rows pgx.Rows) error {
			m, err := scanStatuses(rows)
			deps = slices.Sorted(maps.Keys(m))
			return err
		})
		b.Queue(blockersSQL, s.graph, id) // locked for the check completeSQL makes
		b.Queue(completeSQL, s.graph, owner, id, s.at(), int64(math.MaxInt64), taskgraph.MaxTaskSize, result, string(entry)).QueryRow(func(row pgx.Row) error {
			t, err := scanTask(row, new(bool))
			if errors.Is(err, pgx.ErrNoRows) {
				return nil // not done
			}
			c.Task, done = t, err == nil
			return err
		})
		s.queueUnblocked(b, id, &c.Unblocked)
		err := lt.commitWith(ctx, b, notifyWroteSQL, s.graph)
		c.Task.Blocks = deps
		return c, err
	})
	return c, done, err
}

// lockForGenericPlansSQL locks task $2 of graph $1, as the first lock of
// a write, and has the transaction's later statements use the plans
// PostgreSQL keeps (genericPlansSQL, without a statement of its own: a
// statement is planned when it is bound, after the ones before it in the
// batch have run).
const lockForGenericPlansSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true) FROM taskgraph_tasks WHERE graph = $1 AND id = $2 FOR UPDATE`

// completeSQL is the statement of completeHeld: $1 the graph, $2 the
// owner, $3 the task, $4 the time (see nowSQL), $5 the highest rev, $6
// MaxTaskSize, $7 the result, $8 the completion's history entry
// (Rules.CompleteTransition), to which it sets the time. The result takes
// at most 6 bytes per byte in its field and in the entry's detail, which
// it may end with an ellipsis (fitsSQL). It runs after the task's
// blockers are locked, in a statement of its own: its snapshot sees their
// status as it stays until the transaction ends.
var completeSQL = `UPDATE taskgraph_tasks t SET status = 'completed', result = $7, lease_expires_at = NULL,
		rev = t.rev + 1, updated_at = c.now,
		history = ` + appendHistorySQL(8) + `
	FROM (SELECT ` + nowSQL(4) + ` AS now) c
	WHERE t.graph = $1 AND t.id = $3 AND t.status = 'in_progress' AND t.owner = $2 AND ` + readyCondition + `
		AND t.check_name = '' AND ` + fitsSQL("12 * octet_length($7::text) + 18") + `
	RETURNING ` + qualified("t") + `, ` + wroteSQL

// unblocked queues in b the query that reads into *out the dependents of
// task id that its completion readies (queueUnblocked); deps are its
// dependents, locked: none can be added or lose the edge before the
// transaction ends, so the query finds them again by the index on
// blocked_by, as dependentsSQL does.
func (s *Store) unblocked(b *pgx.Batch, id taskgraph.ID, deps []taskgraph.ID, out *[]taskgraph.Task) {
	if len(deps) == 0 {
		return
	}
	s.queueUnblocked(b, id, out)
}

// queueUnblocked queues in b the query that reads into *out, in id order,
// the dependents of task id, just completed (by a statement before it in
// b), that are pending with every blocker completed (unblockedSQL).
func (s *Store) queueUnblocked(b *pgx.Batch, id taskgraph.ID, out *[]taskgraph.Task) {
	b.Queue(unblockedSQL, s.graph, id).Query(func(rows pgx.Rows) error {
		ready, err := pgx.AppendRows([]taskgraph.Task(nil), rows, newViewRow().collect)
		*out = slices.DeleteFunc(ready, func(t taskgraph.Task) bool { return t.Status != taskgraph.Pending || t.AwaitingApproval() })
		return err
	})
}

// unblockedSQL reads the dependents of task $2 of graph $1 whose every
// blocker is completed, in id order, with their blocksOf; those pending
// are the ones unblocked. Their status is not asked here: the plan
// PostgreSQL keeps (genericPlansSQL) would then AND the index on
// blocked_by with the claim index, which holds every pending task.
var unblockedSQL = `SELECT ` + columns + `, ` + blocksOf + ` FROM taskgraph_tasks t WHERE (graph = $1) IS TRUE AND blocked_by @> ARRAY[$2::bigint]
	AND ` + readyCondition + ` ORDER BY id`

// genericPlansSQL makes the statements of a transaction use the plans
// PostgreSQL keeps for them (generic plans). Those of Complete and Reopen
// were planned anew at every call otherwise: a plan made without knowing
// the task estimates it more dependents than one made knowing it, so
// PostgreSQL never settled on the first, and planning unblockedSQL alone
// took a fifth of a millisecond. The kept plans are the ones
// TestDependentsByBlockedByIndex and TestBlockersByPrimaryKey check.
const genericPlansSQL = `SET LOCAL plan_cache_mode = force_generic_plan`

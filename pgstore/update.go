// Updating a task by a patch: its fields, its status and its edges.

package pgstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

// Update implements taskgraph.Store: lock the task, patch it by the
// Rulebook, edit the other side of the edges it adds or removes, check its
// blockers if it starts or finishes, refuse a cycle, save.
func (s *Store) Update(ctx context.Context, id taskgraph.ID, p taskgraph.Patch) (taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Task{}, err
	}
	if err := taskgraph.Rules.PatchArgs(p); err != nil { // before any SQL
		return taskgraph.Task{}, err
	}
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Task, error) {
		if len(p.AddBlockedBy)+len(p.AddBlocks)+len(p.RemoveBlockedBy)+len(p.RemoveBlocks) > 0 || p.Parent != nil {
			if err := s.serialise(ctx, tx); err != nil {
				return taskgraph.Task{}, err
			}
		}
		t, now, err := s.lock(ctx, tx, id, s.at())
		if err != nil {
			return taskgraph.Task{}, err
		}
		p := taskgraph.Rules.Reparent(t, p) // a copy: a retried transaction starts again from the caller's
		named := [][]taskgraph.ID{p.AddBlockedBy, p.AddBlocks}
		if p.Status != nil { // the blockers to check if it starts or finishes
			named = append(named, t.BlockedBy)
		}
		st, err := s.statuses(ctx, tx, named...)
		if err != nil {
			return taskgraph.Task{}, err
		}
		old := slices.Clone(t.BlockedBy)
		wasHolding := t.Holds(now)
		entering, err := taskgraph.Rules.Patch(t, p, now, st.exists)
		if err != nil {
			return taskgraph.Task{}, err
		}
		others, edits, err := s.reblockOthers(ctx, tx, id, p, now)
		if err != nil {
			return taskgraph.Task{}, err
		}
		// No task begun gains a blocker that is not completed: t, as
		// patched, and the tasks it comes to block, which wait on t as
		// patched (refused once the cycle check passes).
		status := func(b taskgraph.ID) (taskgraph.Status, bool) {
			if b == id {
				return t.Status, true
			}
			return st.status(b)
		}
		refused := taskgraph.Rules.Wait("addBlockedBy", t, p.AddBlockedBy, status)
		for _, o := range others {
			if refused == nil && slices.Contains(p.AddBlocks, o.ID) {
				refused = taskgraph.Rules.Wait("addBlocks", o, []taskgraph.ID{id}, status)
			}
		}
		if entering {
			if err := taskgraph.Rules.Blocked(t, st.status, st.early); err != nil {
				return taskgraph.Task{}, err
			}
		}
		if t.Holds(now) && (!wasHolding || p.Labels != nil) { // entering, or gaining labels
			if err := s.checkLimits(ctx, tx, now, t); err != nil {
				return taskgraph.Task{}, err
			}
		}
		return s.saveChecked(ctx, tx, edit{t: t, old: old}, others, edits, refused)
	})
}

package pgstore

import (
	"context"
	"slices"
	"time"

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
	var out taskgraph.Task
	err := s.begin(ctx, func(tx pgx.Tx) error {
		if len(p.AddBlockedBy)+len(p.AddBlocks)+len(p.RemoveBlockedBy)+len(p.RemoveBlocks) > 0 {
			if err := s.serialise(ctx, tx); err != nil {
				return err
			}
		}
		t, now, err := s.lock(ctx, tx, id, s.at())
		if err != nil {
			return err
		}
		named := [][]taskgraph.ID{p.AddBlockedBy, p.AddBlocks}
		if p.Status != nil { // the blockers to check if it starts or finishes
			named = append(named, t.BlockedBy)
		}
		st, err := s.statuses(ctx, tx, named...)
		if err != nil {
			return err
		}
		old := slices.Clone(t.BlockedBy)
		entering, err := taskgraph.Rules.Patch(t, p, now, st.exists)
		if err != nil {
			return err
		}
		others, edits, err := s.reblockOthers(ctx, tx, id, p, now)
		if err != nil {
			return err
		}
		if entering {
			if err := taskgraph.Rules.Blocked(t, st.status); err != nil {
				return err
			}
		}
		if err := s.checkCycles(ctx, tx, append([]edit{{t: t, old: old}}, edits...)); err != nil {
			return err
		}
		out, err = s.save(ctx, tx, t, updateTask, others...)
		return err
	})
	if err != nil {
		return taskgraph.Task{}, err
	}
	return out, nil
}

// reblockOthers edits the BlockedBy of the tasks that p adds or removes
// task id as a blocker of: one write per other task, in the order p names
// them. A task p.RemoveBlocks names that does not list id is left alone.
func (s *Store) reblockOthers(ctx context.Context, tx pgx.Tx, id taskgraph.ID, p taskgraph.Patch, now time.Time) ([]*taskgraph.Task, []edit, error) {
	if len(p.AddBlocks)+len(p.RemoveBlocks) == 0 {
		return nil, nil, nil
	}
	named := append(slices.Clone(p.AddBlocks), p.RemoveBlocks...)
	locked, _, _, err := s.lockTasks(ctx, tx, nil, `id = ANY($3)`, int64s(named))
	if err != nil {
		return nil, nil, err
	}
	order := slices.Clone(p.AddBlocks) // they exist: the Rulebook checked
	add, remove := map[taskgraph.ID][]taskgraph.ID{}, map[taskgraph.ID][]taskgraph.ID{}
	for _, d := range p.AddBlocks {
		add[d] = []taskgraph.ID{id}
	}
	for _, d := range p.RemoveBlocks {
		if o := locked[d]; o != nil && slices.Contains(o.BlockedBy, id) {
			order = append(order, d)
			remove[d] = []taskgraph.ID{id}
		}
	}
	var others []*taskgraph.Task
	var edits []edit
	for _, d := range order {
		o := locked[d]
		if o == nil {
			continue // named twice: done
		}
		delete(locked, d)
		old := slices.Clone(o.BlockedBy)
		taskgraph.Rules.Reblock(o, now, add[d], remove[d])
		others = append(others, o)
		edits = append(edits, edit{t: o, old: old})
	}
	return others, edits, nil
}

// The other side of a write's edges: the tasks whose BlockedBy a create or
// an update edits, and the cycle check before the write is saved.

package pgstore

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

// reblock adds new ids to the BlockedBy of each task of blocks (which
// exist: the Rulebook checked), once each, in order: the ids in add[d] for
// task d, or id if there are none.
func (s *Store) reblock(ctx context.Context, tx pgx.Tx, blocks []taskgraph.ID, add map[taskgraph.ID][]taskgraph.ID, id taskgraph.ID, now time.Time) ([]*taskgraph.Task, []edit, error) {
	if len(blocks) == 0 {
		return nil, nil, nil
	}
	locked, _, _, err := s.lockTasks(ctx, tx, nil, `id = ANY($3)`, int64s(blocks))
	if err != nil {
		return nil, nil, err
	}
	others, edits := reblockEach(locked, blocks, now, func(d taskgraph.ID) ([]taskgraph.ID, []taskgraph.ID) {
		if ids := add[d]; len(ids) > 0 {
			return ids, nil
		}
		return []taskgraph.ID{id}, nil
	})
	return others, edits, nil
}

// waitNew is Rules.Wait of each task of others, which a write makes wait
// on new tasks (pending): added returns the ids each gains. The first
// refusal, or nil.
func waitNew(others []*taskgraph.Task, added func(d taskgraph.ID) []taskgraph.ID) error {
	pending := func(taskgraph.ID) (taskgraph.Status, bool) { return taskgraph.Pending, true }
	for _, o := range others {
		if err := taskgraph.Rules.Wait("blocks", o, added(o.ID), pending); err != nil {
			return err
		}
	}
	return nil
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
	others, edits := reblockEach(locked, order, now, func(d taskgraph.ID) ([]taskgraph.ID, []taskgraph.ID) {
		return add[d], remove[d]
	})
	return others, edits, nil
}

// reblockEach applies the Rulebook's Reblock to each task of order that is
// in locked, once each (a task named twice is done the first time), with
// the ids change returns to add to its BlockedBy and to remove. It returns
// the tasks changed, in order, and their edits.
func reblockEach(locked map[taskgraph.ID]*taskgraph.Task, order []taskgraph.ID, now time.Time, change func(d taskgraph.ID) (add, remove []taskgraph.ID)) ([]*taskgraph.Task, []edit) {
	var others []*taskgraph.Task
	var edits []edit
	for _, d := range order {
		o := locked[d]
		if o == nil {
			continue // named twice: done
		}
		delete(locked, d)
		old := slices.Clone(o.BlockedBy)
		add, remove := change(d)
		taskgraph.Rules.Reblock(o, now, add, remove)
		others = append(others, o)
		edits = append(edits, edit{t: o, old: old})
	}
	return others, edits
}

// saveChecked refuses a write that changes one task, main, and the BlockedBy
// of others (edits), if one of its new edges closes a cycle, or else with
// refused, if not nil (a refusal the cycle's takes precedence over, as in
// every store); else it saves it (see save) and returns main as stored. A
// fresh main is inserted, any other updated.
func (s *Store) saveChecked(ctx context.Context, tx pgx.Tx, main edit, others []*taskgraph.Task, edits []edit, refused error) (taskgraph.Task, error) {
	if err := s.checkCycles(ctx, tx, append([]edit{main}, edits...)); err != nil {
		return taskgraph.Task{}, err
	}
	if refused != nil {
		return taskgraph.Task{}, refused
	}
	q := updateTask
	if main.fresh {
		q = insertTask
	}
	return s.save(ctx, tx, main.t, q, others...)
}

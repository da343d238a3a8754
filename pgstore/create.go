package pgstore

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph/taskgraph"
)

// Create implements taskgraph.Store.
func (s *Store) Create(ctx context.Context, nt taskgraph.NewTask) (taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Task{}, err
	}
	if err := taskgraph.Rules.CreateArgs(nt); err != nil { // before any SQL
		return taskgraph.Task{}, err
	}
	var out taskgraph.Task
	err := s.begin(ctx, func(tx pgx.Tx) error {
		if len(nt.Blocks) > 0 { // edges into existing tasks: they may close a cycle
			if err := s.serialise(ctx, tx); err != nil {
				return err
			}
		}
		// The id is taken in the transaction: a refused create rolls it
		// back, an accepted one can never be allocated again.
		var next int64
		var now time.Time
		if err := tx.QueryRow(ctx, `UPDATE taskgraph_graphs SET high_water = high_water + 1 WHERE name = $1 RETURNING high_water, `+nowSQL(2),
			s.graph, s.at()).Scan(&next, &now); err != nil {
			return err
		}
		st, err := s.statuses(ctx, tx, nt.BlockedBy, nt.Blocks)
		if err != nil {
			return err
		}
		t, err := taskgraph.Rules.Create(taskgraph.ID(next), nt, now.UTC(), st.exists)
		if err != nil {
			return err
		}
		others, edits, err := s.reblockBlocked(ctx, tx, t, nt.Blocks, now.UTC())
		if err != nil {
			return err
		}
		if err := s.checkCycles(ctx, tx, append([]edit{{t: t, fresh: true}}, edits...)); err != nil {
			return err
		}
		out, err = s.save(ctx, tx, t, insertTask, others...)
		return err
	})
	if err != nil {
		return taskgraph.Task{}, err
	}
	return out, nil
}

// reblockBlocked adds the new task t to the BlockedBy of each task of
// blocks (which exist: the Rulebook checked), once each, in order.
func (s *Store) reblockBlocked(ctx context.Context, tx pgx.Tx, t *taskgraph.Task, blocks []taskgraph.ID, now time.Time) ([]*taskgraph.Task, []edit, error) {
	if len(blocks) == 0 {
		return nil, nil, nil
	}
	locked, _, _, err := s.lockTasks(ctx, tx, nil, `id = ANY($3)`, int64s(blocks))
	if err != nil {
		return nil, nil, err
	}
	var others []*taskgraph.Task
	var edits []edit
	for _, d := range blocks {
		o := locked[d]
		if o == nil {
			continue // named twice: done
		}
		delete(locked, d)
		old := slices.Clone(o.BlockedBy)
		taskgraph.Rules.Reblock(o, now, []taskgraph.ID{t.ID}, nil)
		others = append(others, o)
		edits = append(edits, edit{t: o, old: old})
	}
	return others, edits, nil
}

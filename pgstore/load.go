// Loading whole tasks, ids and all (taskgraph.Loader), in batches.

package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

// Load implements taskgraph.Loader. After a large load it refreshes the
// table's statistics, so that the planner keeps using the indexes.
func (s *Store) Load(ctx context.Context, tasks []taskgraph.Task) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if err := taskgraph.Rules.LoadArgs(tasks); err != nil { // before any SQL
		return err
	}
	if err := s.load(ctx, tasks); err != nil {
		return err
	}
	if len(tasks) >= 1000 {
		err := retry(ctx, func() error { _, err := s.pool.Exec(ctx, `ANALYZE taskgraph_tasks`); return err })
		if err != nil {
			return fmt.Errorf("pgstore: analyze after load: %w", err)
		}
	}
	return nil
}

// loadBatch is how many rows Load sends per round trip.
const loadBatch = 1000

func (s *Store) load(ctx context.Context, tasks []taskgraph.Task) error {
	return s.write(ctx, func(tx pgx.Tx) error {
		if err := s.serialise(ctx, tx); err != nil {
			return err
		}
		var high int64
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT high_water, `+nowSQL(2)+` FROM taskgraph_graphs WHERE name = $1 FOR UPDATE`,
			s.graph, s.at()).Scan(&high, &now); err != nil {
			return err
		}
		st, err := s.statuses(ctx, tx, outside(tasks))
		if err != nil {
			return err
		}
		var named []string
		for _, t := range tasks {
			if t.Key != "" {
				named = append(named, t.Key)
			}
		}
		keys, err := s.keys(ctx, tx, named)
		if err != nil {
			return err
		}
		put, err := taskgraph.Rules.Load(tasks, taskgraph.ID(high), now.UTC(), st.exists, keys.id)
		if err != nil {
			return err
		}
		if err := s.checkLoad(ctx, tx, put); err != nil {
			return err
		}
		var holding []*taskgraph.Task
		for _, t := range put {
			if t.Holds(now) {
				holding = append(holding, t)
			}
		}
		if len(holding) > 0 {
			if err := s.checkLimits(ctx, tx, now.UTC(), holding...); err != nil {
				return err
			}
		}
		if err := stored(put...); err != nil {
			return err
		}
		top, added := taskgraph.ID(high), int64(0)
		for i := 0; i < len(put); i += loadBatch {
			w := &writes{s: s}
			for _, t := range put[i:min(i+loadBatch, len(put))] {
				w.put(insertTask, t)
				top, added = max(top, t.ID), added+backward(t.ID, t.BlockedBy) // as stored: de-duplicated
			}
			if err := w.send(ctx, tx); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, `UPDATE taskgraph_graphs SET high_water = $2, backward_edges = backward_edges + $3 WHERE name = $1`, s.graph, top, added)
		return err
	})
}

// outside returns the blockers that tasks name outside themselves.
func outside(tasks []taskgraph.Task) []taskgraph.ID {
	in := make(map[taskgraph.ID]bool, len(tasks))
	for _, t := range tasks {
		in[t.ID] = true
	}
	var out []taskgraph.ID
	for _, t := range tasks {
		for _, b := range t.BlockedBy {
			if !in[b] {
				out = append(out, b)
			}
		}
	}
	return out
}

// checkLoad refuses a load that closes a cycle. Tasks in the table cannot
// depend on the new ones, so a cycle lies within the batch: the search runs
// only if the batch has one, to name the cycle the in-memory stores name.
func (s *Store) checkLoad(ctx context.Context, tx pgx.Tx, put []*taskgraph.Task) error {
	batch := make([]taskgraph.Task, len(put))
	edits := make([]edit, len(put))
	for i, t := range put {
		batch[i], edits[i] = *t, edit{t: t, fresh: true}
	}
	if taskgraph.FindCycle(batch) == nil {
		return nil
	}
	return s.newOverlay(ctx, tx, edits).firstCycle()
}

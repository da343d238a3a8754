package pgstore

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

// Create implements taskgraph.Store. A create with the key of an existing
// task returns that task; two creates with one key at once both return
// the task one of them made (the unique index on keys refuses the other,
// which is retried and finds it).
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
		refKeys, refIDs := taskgraph.Rules.PlanRefs([]taskgraph.NewTask{nt})
		keys, err := s.keys(ctx, tx, refKeys)
		if err != nil {
			return err
		}
		if id, ok := taskgraph.Rules.Keyed(nt, keys.id); ok {
			views, err := s.views(ctx, tx, []taskgraph.ID{id})
			out = views[id]
			return err
		}
		// The id is taken in the transaction: a refused create rolls it
		// back, an accepted one can never be allocated again.
		first, now, err := s.allocate(ctx, tx, 1)
		if err != nil {
			return err
		}
		st, err := s.statuses(ctx, tx, refIDs)
		if err != nil {
			return err
		}
		t, err := taskgraph.Rules.Create(first, nt, now, st.exists, keys.id)
		if err != nil {
			return err
		}
		others, edits, err := s.reblock(ctx, tx, nt.Blocks, map[taskgraph.ID][]taskgraph.ID{}, t.ID, now)
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

// CreatePlan implements taskgraph.Store: one transaction, the ids of the
// new tasks taken at once, the plan's edges cycle-checked together.
func (s *Store) CreatePlan(ctx context.Context, nts []taskgraph.NewTask) ([]taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if err := taskgraph.Rules.PlanArgs(nts); err != nil { // before any SQL
		return nil, err
	}
	var out []taskgraph.Task
	err := s.begin(ctx, func(tx pgx.Tx) error {
		for _, nt := range nts {
			if len(nt.Blocks) > 0 {
				if err := s.serialise(ctx, tx); err != nil {
					return err
				}
				break
			}
		}
		refKeys, refIDs := taskgraph.Rules.PlanRefs(nts)
		keys, err := s.keys(ctx, tx, refKeys)
		if err != nil {
			return err
		}
		fresh := 0
		for _, nt := range nts {
			if _, ok := keys[nt.Key]; !ok {
				fresh++
			}
		}
		first, now, err := s.allocate(ctx, tx, fresh)
		if err != nil {
			return err
		}
		st, err := s.statuses(ctx, tx, refIDs)
		if err != nil {
			return err
		}
		pl, err := taskgraph.Rules.Plan(nts, first, now, st.exists, keys.id)
		if err != nil {
			return err
		}
		var others []*taskgraph.Task
		var edits []edit
		if len(pl.Blocked) > 0 {
			if others, edits, err = s.reblock(ctx, tx, pl.Blocked, pl.Blockers, 0, now); err != nil {
				return err
			}
		}
		for _, t := range pl.New {
			edits = append(edits, edit{t: t, fresh: true})
		}
		if err := s.checkCycles(ctx, tx, edits); err != nil {
			return err
		}
		if err := stored(append(slices.Clone(pl.New), others...)...); err != nil {
			return err
		}
		w := &writes{s: s}
		for _, t := range pl.New {
			w.put(insertTask, t)
		}
		for _, o := range others {
			w.put(updateTask, o)
		}
		if err := w.send(ctx, tx); err != nil {
			return err
		}
		views, err := s.views(ctx, tx, pl.IDs)
		if err != nil {
			return err
		}
		out = make([]taskgraph.Task, len(pl.IDs))
		for i, id := range pl.IDs {
			out[i] = views[id]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// allocate takes n new ids of the graph and returns the first, with the
// time of the operation. With n 0 it takes none.
func (s *Store) allocate(ctx context.Context, tx pgx.Tx, n int) (taskgraph.ID, time.Time, error) {
	var next int64
	var now time.Time
	err := tx.QueryRow(ctx, `UPDATE taskgraph_graphs SET high_water = high_water + $3 WHERE name = $1 RETURNING high_water - $3 + 1, `+nowSQL(2),
		s.graph, s.at(), int64(n)).Scan(&next, &now)
	return taskgraph.ID(next), now.UTC(), err
}

// keyMap maps keys to the ids of the tasks that have them.
type keyMap map[string]taskgraph.ID

// id is the Rulebook's question "which task has this key?".
func (m keyMap) id(key string) (taskgraph.ID, bool) {
	id, ok := m[key]
	return id, ok
}

// keys returns the tasks that have one of keys, locking them shared so
// that none of them changes or disappears before the transaction ends.
func (s *Store) keys(ctx context.Context, tx pgx.Tx, keys []string) (keyMap, error) {
	out := keyMap{}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT key, id FROM taskgraph_tasks WHERE graph = $1 AND key = ANY($2) AND key <> '' ORDER BY id FOR SHARE`, s.graph, keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var id int64
		if err := rows.Scan(&key, &id); err != nil {
			return nil, err
		}
		out[key] = taskgraph.ID(id)
	}
	return out, rows.Err()
}

// views reads tasks as a Get does, Blocks included, in tx.
func (s *Store) views(ctx context.Context, tx pgx.Tx, list []taskgraph.ID) (map[taskgraph.ID]taskgraph.Task, error) {
	rows, err := tx.Query(ctx, `SELECT `+columns+`, `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = ANY($2)`, s.graph, int64s(list))
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (taskgraph.Task, error) { return scanView(r) })
	out := make(map[taskgraph.ID]taskgraph.Task, len(found))
	for _, t := range found {
		out[t.ID] = t
	}
	return out, err
}

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
	var others []*taskgraph.Task
	var edits []edit
	for _, d := range blocks {
		o := locked[d]
		if o == nil {
			continue // named twice: done
		}
		delete(locked, d)
		old := slices.Clone(o.BlockedBy)
		ids := add[d]
		if len(ids) == 0 {
			ids = []taskgraph.ID{id}
		}
		taskgraph.Rules.Reblock(o, now, ids, nil)
		others = append(others, o)
		edits = append(edits, edit{t: o, old: old})
	}
	return others, edits, nil
}

// Creating tasks, one or a plan at once: the ids they take, the keys that
// make a create idempotent, and the edges they add into existing tasks.

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
	family, err := taskgraph.Rules.Family([]taskgraph.NewTask{nt}) // a parent is an edge
	if err != nil {
		return taskgraph.Task{}, err
	}
	nt = family[0]
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Task, error) {
		keys, refIDs, err := s.refs(ctx, tx, []taskgraph.NewTask{nt})
		if err != nil {
			return taskgraph.Task{}, err
		}
		if id, ok := taskgraph.Rules.Keyed(nt, keys.id); ok {
			views, err := s.views(ctx, tx, []taskgraph.ID{id})
			return views[id], err
		}
		// The id is taken in the transaction: a refused create rolls it
		// back, an accepted one can never be allocated again.
		first, now, st, err := s.allocate(ctx, tx, 1, refIDs)
		if err != nil {
			return taskgraph.Task{}, err
		}
		defaulted, err := s.withDefaults(ctx, tx, []taskgraph.NewTask{nt})
		if err != nil {
			return taskgraph.Task{}, err
		}
		t, err := taskgraph.Rules.Create(first, defaulted[0], now, st.exists, keys.id)
		if err != nil {
			return taskgraph.Task{}, err
		}
		others, edits, err := s.reblock(ctx, tx, nt.Blocks, map[taskgraph.ID][]taskgraph.ID{}, t.ID, now)
		if err != nil {
			return taskgraph.Task{}, err
		}
		refused := waitNew(others, func(taskgraph.ID) []taskgraph.ID { return []taskgraph.ID{t.ID} })
		return s.saveChecked(ctx, tx, edit{t: t, fresh: true}, others, edits, refused)
	})
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
	return transact(ctx, s, func(tx pgx.Tx) ([]taskgraph.Task, error) {
		pl, now, err := s.plan(ctx, tx, nts)
		if err != nil {
			return nil, err
		}
		if err := s.savePlan(ctx, tx, pl, now); err != nil {
			return nil, pl.Named(err)
		}
		views, err := s.views(ctx, tx, pl.IDs)
		if err != nil {
			return nil, err
		}
		out := make([]taskgraph.Task, len(pl.IDs))
		for i, id := range pl.IDs {
			out[i] = views[id]
		}
		return out, nil
	})
}

// plan reads what the Rulebook needs to plan nts, takes the ids of the
// tasks it creates (those whose key no task has), and has it plan them. It
// returns the plan with the time of the operation.
func (s *Store) plan(ctx context.Context, tx pgx.Tx, nts []taskgraph.NewTask) (*taskgraph.Planned, time.Time, error) {
	keys, refIDs, err := s.refs(ctx, tx, nts)
	if err != nil {
		return nil, time.Time{}, err
	}
	fresh := 0
	for _, nt := range nts {
		if _, ok := keys[nt.Key]; !ok {
			fresh++
		}
	}
	first, now, st, err := s.allocate(ctx, tx, fresh, refIDs)
	if err != nil {
		return nil, time.Time{}, err
	}
	if nts, err = s.withDefaults(ctx, tx, nts); err != nil {
		return nil, time.Time{}, err
	}
	pl, err := taskgraph.Rules.Plan(nts, first, now, st.exists, keys.id)
	return pl, now, err
}

// savePlan adds the plan's edges into existing tasks, refuses the plan if
// they close a cycle, and stores it: the new tasks, then the tasks they
// block.
func (s *Store) savePlan(ctx context.Context, tx pgx.Tx, pl *taskgraph.Planned, now time.Time) error {
	others, edits, err := s.reblock(ctx, tx, pl.Blocked, pl.Blockers, 0, now)
	if err != nil {
		return err
	}
	for _, t := range pl.New {
		edits = append(edits, edit{t: t, fresh: true})
	}
	if err := s.checkCycles(ctx, tx, edits); err != nil {
		return err
	}
	if err := waitNew(others, func(d taskgraph.ID) []taskgraph.ID { return pl.Blockers[d] }); err != nil {
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
	return w.send(ctx, tx)
}

// refs takes the graph's lock if one of nts adds edges into existing tasks
// (they may close a cycle), and returns the tasks nts refer to: those with
// the keys they name, locked shared, and the ids they name.
func (s *Store) refs(ctx context.Context, tx pgx.Tx, nts []taskgraph.NewTask) (keyMap, []taskgraph.ID, error) {
	if slices.ContainsFunc(nts, func(nt taskgraph.NewTask) bool { return len(nt.Blocks) > 0 || nt.Parent != 0 || nt.Under != "" }) {
		if err := s.serialise(ctx, tx); err != nil {
			return nil, nil, err
		}
	}
	refKeys, refIDs := taskgraph.Rules.PlanRefs(nts)
	keys, err := s.keys(ctx, tx, refKeys)
	return keys, refIDs, err
}

// allocate takes n new ids of the graph (with n 0, none), then reads the
// status of each existing task of refIDs (statuses): what the Rulebook
// decides a create by. It returns the first new id, the time of the
// operation and the statuses.
func (s *Store) allocate(ctx context.Context, tx pgx.Tx, n int, refIDs []taskgraph.ID) (taskgraph.ID, time.Time, statusMap, error) {
	var next int64
	var now time.Time
	err := tx.QueryRow(ctx, `UPDATE taskgraph_graphs SET high_water = high_water + $3 WHERE name = $1 RETURNING high_water - $3 + 1, `+nowSQL(2),
		s.graph, s.at(), int64(n)).Scan(&next, &now)
	if err != nil {
		return 0, time.Time{}, nil, err
	}
	st, err := s.statuses(ctx, tx, refIDs)
	return taskgraph.ID(next), now.UTC(), st, err
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
	found, err := collectTasks(rows, newViewRow())
	out := make(map[taskgraph.ID]taskgraph.Task, len(found))
	for _, t := range found {
		out[t.ID] = t
	}
	return out, err
}

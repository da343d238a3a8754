// The cycle search over the table, and the count of backward edges by
// which a write may skip it.

package pgstore

import (
	"context"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/graphpath"
)

// The search is the in-memory stores' (an overlay of the write over the
// graph, a two-sided search per new edge, in the same order), run level by
// level against the table, so that every store names the same cycle.

// edit is a task a write stores: its new version, and the BlockedBy of the
// version it replaces (fresh: none; the task is not in the table yet).
type edit struct {
	t     *taskgraph.Task
	old   []taskgraph.ID
	fresh bool
}

// overlay is a write's edits over the table, as the cycle search sees it.
type overlay struct {
	s       *Store
	ctx     context.Context
	tx      pgx.Tx
	tasks   map[taskgraph.ID]*taskgraph.Task // new versions
	fresh   map[taskgraph.ID]bool            // tasks not in the table yet
	addDeps map[taskgraph.ID][]taskgraph.ID  // blocker -> dependents by a new edge, in write order
	rmDeps  map[taskgraph.ID]map[taskgraph.ID]bool
	delta   int64 // change in the count of backward edges
}

func (s *Store) newOverlay(ctx context.Context, tx pgx.Tx, edits []edit) *overlay {
	o := &overlay{s: s, ctx: ctx, tx: tx, tasks: map[taskgraph.ID]*taskgraph.Task{}, fresh: map[taskgraph.ID]bool{},
		addDeps: map[taskgraph.ID][]taskgraph.ID{}, rmDeps: map[taskgraph.ID]map[taskgraph.ID]bool{}}
	for _, e := range edits {
		id := e.t.ID
		for _, b := range e.old {
			if !slices.Contains(e.t.BlockedBy, b) {
				if o.rmDeps[b] == nil {
					o.rmDeps[b] = map[taskgraph.ID]bool{}
				}
				o.rmDeps[b][id] = true
			}
		}
		for _, b := range e.t.BlockedBy {
			if !slices.Contains(e.old, b) {
				o.addDeps[b] = append(o.addDeps[b], id)
			}
		}
		o.tasks[id], o.fresh[id] = e.t, e.fresh
		o.delta += backward(id, e.t.BlockedBy) - backward(id, e.old)
	}
	return o
}

// checkCycles records the change a write makes to the count of backward
// edges, and refuses the write if one of its new edges closes a cycle.
func (s *Store) checkCycles(ctx context.Context, tx pgx.Tx, edits []edit) error {
	o := s.newOverlay(ctx, tx, edits)
	if o.delta == 0 && !o.mayClose() {
		return nil
	}
	before, err := s.addBackward(ctx, tx, o.delta)
	if err != nil {
		return err
	}
	if before == 0 && o.forwardOnly() {
		return nil // ids are a topological order, and stay one
	}
	return o.firstCycle()
}

// mayClose reports whether a new edge may close a cycle: one into a task
// with dependents. A task not yet in the table has none but by new edges.
func (o *overlay) mayClose() bool {
	for _, ds := range o.addDeps {
		for _, d := range ds {
			if !o.fresh[d] || len(o.addDeps[d]) > 0 {
				return true
			}
		}
	}
	return false
}

// forwardOnly reports whether every new edge runs from a lower id to a
// higher one.
func (o *overlay) forwardOnly() bool {
	for b, ds := range o.addDeps {
		for _, d := range ds {
			if b > d {
				return false
			}
		}
	}
	return true
}

// firstCycle returns a *CycleError for the first new edge, by blocker then
// dependent, that closes a cycle, or nil.
func (o *overlay) firstCycle() error {
	for _, b := range slices.Sorted(maps.Keys(o.addDeps)) {
		for _, d := range slices.Sorted(slices.Values(o.addDeps[b])) {
			path, err := o.path(d, b)
			if err != nil {
				return err
			}
			if path != nil {
				return &taskgraph.CycleError{Path: append(path, d)}
			}
		}
	}
	return nil
}

// path returns an execution-order path from -> ... -> to, or nil. It
// searches forward from "from" along dependents and backward from "to"
// along blockers at once, always growing the smaller frontier, one query
// per level.
func (o *overlay) path(from, to taskgraph.ID) ([]taskgraph.ID, error) {
	if from == to {
		return []taskgraph.ID{from}, nil
	}
	fwd := map[taskgraph.ID]taskgraph.ID{from: from} // node -> predecessor on the path from "from"
	bwd := map[taskgraph.ID]taskgraph.ID{to: to}     // node -> successor on the path to "to"
	ff, bf := []taskgraph.ID{from}, []taskgraph.ID{to}
	for len(ff) > 0 && len(bf) > 0 {
		forward := len(ff) <= len(bf)
		frontier, seen, other, step := bf, bwd, fwd, o.blockers
		if forward {
			frontier, seen, other, step = ff, fwd, bwd, o.dependents
		}
		next, err := step(frontier)
		if err != nil {
			return nil, err
		}
		var level []taskgraph.ID
		for _, n := range frontier {
			for _, m := range next[n] {
				if _, ok := seen[m]; ok {
					continue
				}
				seen[m] = n
				if _, ok := other[m]; ok {
					return graphpath.Join(fwd, bwd, from, to, m), nil
				}
				level = append(level, m)
			}
		}
		if forward {
			ff = level
		} else {
			bf = level
		}
	}
	return nil, nil
}

// dependents returns the dependents of each task of frontier: those in the
// table, by id, less the edges the write removes, then those by new edges.
func (o *overlay) dependents(frontier []taskgraph.ID) (map[taskgraph.ID][]taskgraph.ID, error) {
	out := map[taskgraph.ID][]taskgraph.ID{}
	stored := slices.DeleteFunc(slices.Clone(frontier), func(n taskgraph.ID) bool { return o.fresh[n] })
	if len(stored) > 0 {
		rows, err := o.tx.Query(o.ctx, `SELECT id, blocked_by FROM taskgraph_tasks WHERE graph = $1 AND blocked_by && $2 ORDER BY id`, o.s.graph, int64s(stored))
		if err != nil {
			return nil, err
		}
		in := make(map[taskgraph.ID]bool, len(stored))
		for _, n := range stored {
			in[n] = true
		}
		err = scanEdges(rows, func(d taskgraph.ID, by []taskgraph.ID) {
			for _, b := range by {
				if in[b] && !o.rmDeps[b][d] {
					out[b] = append(out[b], d)
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	for _, n := range frontier {
		out[n] = append(out[n], o.addDeps[n]...)
	}
	return out, nil
}

// blockers returns the BlockedBy of each task of frontier, as the write
// leaves it.
func (o *overlay) blockers(frontier []taskgraph.ID) (map[taskgraph.ID][]taskgraph.ID, error) {
	out := map[taskgraph.ID][]taskgraph.ID{}
	var stored []taskgraph.ID
	for _, n := range frontier {
		if t := o.tasks[n]; t != nil {
			out[n] = t.BlockedBy
		} else {
			stored = append(stored, n)
		}
	}
	if len(stored) == 0 {
		return out, nil
	}
	rows, err := o.tx.Query(o.ctx, `SELECT id, blocked_by FROM taskgraph_tasks WHERE graph = $1 AND id = ANY($2)`, o.s.graph, int64s(stored))
	if err != nil {
		return nil, err
	}
	return out, scanEdges(rows, func(id taskgraph.ID, by []taskgraph.ID) { out[id] = by })
}

// scanEdges calls fn with each row of (id, blocked_by).
func scanEdges(rows pgx.Rows, fn func(id taskgraph.ID, by []taskgraph.ID)) error {
	defer rows.Close()
	for rows.Next() {
		var id int64
		var by []int64
		if err := rows.Scan(&id, &by); err != nil {
			return err
		}
		fn(taskgraph.ID(id), ids(by))
	}
	return rows.Err()
}

// backward counts the edges of task id whose blocker has the higher id.
func backward(id taskgraph.ID, blockedBy []taskgraph.ID) int64 {
	n := int64(0)
	for _, b := range blockedBy {
		if b > id {
			n++
		}
	}
	return n
}

// addBackward records a change in the graph's count of backward edges and
// returns the count before it.
func (s *Store) addBackward(ctx context.Context, tx pgx.Tx, delta int64) (int64, error) {
	var before int64
	if delta == 0 {
		err := tx.QueryRow(ctx, `SELECT backward_edges FROM taskgraph_graphs WHERE name = $1`, s.graph).Scan(&before)
		return before, err
	}
	err := tx.QueryRow(ctx, `UPDATE taskgraph_graphs SET backward_edges = backward_edges + $2 WHERE name = $1 RETURNING backward_edges - $2`, s.graph, delta).Scan(&before)
	return before, err
}

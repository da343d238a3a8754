// Deleting a task, and detaching its dependents and children when asked
// to.

package pgstore

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

// Delete implements taskgraph.Store.
func (s *Store) Delete(ctx context.Context, id taskgraph.ID, opts ...taskgraph.DeleteOption) error {
	set, err := taskgraph.Rules.DeleteOptions(opts)
	if err != nil {
		return err
	}
	detach := set.Detach
	return s.write(ctx, func(tx pgx.Tx) error {
		if err := s.serialise(ctx, tx); err != nil {
			return err
		}
		t, now, err := s.lock(ctx, tx, id, s.at())
		if err != nil {
			return err
		}
		// Its dependents and its children (parent <> 0 lets the partial
		// index on parent serve).
		locked, order, _, err := s.lockTasks(ctx, tx, nil, `(blocked_by @> ARRAY[$3::bigint] OR (parent = $3 AND parent <> 0))`, id)
		if err != nil {
			return err
		}
		var deps, children []taskgraph.ID
		for _, d := range order {
			if slices.Contains(locked[d].BlockedBy, id) {
				deps = append(deps, d)
			}
			if locked[d].Parent == id {
				children = append(children, d)
			}
		}
		if err := taskgraph.Rules.Delete(id, deps, children, detach); err != nil {
			return err
		}
		w := &writes{s: s}
		delta := -backward(id, t.BlockedBy)
		for _, d := range order {
			o := locked[d]
			delta -= backward(d, o.BlockedBy)
			taskgraph.Rules.Detach(o, id, now)
			delta += backward(d, o.BlockedBy)
			if err := stored(o); err != nil {
				return err
			}
			w.put(updateTask, o)
		}
		w.b.Queue(deleteTask, s.graph, id)
		if err := w.send(ctx, tx); err != nil {
			return err
		}
		if delta != 0 {
			_, err = s.addBackward(ctx, tx, delta)
		}
		return err
	})
}

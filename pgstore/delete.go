// Deleting a task, and detaching its dependents when asked to.

package pgstore

import (
	"context"

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
		deps, order, _, err := s.lockTasks(ctx, tx, nil, `blocked_by @> ARRAY[$3::bigint]`, id)
		if err != nil {
			return err
		}
		if err := taskgraph.Rules.Delete(id, order, detach); err != nil {
			return err
		}
		w := &writes{s: s}
		delta := -backward(id, t.BlockedBy)
		for _, d := range order {
			o := deps[d]
			delta -= backward(d, o.BlockedBy)
			taskgraph.Rules.Reblock(o, now, nil, []taskgraph.ID{id})
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

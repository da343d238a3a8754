// Watching the graph: LISTEN/NOTIFY turned into taskgraph events.

package pgstore

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
)

// Watch implements taskgraph.Watcher with LISTEN/NOTIFY: every write of a
// pgstore notifies the graph once it has committed (notifySQL), and a
// watcher woken reads the board and reports what changed since the last
// one it read. Notifications that arrive together are coalesced. It
// holds one pool connection until the watch ends: when ctx is done, when
// the store is closed (the last event is then of kind taskgraph.Ended,
// with Err matching taskgraph.ErrClosed), or when the connection or a
// query fails (Ended, with the failure).
func (s *Store) Watch(ctx context.Context) (<-chan taskgraph.Event, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: watch: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN taskgraph`); err != nil {
		unlisten(ctx, conn, s.log)
		return nil, fmt.Errorf("pgstore: watch: %w", err)
	}
	b, err := s.Board(ctx)
	if err != nil {
		unlisten(ctx, conn, s.log)
		return nil, err
	}
	w := &watcher{s: s, conn: conn, out: make(chan taskgraph.Event)}
	w.known, w.ready = index(b)
	now := w.now()
	for _, list := range b.Lists() {
		for _, t := range list.Tasks {
			w.leases.Track(taskgraph.Event{Kind: taskgraph.Updated, Task: t}, now)
		}
	}
	go w.run(ctx)
	return w.out, nil
}

// unlisten stops conn listening, within cleanupTimeout, and returns it to
// the pool; a connection that cannot be made to stop is closed instead,
// so that no other user of the pool inherits the LISTEN.
func unlisten(ctx context.Context, conn *pgxpool.Conn, log *slog.Logger) {
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if _, err := conn.Exec(cctx, `UNLISTEN taskgraph`); err != nil {
		log.Warn("pgstore: watch: the connection did not stop listening; closed it", "err", err)
		conn.Conn().Close(cctx) // the pool drops a closed connection
	}
	conn.Release()
}

// watcher turns the notifications of one LISTEN connection into events.
type watcher struct {
	s      *Store
	conn   *pgxpool.Conn
	out    chan taskgraph.Event
	known  map[taskgraph.ID]taskgraph.Task // the graph as last reported
	ready  map[taskgraph.ID]bool
	leases taskgraph.Leases // leased claims and deferred tasks as last reported, for Lapsed and Undeferred events
}

// now is the clock lapses are reported by: the store's WithClock, else
// this machine's, which is the database's within clock skew.
func (w *watcher) now() time.Time {
	if w.s.clock != nil {
		return w.s.clock()
	}
	return time.Now()
}

// index returns every task of b by id, and the ready ones.
func index(b taskgraph.Board) (map[taskgraph.ID]taskgraph.Task, map[taskgraph.ID]bool) {
	all := map[taskgraph.ID]taskgraph.Task{}
	for _, list := range b.Lists() {
		for _, t := range list.Tasks {
			all[t.ID] = t
		}
	}
	ready := map[taskgraph.ID]bool{}
	for _, t := range b.Ready {
		ready[t.ID] = true
	}
	return all, ready
}

func (w *watcher) run(ctx context.Context) {
	defer close(w.out)
	defer unlisten(ctx, w.conn, w.s.log)
	// wctx ends the wait for notifications when the store closes too.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-w.s.done:
			cancel()
		case <-wctx.Done():
		}
	}()
	err := w.loop(wctx)
	switch {
	case ctx.Err() != nil:
		return // the receiver's context: ctx.Err() says why
	case w.s.closed.Load():
		err = taskgraph.ErrClosed
	default:
		w.s.log.Warn("pgstore: watch stopped", "graph", w.s.graph, "err", err)
	}
	select {
	case w.out <- taskgraph.Event{Kind: taskgraph.Ended, Err: err}:
	case <-ctx.Done():
	}
}

// loop reports changes until ctx is done or something fails, and returns
// why it stopped.
func (w *watcher) loop(ctx context.Context) error {
	for {
		woken, err := w.gather(ctx)
		if err != nil {
			return fmt.Errorf("pgstore: watch: %w", err)
		}
		if woken {
			b, err := w.s.Board(ctx)
			if err != nil {
				return fmt.Errorf("pgstore: watch: %w", err)
			}
			if !w.report(ctx, b) {
				return ctx.Err()
			}
		}
		// After the changes: a renewal just reported is not a lapse.
		for _, e := range w.leases.Lapsed(w.now()) {
			if !w.send(ctx, e.Kind, e.Task) {
				return ctx.Err()
			}
		}
	}
}

// gather waits for a notification, then takes every one already queued,
// and reports whether one was for this graph (false: a lease may have
// lapsed meanwhile).
func (w *watcher) gather(ctx context.Context) (bool, error) {
	wait, cancel := ctx, context.CancelFunc(func() {})
	if d, ok := w.leases.Next(w.now()); ok {
		// Wake for the first lease to lapse: re-armed every few
		// milliseconds at the most (a clock that stands still does not
		// spin it) and at least every second (a clock that jumps).
		wait, cancel = context.WithTimeout(ctx, min(max(d, 5*time.Millisecond), time.Second))
	}
	n, err := w.conn.Conn().WaitForNotification(wait)
	lapse := wait.Err() != nil && ctx.Err() == nil
	cancel()
	if lapse {
		// No notification before the lapse. A timed-out wait leaves the
		// connection usable: pgx waits for notifications without a
		// query in flight.
		return false, nil
	}
	if err != nil {
		return false, err
	}
	woken := false
	for n != nil {
		graph, _, _ := strings.Cut(n.Payload, "\t") // older versions' triggers sent "graph\tid\top"
		woken = woken || graph == w.s.graph
		short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
		n, _ = w.conn.Conn().WaitForNotification(short)
		cancel()
	}
	return woken, nil
}

// send sends one event, keeping the leases current with it, and reports
// whether the receiver is still there.
func (w *watcher) send(ctx context.Context, kind taskgraph.EventKind, t taskgraph.Task) bool {
	e := taskgraph.Event{Kind: kind, Task: t}
	w.leases.Track(e, w.now())
	select {
	case w.out <- e:
		return true
	case <-ctx.Done():
		return false
	}
}

// report sends the events that take the graph from what was last reported
// to b, and reports whether the receiver is still there.
func (w *watcher) report(ctx context.Context, b taskgraph.Board) bool {
	send := func(kind taskgraph.EventKind, t taskgraph.Task) bool { return w.send(ctx, kind, t) }
	now, ready := index(b)
	ids := slices.Collect(maps.Keys(now))
	for id := range w.known {
		if _, ok := now[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		t, exists := now[id]
		old, existed := w.known[id]
		ok := true
		switch {
		case exists && !existed:
			ok = send(taskgraph.Created, t)
		case exists && t.Rev != old.Rev: // every write of a task advances its rev
			ok = send(taskgraph.Updated, t)
		case !exists:
			ok = send(taskgraph.Deleted, old)
		}
		if !ok {
			return false
		}
	}
	for _, t := range b.Ready {
		if !w.ready[t.ID] && !send(taskgraph.Unblocked, t) {
			return false
		}
	}
	w.known, w.ready = now, ready
	return true
}

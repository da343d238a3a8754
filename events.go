// This file turns a change to the graph into Watch events and delivers them
// to each watcher. The cost of a change is proportional to the tasks it
// touched and their dependents, never to the size of the graph.

package taskgraph

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// observe records what a change to the tasks in changed can affect; call it
// with the graph as it is before the change, apply the change, then call the
// returned function for the events. Only a changed task, a dependent of
// one, or a dependent of a completed one of those (which counts as done
// only while its blockers are: Rules.OutOfOrder) can change readiness: a
// task that gains a blocker is itself changed.
func (g *graph) observe(changed []ID) func() []Event {
	type was struct {
		t     *Task
		ready bool
	}
	before := make(map[ID]was, len(changed))
	note := func(id ID) {
		if _, ok := before[id]; !ok {
			before[id] = was{g.tasks[id], g.isReady(id)}
		}
	}
	for _, id := range changed {
		note(id)
		for _, d := range g.dependents[id] {
			note(d)
			if dt := g.tasks[d]; dt != nil && dt.Status == Completed {
				for _, dd := range g.dependents[d] {
					note(dd)
				}
			}
		}
	}
	return func() []Event {
		var evs []Event
		for _, id := range slices.Sorted(maps.Keys(before)) {
			old, now := before[id], g.tasks[id]
			switch {
			case old.t == nil && now != nil:
				evs = append(evs, Event{Kind: Created, Task: g.view(id)})
			case old.t != nil && now == nil:
				evs = append(evs, Event{Kind: Deleted, Task: old.t.clone()})
			case old.t != now:
				evs = append(evs, Event{Kind: Updated, Task: g.view(id)})
			}
			if now != nil && !old.ready && g.isReady(id) {
				evs = append(evs, Event{Kind: Unblocked, Task: g.view(id)})
			}
		}
		return evs
	}
}

// change runs fn, which changes the tasks ids of g, and publishes the
// events of the change to h's watchers. With no watcher it costs nothing.
func (h *hub) change(g *graph, ids []ID, fn func()) {
	if !h.active() {
		fn()
		return
	}
	events := g.observe(ids)
	fn()
	h.publish(events())
}

// changedIDs lists the tasks a plan writes or deletes.
func (p *plan) changedIDs() []ID {
	ids := slices.Clone(p.del)
	for _, t := range p.put {
		ids = append(ids, t.ID)
	}
	return ids
}

// hub delivers the events of one store to its watchers. publish never
// blocks a writer: each watcher queues what it has not yet received,
// coalescing repeated updates of a task.
type hub struct {
	mu   sync.Mutex
	subs map[*watcher]struct{}
}

// active reports whether anyone watches, so that a store skips computing
// events nobody reads.
func (h *hub) active() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs) > 0
}

func (h *hub) publish(evs []Event) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for w := range h.subs {
		w.push(evs)
	}
}

// watch starts a watcher that delivers published events on the returned
// channel until ctx is done, closed is closed (the last event is then
// Ended with ErrClosed) or end is called (Ended with its error). initial is
// the graph as the watcher starts from: its leased claims are tracked so
// that a lapse is reported as it happens. now is the store's clock.
func (h *hub) watch(ctx context.Context, initial []Task, now func() time.Time, closed <-chan struct{}) (events <-chan Event, end func(error)) {
	w := &watcher{wake: make(chan struct{}, 1), endc: make(chan error, 1)}
	start := now()
	for _, t := range initial {
		w.leases.Track(Event{Kind: Updated, Task: t}, start)
	}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[*watcher]struct{}{}
	}
	h.subs[w] = struct{}{}
	h.mu.Unlock()
	end = func(err error) {
		select {
		case w.endc <- err: // the first reason to end is the one reported
		default:
		}
	}
	out := make(chan Event)
	finished := make(chan struct{})
	go func() {
		defer close(out)
		defer close(finished)
		defer func() {
			h.mu.Lock()
			delete(h.subs, w)
			h.mu.Unlock()
		}()
		w.run(ctx, out, now)
	}()
	go func() {
		select {
		case <-closed:
			end(ErrClosed)
		case <-ctx.Done():
		case <-finished:
		}
	}()
	return out, end
}

type watcher struct {
	mu      sync.Mutex
	queue   []Event
	updated map[ID]int // index in queue of the pending Created/Updated event of a task
	wake    chan struct{}
	endc    chan error

	leases Leases // owned by run
}

func (w *watcher) push(evs []Event) {
	w.mu.Lock()
	for _, e := range evs {
		if e.Kind == Created || e.Kind == Updated {
			if i, ok := w.updated[e.Task.ID]; ok {
				w.queue[i].Task = e.Task // coalesce: the latest content, reported once
				continue
			}
			if w.updated == nil {
				w.updated = map[ID]int{}
			}
			w.updated[e.Task.ID] = len(w.queue)
		}
		w.queue = append(w.queue, e)
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *watcher) run(ctx context.Context, out chan<- Event, now func() time.Time) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		w.mu.Lock()
		batch := w.queue
		w.queue, w.updated = nil, nil
		w.mu.Unlock()
		// The queued events first bring the leases up to date (a renewal
		// must not be reported as a lapse), then what has lapsed by now.
		at := now()
		for _, e := range batch {
			w.leases.Track(e, at)
		}
		batch = append(batch, w.leases.Lapsed(at)...)
		for _, e := range batch {
			select {
			case out <- e:
				continue
			case <-ctx.Done():
			case err := <-w.endc:
				ended(ctx, out, err)
			}
			return
		}
		if len(batch) > 0 {
			continue // more may have been queued meanwhile
		}
		timer.Stop()
		var lapse <-chan time.Time
		if d, ok := w.leases.Next(now()); ok {
			// Re-armed every few milliseconds at the most (a clock
			// that stands still, a test's, does not spin it) and at
			// least every second (a clock that jumps is noticed).
			timer.Reset(min(max(d, 5*time.Millisecond), time.Second))
			lapse = timer.C
		}
		select {
		case <-w.wake:
			continue
		case <-lapse:
			continue
		case <-ctx.Done():
		case err := <-w.endc:
			ended(ctx, out, err)
		}
		return
	}
}

// ended sends the last event of a watch that ended for a reason other than
// its context, unless ctx ends first (see Watcher).
func ended(ctx context.Context, out chan<- Event, err error) {
	select {
	case out <- Event{Kind: Ended, Err: err}:
	case <-ctx.Done():
	}
}

// Leases tracks the leased claims and the deferred tasks a watch has
// reported and tells when their time comes, so that a watcher reports a
// Lapsed event when a lease expires and an Undeferred event when a
// deferred task's NotBefore comes — no write happens then. Every store's
// Watch uses it; it is exported for Watcher implementations outside this
// package. The zero value is ready to use; it is not safe for concurrent
// use.
type Leases struct{ leased, deferred map[ID]Task }

// Track brings the set up to date with an event seen at now: an
// in-progress task with a lease is tracked (with its latest lease), a
// pending task whose NotBefore is after now too, and anything else about
// a task stops tracking it. Unblocked and Ended events change nothing
// here except that Lapsed and Undeferred, reported once, are not
// reported again.
func (l *Leases) Track(e Event, now time.Time) {
	t := e.Task
	switch e.Kind {
	case Unblocked, Ended:
		return
	case Lapsed:
		delete(l.leased, t.ID)
		return
	case Undeferred:
		delete(l.deferred, t.ID)
		return
	}
	delete(l.leased, t.ID)
	delete(l.deferred, t.ID)
	switch {
	case e.Kind == Deleted:
	case t.Status == InProgress && !t.LapsesAt().IsZero():
		l.leased = put(l.leased, t)
	case t.Status == Pending && t.NotBefore.After(now):
		l.deferred = put(l.deferred, t)
	}
}

func put(m map[ID]Task, t Task) map[ID]Task {
	if m == nil {
		m = map[ID]Task{}
	}
	m[t.ID] = t
	return m
}

// Lapsed returns, by id, a Lapsed event for each tracked claim whose lease
// has expired at now and an Undeferred event for each tracked deferred
// task whose NotBefore has come, and stops tracking them.
func (l *Leases) Lapsed(now time.Time) []Event {
	var evs []Event
	for id, t := range l.leased {
		if !t.LapsesAt().After(now) {
			evs = append(evs, Event{Kind: Lapsed, Task: t})
			delete(l.leased, id)
		}
	}
	for id, t := range l.deferred {
		if !t.NotBefore.After(now) {
			evs = append(evs, Event{Kind: Undeferred, Task: t})
			delete(l.deferred, id)
		}
	}
	sortEvents(evs)
	return evs
}

// Next returns how long after now the first tracked lease lapses or
// deferred task comes due, and false if nothing is tracked.
func (l *Leases) Next(now time.Time) (time.Duration, bool) {
	var first time.Time
	for _, t := range l.leased {
		if at := t.LapsesAt(); first.IsZero() || at.Before(first) {
			first = at
		}
	}
	for _, t := range l.deferred {
		if first.IsZero() || t.NotBefore.Before(first) {
			first = t.NotBefore
		}
	}
	return first.Sub(now), !first.IsZero()
}

// sortEvents orders events by task id, and for one task as they happen:
// created, updated, unblocked, lapsed, deleted.
func sortEvents(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int {
		if c := cmp.Compare(a.Task.ID, b.Task.ID); c != 0 {
			return c
		}
		return strings.Compare(eventOrder[a.Kind], eventOrder[b.Kind])
	})
}

var eventOrder = map[EventKind]string{Created: "0", Updated: "1", Unblocked: "2", Undeferred: "25", Lapsed: "3", Deleted: "4"}

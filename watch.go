package taskgraph

import (
	"context"
	"errors"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchPollOnly makes Watch poll, to test the fallback.
var watchPollOnly = false

// watchPoll is how often Watch looks at the directory when inotify is not
// available.
const watchPoll = 250 * time.Millisecond

// Watch reports every change to the graph, by this or any other process,
// until ctx is done or the store is closed; then it closes the channel. Event.Task has every field
// but Blocks. It uses inotify (through
// fsnotify) and falls back to polling where that is unavailable. Changes
// that happen while the receiver is busy are coalesced: a task written three
// times may be reported once, with its latest content. An agent that waits
// for work can block on Unblocked events instead of polling.
func (s *FileStore) Watch(ctx context.Context) (<-chan Event, error) {
	type seen struct {
		stamp stamp
		task  Task
		ready bool
	}
	snapshot := func() (map[ID]seen, error) {
		snap := map[ID]seen{}
		err := s.read(ctx, nil, func(g *graph) error {
			for id, t := range g.tasks {
				snap[id] = seen{stamp: s.stamps[id], task: *t, ready: g.isReady(id)}
			}
			return nil
		})
		return snap, err
	}
	prev, err := snapshot()
	if err != nil {
		return nil, err
	}
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	w, werr := fsnotify.NewWatcher()
	if werr == nil && watchPollOnly {
		w.Close()
		werr = errors.New("polling forced")
	}
	if werr == nil {
		if werr = w.Add(s.dir); werr != nil {
			w.Close()
		}
	}
	if werr == nil {
		go func() {
			for {
				select {
				case _, ok := <-w.Events:
					if !ok {
						return
					}
					poke()
				case _, ok := <-w.Errors:
					if !ok {
						return
					}
					poke() // an overflow lost events: look at everything
				}
			}
		}()
	} else {
		go func() {
			tick := time.NewTicker(watchPoll)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-s.done:
					return
				case <-tick.C:
					poke()
				}
			}
		}()
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		if werr == nil {
			defer w.Close()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-s.done:
				return
			case <-wake:
			}
			next, err := snapshot()
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, ErrClosed) {
					return
				}
				continue
			}
			var events []Event
			for id, n := range next {
				p, existed := prev[id]
				switch {
				case !existed:
					events = append(events, Event{Kind: Created, Task: n.task})
				case p.stamp != n.stamp:
					events = append(events, Event{Kind: Updated, Task: n.task})
				}
				if n.ready && (!existed || !p.ready) {
					events = append(events, Event{Kind: Unblocked, Task: n.task})
				}
			}
			for id, p := range prev {
				if _, ok := next[id]; !ok {
					events = append(events, Event{Kind: Deleted, Task: p.task})
				}
			}
			prev = next
			sortEvents(events)
			for _, e := range events {
				e.Task = e.Task.clone()
				select {
				case out <- e:
				case <-ctx.Done():
					return
				case <-s.done:
					return
				}
			}
		}
	}()
	return out, nil
}

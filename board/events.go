// The board's event stream: server-sent events of the graph as it
// changes, bounded in number.

package board

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// heartbeat is how often an idle event stream carries a comment, so that a
// dead connection is noticed and closed.
const heartbeat = 25 * time.Second

var errClosed = errors.New("board: server closed")

// streamsFull is the refusal of an event stream past the limit.
type streamsFull struct{ limit int }

func (e streamsFull) Error() string {
	return fmt.Sprintf("too many live pages: this board already serves its limit of %d event streams at once; "+
		"close board pages or tabs you no longer watch and reload this one, or start the board with a higher limit "+
		"(taskgraph serve --max-streams, board.WithMaxStreams)", e.limit)
}

// retryAfter is the Retry-After, in seconds, of a refused event stream.
const retryAfter = "10"

// subscribe adds a page to the hub and starts watching the store if it is
// the first.
func (h *hub) subscribe() (*subscriber, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, errClosed
	}
	if len(h.subs) >= h.s.cfg.streams {
		return nil, streamsFull{h.s.cfg.streams}
	}
	sub := &subscriber{ch: make(chan []byte, 1)}
	h.subs[sub] = struct{}{}
	if h.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		h.stop = cancel
		go h.loop(ctx)
	}
	return sub, nil
}

// unsubscribe removes a page; the watch stops with the last one.
func (h *hub) unsubscribe(sub *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, sub)
	if len(h.subs) == 0 && h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// changed tells the hub that this board wrote to the store.
func (h *hub) changed() {
	select {
	case h.poke <- struct{}{}:
	default:
	}
}

func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	close(h.done)
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// loop watches the store until ctx ends and broadcasts a snapshot after
// each change, never two within the interval: events that arrive in
// between mark the graph dirty and are answered by one snapshot when the
// interval has passed.
func (h *hub) loop(ctx context.Context) {
	var events <-chan taskgraph.Event
	if w, ok := h.s.store.(taskgraph.Watcher); ok {
		ch, err := w.Watch(ctx)
		if err != nil {
			msg := "changes by other processes are not shown live: " + err.Error()
			h.s.watchProblem.Store(&msg)
		} else {
			h.s.watchProblem.Store(nil)
			events = ch
		}
	}
	// A change between a page's first snapshot and the start of the watch
	// raises no event: send a snapshot now that the watch has begun.
	h.changed()
	var (
		last   time.Time
		dirty  bool
		timer  *time.Timer
		timerC <-chan time.Time
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				events = nil // the store was closed: only our own writes remain
				continue
			}
			dirty = true
		case <-h.poke:
			dirty = true
		case <-timerC:
			timerC = nil
		}
		if !dirty || timerC != nil {
			continue
		}
		if wait := h.s.cfg.interval - time.Since(last); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			timerC = timer.C
			continue
		}
		dirty = false
		data, err := h.s.snapshotJSON(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			data = errorEvent(err)
		}
		h.broadcast(data)
		last = time.Now() // the interval runs from a send to the next
	}
}

// broadcast hands data to every page, replacing a snapshot a slow page has
// not taken yet: a page only ever needs the latest.
func (h *hub) broadcast(data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for sub := range h.subs {
		select {
		case <-sub.ch:
		default:
		}
		sub.ch <- data
	}
}

// handleEvents streams snapshots as Server-Sent Events: one at once, then
// one after each change.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	sub, err := s.hub.subscribe()
	if err != nil {
		if errors.As(err, new(streamsFull)) {
			w.Header().Set("Retry-After", retryAfter)
		}
		httpError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	defer s.hub.unsubscribe(sub)
	// Subscribed first, then the first snapshot: a change in between is
	// not lost, it is sent again.
	first, err := s.snapshotJSON(r.Context())
	if err != nil {
		first = errorEvent(err)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(data []byte) bool {
		if _, err := w.Write(data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(first) {
		return
	}
	ping := time.NewTicker(heartbeat)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.done:
			return
		case data := <-sub.ch:
			if !send(data) {
				return
			}
		case <-ping.C:
			if !send([]byte(": ping\n\n")) {
				return
			}
		}
	}
}

// The board's event stream: server-sent events of the graph as it
// changes, bounded in number.

package board

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
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

// recentChanges and recentBytes bound the changes kept for pages that
// fell behind: one further behind is sent a whole snapshot.
const (
	recentChanges = 64
	recentBytes   = 16 << 20
)

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
	sub := &subscriber{wake: make(chan struct{}, 1)}
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
	h.anew.Store(true)
	h.stale.Store(true)
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

// current returns the latest state, first computing a new one if the store
// may have changed since: always when no watch runs, which would say.
func (h *hub) current(ctx context.Context) (*state, error) {
	if st := h.cur.Load(); st != nil && h.watching.Load() && !h.stale.Load() {
		return st, nil
	}
	return h.refresh(ctx)
}

// refresh brings the state up to date, unless another caller just did,
// and tells the pages what changed. Computations are one at a time, so
// pages and requests that ask together share one. The watch's events are
// applied to the state before (state.next), which costs what they touch;
// the state is made anew from the store when there is none yet, when an
// event reaches further than next can tell, after a write through this
// board (which a page wants to see at once, before its event), and when
// the store has label limits (which move tasks in and out of Limited by
// claim order, across the graph).
func (h *hub) refresh(ctx context.Context) (*state, error) {
	h.compute.Lock()
	defer h.compute.Unlock()
	old := h.cur.Load()
	if old != nil && h.watching.Load() && !h.stale.Load() {
		return old, nil
	}
	h.stale.Store(false) // a change from now on makes it stale again
	events, anew := h.take()
	var (
		st      *state
		changed []*entry
		removed []taskgraph.ID
	)
	if old != nil && !anew && len(events) > 0 && !h.limited(ctx) {
		st, changed = old.next(events, time.Now().UTC())
	}
	if st == nil {
		var err error
		st, err = h.s.newState(ctx)
		h.builds.Add(1)
		if err != nil {
			h.stale.Store(true)
			h.anew.Store(true)
			h.fail(err)
			return nil, err
		}
		if old != nil {
			changed, removed = st.diff(old)
		}
	} else {
		h.nexts.Add(1)
	}
	var data []byte
	if old != nil {
		st.version = old.version + 1
		data = st.changeJSON(old, changed, removed)
		if data == nil {
			return old, nil // nothing the page shows changed
		}
	} else {
		st.version = 1
	}
	h.publish(st, data)
	return st, nil
}

// queue keeps a watch's event for the next refresh.
func (h *hub) queue(ev taskgraph.Event) {
	h.evmu.Lock()
	h.events = append(h.events, ev)
	h.evmu.Unlock()
	h.stale.Store(true)
}

// take returns the events queued since the last refresh, and whether the
// state must be made anew from the store instead.
func (h *hub) take() ([]taskgraph.Event, bool) {
	h.evmu.Lock()
	events := h.events
	h.events = nil
	h.evmu.Unlock()
	return events, h.anew.Swap(false)
}

// limited reports whether the store has label limits, or cannot say.
func (h *hub) limited(ctx context.Context) bool {
	l, ok := h.s.store.(taskgraph.Limiter)
	if !ok {
		return false
	}
	limits, err := l.Limits(ctx)
	return err != nil || len(limits) > 0
}

// publish makes st the current state and wakes every page.
func (h *hub) publish(st *state, data []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur.Store(st)
	h.failure = nil
	if data != nil {
		h.recent = append(h.recent, change{st.version, h.s.frame("change", st.version, data)})
		size := 0
		for _, c := range h.recent {
			size += len(c.data)
		}
		for len(h.recent) > recentChanges || len(h.recent) > 1 && size > recentBytes {
			size -= len(h.recent[0].data)
			h.recent = slices.Delete(h.recent, 0, 1)
		}
	} else {
		h.recent = nil // a new beginning: no page can follow from before
	}
	h.wakeAll()
}

// fail tells every page that the store could not be read.
func (h *hub) fail(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failure = errorEvent(err)
	h.failures++
	h.s.cfg.log.Warn("taskgraph board: the store cannot be read for the pages", "err", err, "failures", h.failures)
	h.wakeAll()
}

func (h *hub) wakeAll() {
	for sub := range h.subs {
		select {
		case sub.wake <- struct{}{}:
		default:
		}
	}
}

// since returns the framed changes that take a page from version v to
// the current state, or false if they are not all kept.
func (h *hub) since(v, to int64) ([][]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out [][]byte
	for _, c := range h.recent {
		if c.version > v && c.version <= to {
			out = append(out, c.data)
		}
	}
	return out, int64(len(out)) == to-v
}

// frame makes data a Server-Sent Event with an id that names this server
// and the version.
func (s *Server) frame(event string, version int64, data []byte) []byte {
	out := make([]byte, 0, len(data)+64)
	out = append(out, "id: "...)
	out = append(out, s.eventID(version)...)
	out = append(out, "\nevent: "...)
	out = append(out, event...)
	out = append(out, "\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

func (s *Server) eventID(version int64) string {
	return s.epoch + "." + strconv.FormatInt(version, 10)
}

// lastVersion reads the version a reconnecting page saw last from its
// Last-Event-ID, or 0 if it names none of this server's.
func (s *Server) lastVersion(r *http.Request) int64 {
	epoch, v, ok := strings.Cut(r.Header.Get("Last-Event-ID"), ".")
	if !ok || epoch != s.epoch {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// loop watches the store until ctx ends and brings the state up to date
// after each change, never twice within the interval: events that arrive
// in between mark the state stale and are answered by one computation
// when the interval has passed.
func (h *hub) loop(ctx context.Context) {
	var events <-chan taskgraph.Event
	if w, ok := h.s.store.(taskgraph.Watcher); ok {
		ch, err := w.Watch(ctx)
		if err != nil {
			msg := "changes by other processes are not shown live: " + err.Error()
			h.s.watchProblem.Store(&msg)
			h.s.cfg.log.Warn("taskgraph board: "+msg, "err", err)
		} else {
			h.s.watchProblem.Store(nil)
			events = ch
			h.watching.Store(true)
			defer h.watching.Store(false)
		}
	}
	// A change between a page's first snapshot and the start of the watch
	// raises no event: look again now that the watch has begun.
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
		case ev, ok := <-events:
			if !ok {
				events = nil // the store was closed: only our own writes remain
				h.watching.Store(false)
				h.anew.Store(true)
				h.stale.Store(true)
				continue
			}
			h.queue(ev)
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
		if _, err := h.refresh(ctx); err != nil && ctx.Err() != nil {
			return
		}
		last = time.Now() // the interval runs from a computation to the next
	}
}

// handleEvents streams the board as Server-Sent Events: a "snapshot" at
// once, then a "change" after each change. A page that reconnects with
// the Last-Event-ID of a version this server still has the changes since
// is sent those; a page further behind, or new, a whole snapshot.
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
	// Subscribed first, then the state: a change in between is not lost.
	if _, err := s.hub.current(r.Context()); err != nil && r.Context().Err() != nil {
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(parts ...[]byte) bool {
		for _, p := range parts {
			if _, err := w.Write(p); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	last := s.lastVersion(r) // the version the page shows
	var failures int64
	catchUp := func() bool {
		s.hub.mu.Lock()
		failure, n := s.hub.failure, s.hub.failures
		s.hub.mu.Unlock()
		if failure != nil && n != failures {
			failures = n
			return send(failure)
		}
		st := s.hub.cur.Load()
		if st == nil || st.version == last {
			return true
		}
		if last != 0 && last < st.version {
			if chain, ok := s.hub.since(last, st.version); ok {
				last = st.version
				return send(chain...)
			}
		}
		last = st.version
		head := fmt.Appendf(nil, "id: %s\nevent: snapshot\ndata: ", s.eventID(st.version))
		return send(slices.Concat([][]byte{head}, st.fullJSON(s), [][]byte{[]byte("\n\n")})...)
	}
	if !catchUp() {
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
		case <-sub.wake:
			if !catchUp() {
				return
			}
		case <-ping.C:
			if !send([]byte(": ping\n\n")) {
				return
			}
		}
	}
}

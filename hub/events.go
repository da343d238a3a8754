// Watch over HTTP: the store's events as a server-sent event stream that
// a client resumes after a reconnect from the last event it saw.

package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// EventWindow is how many of the latest events a hub keeps of each
// session for its client to reconnect: one that missed more is told to
// re-read (a resync).
const EventWindow = 4096

// heartbeat is how often a quiet stream sends a comment, so that proxies
// and the client see it alive.
const heartbeat = 15 * time.Second

// WireEvent is an event on the stream (data of an SSE event "event"):
// tg.Event with its error as an ErrorBody.
type WireEvent struct {
	Kind  tg.EventKind
	Task  tg.Task
	Error *ErrorBody `json:",omitempty"`
}

// sessionGrace is how long a stream's session outlives its connection,
// watching on, so that the client that reconnects within it resumes
// where it was.
const sessionGrace = time.Minute

// session is one client's watch of the store: a store watch of its own,
// from the moment the client subscribed (so that it reports exactly the
// changes after, as a local Watch does), and the last EventWindow events,
// numbered, to send and, after a reconnect, resend.
type session struct {
	id string // random: a restarted hub knows none of its predecessor's

	mu       sync.Mutex
	events   []WireEvent // events first .. next-1
	first    uint64
	next     uint64
	wake     chan struct{} // closed when an event comes or the session ends
	attached int           // streams reading it now
	detached time.Time     // when the last stream left
	done     bool          // the watch ended (its last event is in events) or the hub closed
	stop     context.CancelFunc
}

// sessions are a hub's sessions, by id.
type sessions struct {
	store  Store
	mu     sync.Mutex
	m      map[string]*session
	closed bool
}

func newSessions(store Store) *sessions { return &sessions{store: store, m: map[string]*session{}} }

// open starts a new session: its watch runs from the return on.
func (ss *sessions) open() (*session, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return nil, fmt.Errorf("hub: shutting down: %w", tg.ErrClosed)
	}
	if len(ss.m) >= MaxSessions {
		return nil, fmt.Errorf("%w: this hub keeps at most %d; try again later", ErrBusy, MaxSessions)
	}
	ctx, stop := context.WithCancel(context.Background())
	ch, err := ss.store.Watch(ctx)
	if err != nil {
		stop()
		return nil, err
	}
	se := &session{id: randomID(), first: 1, next: 1, wake: make(chan struct{}), stop: stop}
	ss.m[se.id] = se
	go se.run(ch)
	return se, nil
}

// find returns the session id names, if this hub has it.
func (ss *sessions) find(id string) *session {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.m[id]
}

// attach and detach count the streams reading se; a session without
// one for sessionGrace ends.
func (ss *sessions) attach(se *session) {
	se.mu.Lock()
	se.attached++
	se.mu.Unlock()
}

func (ss *sessions) detach(se *session) {
	se.mu.Lock()
	se.attached--
	se.detached = time.Now()
	idle := se.attached == 0
	se.mu.Unlock()
	if idle {
		time.AfterFunc(sessionGrace, func() { ss.expire(se) })
	}
}

// expire ends se if no stream came back for it within sessionGrace.
func (ss *sessions) expire(se *session) {
	se.mu.Lock()
	idle := se.attached == 0 && time.Since(se.detached) >= sessionGrace
	se.mu.Unlock()
	if idle {
		ss.end(se)
	}
}

// end stops se's watch and forgets it.
func (ss *sessions) end(se *session) {
	ss.mu.Lock()
	delete(ss.m, se.id)
	ss.mu.Unlock()
	se.stop()
	se.mu.Lock()
	if !se.done {
		se.done = true
		close(se.wake)
	}
	se.mu.Unlock()
}

// close ends every session, and refuses new ones.
func (ss *sessions) close() {
	ss.mu.Lock()
	ss.closed = true
	all := make([]*session, 0, len(ss.m))
	for _, se := range ss.m {
		all = append(all, se)
	}
	ss.mu.Unlock()
	for _, se := range all {
		ss.end(se)
	}
}

// run appends the watch's events until it ends.
func (se *session) run(ch <-chan tg.Event) {
	for e := range ch {
		we := WireEvent{Kind: e.Kind, Task: e.Task}
		if e.Err != nil {
			_, b := errorBody(e.Err)
			we.Error = &b
		}
		se.mu.Lock()
		se.events = append(se.events, we)
		se.next++
		if len(se.events) > EventWindow {
			drop := len(se.events) - EventWindow
			se.events = append([]WireEvent(nil), se.events[drop:]...)
			se.first += uint64(drop)
		}
		if !se.done { // once ended, wake stays closed
			close(se.wake)
			se.wake = make(chan struct{})
		}
		se.mu.Unlock()
	}
}

// since returns the events from seq on, the seq after them, whether seq
// was still in the window (false: the stream must re-read), the channel
// that says more came, and whether the session ended.
func (se *session) since(seq uint64) ([]WireEvent, uint64, bool, <-chan struct{}, bool) {
	se.mu.Lock()
	defer se.mu.Unlock()
	if seq < se.first || seq > se.next {
		return nil, se.next, false, se.wake, se.done
	}
	return se.events[seq-se.first:], se.next, true, se.wake, se.done
}

// eventID is the SSE id of the event seq of se.
func (se *session) eventID(seq uint64) string { return se.id + "-" + strconv.FormatUint(seq, 10) }

// resume returns the session and the seq after the event id last names,
// if this hub has that session.
func (ss *sessions) resume(last string) (*session, uint64, bool) {
	i := strings.LastIndexByte(last, '-') // a session id may hold '-' itself
	if i < 0 {
		return nil, 0, false
	}
	id, n := last[:i], last[i+1:]
	seq, err := strconv.ParseUint(n, 10, 64)
	se := ss.find(id)
	if err != nil || se == nil {
		return nil, 0, false
	}
	return se, seq + 1, true
}

// handleEvents serves GET /v1/events: first an event "ready" whose id is
// where the stream starts, then each change as an event "event" (data: a
// WireEvent), and, where the hub cannot resume a reconnected stream from
// its Last-Event-ID (the hub restarted, or the client missed more than
// EventWindow events), an event "resync": re-read what you need. A
// watch that ends sends its last event, of kind ended, and the stream
// closes.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	who, err := s.identify(w, r)
	if err == nil {
		err = who.may(read)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, fmt.Errorf("hub: this server cannot stream"))
		return
	}
	last := r.Header.Get("Last-Event-ID")
	se, from, resumed := s.sessions.resume(last)
	resync := last != "" && !resumed
	if !resumed {
		if se, err = s.sessions.open(); err != nil {
			if errors.Is(err, ErrBusy) {
				w.Header().Set("Retry-After", "5")
			}
			writeError(w, err)
			return
		}
		from = 1
	}
	s.sessions.attach(se)
	defer s.sessions.detach(se)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no") // nginx: pass each event on at once
	w.WriteHeader(http.StatusOK)
	send := func(event string, seq uint64, data any) bool {
		b, err := json.Marshal(data)
		if err != nil {
			return false
		}
		_, err = fmt.Fprintf(w, "event: %s\nid: %s\ndata: %s\n\n", event, se.eventID(seq), b)
		return err == nil
	}
	if resync && !send("resync", from-1, struct{}{}) {
		return
	}
	if !send("ready", from-1, struct{}{}) {
		return
	}
	fl.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		events, next, in, wake, ended := se.since(from)
		if !in {
			if !send("resync", next-1, struct{}{}) {
				return
			}
			from = next
			continue
		}
		for i, e := range events {
			if !send("event", from+uint64(i), e) {
				return
			}
			if e.Kind == tg.Ended {
				fl.Flush()
				s.sessions.end(se)
				return
			}
		}
		from = next
		fl.Flush()
		if ended {
			return // the hub closed
		}
		select {
		case <-wake:
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// The client's Watch: the hub's event stream, resumed after a reconnect.

package hub

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// reconnectWaits are the pauses between attempts to reconnect a broken
// stream; the last repeats until the watch ends.
var reconnectWaits = []time.Duration{50 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}

// Watch implements tg.Watcher over the hub's event stream. A stream that
// breaks is reconnected and resumed from the last event seen. Where the
// hub cannot resume it (it restarted, or more than EventWindow events
// went by), the client re-reads the graph by itself and reports every
// task as Updated, and each task it had seen that is gone as Deleted
// (with only its ID): the events in between are not known, the state
// is. The watch ends, with an Ended event, when the client is closed
// (ErrClosed), or when the hub ends it or refuses to go on (the store
// closed, the token revoked); a hub that cannot be reached is retried
// until ctx is done.
func (c *Client) Watch(ctx context.Context) (<-chan tg.Event, error) {
	if c.closed.Load() {
		return nil, tg.ErrClosed
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &watch{c: c, ctx: wctx, out: make(chan tg.Event, 64), known: map[tg.ID]bool{}}
	body, err := w.connect()
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		select {
		case <-c.done:
			cancel() // the client closed: end the stream
		case <-wctx.Done():
		}
	}()
	go func() {
		defer cancel()
		defer close(w.out)
		w.run(body)
	}()
	return w.out, nil
}

// watch is one Watch of a client.
type watch struct {
	c     *Client
	ctx   context.Context
	out   chan tg.Event
	last  string         // the id of the last event seen
	known map[tg.ID]bool // the tasks seen, for a resync's deletions
}

// connect opens the stream, from the last event seen if any, and reads
// up to its "ready" event (handling a resync before it). An error is the
// hub's refusal, or the failure to reach it.
func (w *watch) connect() (*sseReader, error) {
	u := *w.c.base
	u.Path += "/v1/events"
	req, err := http.NewRequestWithContext(w.ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.c.token)
	req.Header.Set("Accept", "text/event-stream")
	if w.last != "" {
		req.Header.Set("Last-Event-ID", w.last)
	}
	resp, err := w.c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var eb ErrorBody
		if json.Unmarshal(data, &eb) != nil || eb.Error == "" {
			return nil, fmt.Errorf("hub: GET /v1/events: %s", resp.Status)
		}
		return nil, refusal{decodeError(eb)}
	}
	r := &sseReader{body: resp.Body, rd: bufio.NewReader(resp.Body)}
	for {
		ev, err := r.next()
		if err != nil {
			r.body.Close()
			return nil, fmt.Errorf("hub: the event stream broke before it began: %w", err)
		}
		w.last = ev.id
		switch ev.name {
		case "ready":
			return r, nil
		case "resync":
			if err := w.resync(); err != nil {
				r.body.Close()
				return nil, err
			}
		}
	}
}

// refusal is the hub's answer that it will not stream: final, unlike a
// failure to reach it.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }
func (r refusal) Unwrap() error { return r.err }

// run passes the stream's events on, reconnecting when it breaks, until
// the watch ends.
func (w *watch) run(r *sseReader) {
	for {
		err := w.pass(r)
		r.body.Close()
		if err == nil {
			return // ended, or ctx done
		}
		r = w.reconnect()
		if r == nil {
			return
		}
	}
}

// pass sends r's events on until the stream breaks (the error) or the
// watch ends (nil).
func (w *watch) pass(r *sseReader) error {
	for {
		ev, err := r.next()
		if err != nil {
			if w.ctx.Err() != nil {
				w.endIfClosed()
				return nil
			}
			return err
		}
		w.last = ev.id
		switch ev.name {
		case "resync":
			if err := w.resync(); err != nil {
				return err
			}
		case "event":
			var we WireEvent
			if err := json.Unmarshal([]byte(ev.data), &we); err != nil {
				return fmt.Errorf("hub: an event that is not the JSON expected: %w", err)
			}
			e := tg.Event{Kind: we.Kind, Task: we.Task}
			if we.Error != nil {
				e.Err = decodeError(*we.Error)
			}
			if !w.send(e) || e.Kind == tg.Ended {
				return nil
			}
		}
	}
}

// reconnect opens the stream again, waiting between attempts, and
// returns it, or nil when the watch ended meanwhile.
func (w *watch) reconnect() *sseReader {
	for i := 0; ; i++ {
		select {
		case <-w.ctx.Done():
			w.endIfClosed()
			return nil
		case <-time.After(reconnectWaits[min(i, len(reconnectWaits)-1)]):
		}
		r, err := w.connect()
		if err == nil {
			return r
		}
		if ref, final := err.(refusal); final && !errors.Is(err, ErrBusy) && !errors.Is(err, ErrRateLimited) {
			w.send(tg.Event{Kind: tg.Ended, Err: ref.err})
			return nil
		}
	}
}

// resync re-reads the graph after a gap the hub could not fill.
func (w *watch) resync() error {
	ts, err := w.c.List(w.ctx)
	if err != nil {
		return err
	}
	now := make(map[tg.ID]bool, len(ts))
	for _, t := range ts {
		now[t.ID] = true
		if !w.send(tg.Event{Kind: tg.Updated, Task: t}) {
			return nil
		}
	}
	for id := range w.known {
		if !now[id] && !w.send(tg.Event{Kind: tg.Deleted, Task: tg.Task{ID: id}}) {
			return nil
		}
	}
	return nil
}

// send passes e on and reports whether the watch goes on.
func (w *watch) send(e tg.Event) bool {
	switch e.Kind {
	case tg.Deleted:
		delete(w.known, e.Task.ID)
	case tg.Ended:
	default:
		w.known[e.Task.ID] = true
	}
	select {
	case w.out <- e:
		return true
	case <-w.ctx.Done():
		w.endIfClosed()
		return false
	}
}

// endIfClosed sends the Ended event of a watch that ends because the
// client closed (not its ctx).
func (w *watch) endIfClosed() {
	if w.c.closed.Load() {
		select {
		case w.out <- tg.Event{Kind: tg.Ended, Err: tg.ErrClosed}:
		case <-time.After(time.Second): // a reader that stopped reading
		}
	}
}

// sseEvent is one server-sent event.
type sseEvent struct{ name, id, data string }

// sseReader reads server-sent events.
type sseReader struct {
	body io.ReadCloser
	rd   *bufio.Reader
}

// next returns the next event, skipping comments.
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	for {
		line, err := r.rd.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		if line == "" {
			if ev.name != "" || ev.data != "" {
				return ev, nil
			}
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.name = value
		case "id":
			ev.id = value
		case "data":
			ev.data += value
		}
	}
}

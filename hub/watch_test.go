package hub_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

// Changes made to the store behind the hub — by another process, as it
// were — reach a client's Watch as events, in order.
func TestWatchMemStore(t *testing.T) {
	mem := tg.NewMemStore()
	taskgraphtest.Watch(t, serve(t, mem), mem)
}

func TestWatchFileStore(t *testing.T) {
	dir := t.TempDir()
	s, err := tg.Open(dir)
	require.NoError(t, err)
	other, err := tg.Open(dir) // another store on the directory: another process
	require.NoError(t, err)
	defer other.Close()
	taskgraphtest.Watch(t, serve(t, s), other)
}

func TestWatchPostgres(t *testing.T) {
	pg := openPG(t, pool(t))
	taskgraphtest.Watch(t, serve(t, pg), pg)
}

// swappable serves whichever hub it holds: a test restarts the hub by
// swapping in a new one.
type swappable struct {
	mu sync.Mutex
	h  http.Handler
}

func (s *swappable) set(h http.Handler) { s.mu.Lock(); s.h = h; s.mu.Unlock() }
func (s *swappable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	h := s.h
	s.mu.Unlock()
	h.ServeHTTP(w, r)
}

// expectEvents reads want (kind and id each) from events, in order.
func expectEvents(t *testing.T, events <-chan tg.Event, want ...string) {
	t.Helper()
	for _, w := range want {
		select {
		case e := <-events:
			require.Equal(t, w, fmt.Sprint(e.Kind, " ", e.Task.ID), "%v", e.Err)
		case <-time.After(10 * time.Second):
			t.Fatalf("no event; wanted %s", w)
		}
	}
}

// A stream that breaks is resumed from the last event the client saw:
// the events written while it was down arrive once each, in order, with
// no re-read.
func TestWatchResumesAfterABrokenStream(t *testing.T) {
	mem := tg.NewMemStore()
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Viewer)
	require.NoError(t, err)
	api := hub.NewServer(mem, tokens)
	defer api.Close()
	ts := httptest.NewServer(api)
	defer ts.Close()
	c, err := hub.NewClient(ts.URL, tok)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := c.Watch(wctx)
	require.NoError(t, err)

	a, err := mem.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	expectEvents(t, events, fmt.Sprint("created ", a.ID), fmt.Sprint("unblocked ", a.ID))
	ts.CloseClientConnections() // the network drops the stream
	b, err := mem.Create(ctx, tg.NewTask{Subject: "b", BlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err)
	_, err = mem.Claim(ctx, a.ID, "x")
	require.NoError(t, err)
	expectEvents(t, events, fmt.Sprint("created ", b.ID), fmt.Sprint("updated ", a.ID))
	select {
	case e := <-events:
		t.Fatalf("an event more than the changes: %v %d", e.Kind, e.Task.ID)
	case <-time.After(200 * time.Millisecond):
	}
}

// A hub that restarted cannot resume a stream: it says so, and the
// client re-reads by itself — every task as Updated, and a task it had
// seen that is gone as Deleted — then follows the new hub's events.
func TestWatchResyncsAfterAHubRestart(t *testing.T) {
	mem := tg.NewMemStore()
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Viewer)
	require.NoError(t, err)
	sw := &swappable{h: hub.NewServer(mem, tokens)}
	ts := httptest.NewServer(sw)
	defer ts.Close()
	c, err := hub.NewClient(ts.URL, tok)
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := c.Watch(wctx)
	require.NoError(t, err)

	a, err := mem.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	gone, err := mem.Create(ctx, tg.NewTask{Subject: "gone"})
	require.NoError(t, err)
	expectEvents(t, events, fmt.Sprint("created ", a.ID), fmt.Sprint("unblocked ", a.ID),
		fmt.Sprint("created ", gone.ID), fmt.Sprint("unblocked ", gone.ID))

	old := hub.NewServer(mem, tokens) // stands for the hub that dies
	sw.set(old)
	fresh := hub.NewServer(mem, tokens)
	defer fresh.Close()
	sw.set(fresh) // the restarted hub: its ids are new
	ts.CloseClientConnections()
	old.Close()
	require.NoError(t, mem.Delete(ctx, gone.ID))
	b, err := mem.Create(ctx, tg.NewTask{Subject: "b"})
	require.NoError(t, err)

	expectEvents(t, events, fmt.Sprint("updated ", a.ID), fmt.Sprint("updated ", b.ID), fmt.Sprint("deleted ", gone.ID))
	_, err = mem.Claim(ctx, a.ID, "x")
	require.NoError(t, err)
	expectEvents(t, events, fmt.Sprint("updated ", a.ID))
}

// A watch ends with an Ended event that says why: the store behind the
// hub closed (ErrClosed), or, at a reconnect, the token was revoked
// (ErrUnauthorized).
func TestWatchEnds(t *testing.T) {
	mem := tg.NewMemStore()
	c := serve(t, mem)
	events, err := c.Watch(ctx)
	require.NoError(t, err)
	require.NoError(t, mem.Close())
	last := drain(t, events)
	require.Equal(t, tg.Ended, last.Kind)
	require.ErrorIs(t, last.Err, tg.ErrClosed)

	mem = tg.NewMemStore()
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Viewer)
	require.NoError(t, err)
	api := hub.NewServer(mem, tokens)
	defer api.Close()
	ts := httptest.NewServer(api)
	defer ts.Close()
	c, err = hub.NewClient(ts.URL, tok)
	require.NoError(t, err)
	events, err = c.Watch(ctx)
	require.NoError(t, err)
	require.NoError(t, tokens.Revoke(ctx, "me"))
	ts.CloseClientConnections()
	last = drain(t, events)
	require.Equal(t, tg.Ended, last.Kind)
	require.ErrorIs(t, last.Err, hub.ErrUnauthorized)
}

// drain reads events until the channel closes, and returns the last.
func drain(t *testing.T, events <-chan tg.Event) tg.Event {
	t.Helper()
	var last tg.Event
	timeout := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-events:
			if !ok {
				return last
			}
			last = e
		case <-timeout:
			t.Fatal("the watch did not end")
		}
	}
}

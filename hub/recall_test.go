package hub_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// restarting serves store through a new hub for every request, as a hub
// that restarted between an attempt and its retry, and counts the
// retries the hubs answered from the store's keys.
type restarting struct {
	store    hub.Store
	tokens   hub.Tokens
	recalled atomic.Int64
}

func (h *restarting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	api := hub.NewServer(h.store, h.tokens)
	api.ServeHTTP(w, r)
	h.recalled.Add(api.Recalled())
}

// retryAfterRestart loses the answer of each kind of write once, the hub
// restarting before the retry, in front of store: each retry returns the
// first attempt's answer from the keys the store recorded with the
// write, and nothing is applied twice.
func retryAfterRestart(t *testing.T, store hub.Store) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Admin)
	require.NoError(t, err)
	h := &restarting{store: store, tokens: tokens}
	d := &dropFirst{api: h}
	ts := httptest.NewServer(d)
	defer ts.Close()
	c, err := hub.NewClient(ts.URL, tok)
	require.NoError(t, err)

	d.n.Store(1)
	a, err := c.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err, "answered from the store, not an unknown outcome")
	d.n.Store(1)
	plan, err := c.CreatePlan(ctx, []tg.NewTask{{Key: "b", Subject: "b", Blocks: []tg.ID{a.ID}}, {Key: "c", Subject: "c"}})
	require.NoError(t, err)
	require.Len(t, plan, 2)
	d.n.Store(1)
	noted, err := c.Note(ctx, a.ID, "me", "once")
	require.NoError(t, err)
	assert.Len(t, noted.Notes, 1)
	d.n.Store(1)
	claimed, err := c.ClaimNext(ctx, "me")
	require.NoError(t, err)
	d.n.Store(1)
	done, err := c.Complete(ctx, claimed.ID, "me")
	require.NoError(t, err)
	assert.Equal(t, tg.Completed, done.Task.Status)
	assert.EqualValues(t, 5, h.recalled.Load(), "every retry answered from the store")

	all, err := store.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 3, "each create applied once")
	got, err := store.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Len(t, got.Notes, 1, "the note applied once")
	assert.Equal(t, noted.Rev, got.Rev)
	ready, err := store.List(ctx, tg.WithStatus(tg.InProgress))
	require.NoError(t, err)
	assert.Empty(t, ready, "claimed once, completed once")

	// The store says a write never happened when its key is not there: a
	// retry whose first attempt was lost on the way is applied, once.
	before := h.recalled.Load()
	req, err := http.NewRequest("POST", ts.URL+"/v1/tasks", strings.NewReader(`{"Subject":"late"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set(hub.KeyHeader, "never-reached")
	req.Header.Set(hub.RetryHeader, "another-hub")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, before, h.recalled.Load())
	all, err = store.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 4)
}

func TestRetryAfterRestartFileStore(t *testing.T) {
	s := openFile(t)
	defer s.Close()
	retryAfterRestart(t, s)
}

func TestRetryAfterRestartPostgres(t *testing.T) {
	retryAfterRestart(t, openPG(t, pool(t)))
}

// In front of a MemStore, which remembers no key past its process, a
// retry across a restart of the hub is still an unknown outcome
// (TestRetryAfterRestartIsUnknownOutcome): MemStore is no KeyRecorder.
var _ = func() bool { _, ok := any(tg.NewMemStore()).(tg.KeyRecorder); return ok }

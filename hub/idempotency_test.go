package hub_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// dropFirst serves api, but the first n writes' answers are lost: the
// hub applies the write, then the connection dies.
type dropFirst struct {
	mu  sync.Mutex
	api http.Handler
	n   atomic.Int32
}

func (d *dropFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.Lock()
	api := d.api
	d.mu.Unlock()
	if r.Method != http.MethodGet && d.n.Add(-1) >= 0 {
		api.ServeHTTP(httptest.NewRecorder(), r)
		panic(http.ErrAbortHandler)
	}
	api.ServeHTTP(w, r)
}

// gatedStore holds each Create, once gate is set, until gate closes,
// saying on entered that one came.
type gatedStore struct {
	*tg.MemStore
	entered, gate chan struct{}
}

func (g *gatedStore) Create(ctx context.Context, nt tg.NewTask) (tg.Task, error) {
	if g.gate != nil {
		g.entered <- struct{}{}
		<-g.gate
	}
	return g.MemStore.Create(ctx, nt)
}

// A write whose answer was lost is retried with its key, and the retry
// returns the first attempt's answer: a ClaimNext is not applied twice
// (the second ready task stays pending), a Create makes one task.
func TestRetryAfterLostAnswerAppliesOnce(t *testing.T) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Admin)
	require.NoError(t, err)
	mem := tg.NewMemStore()
	for _, s := range []string{"a", "b"} {
		_, err := mem.Create(ctx, tg.NewTask{Subject: s})
		require.NoError(t, err)
	}
	d := &dropFirst{api: hub.NewServer(mem, tokens)}
	ts := httptest.NewServer(d)
	defer ts.Close()
	c, err := hub.NewClient(ts.URL, tok)
	require.NoError(t, err)

	d.n.Store(1)
	got, err := c.ClaimNext(ctx, "me")
	require.NoError(t, err, "the retry answers as the first attempt did")
	assert.Equal(t, tg.ID(1), got.ID)
	b, err := mem.Get(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, tg.Pending, b.Status, "claimed once, not twice")

	d.n.Store(3) // three answers lost in a row
	created, err := c.Create(ctx, tg.NewTask{Subject: "c"})
	require.NoError(t, err)
	all, err := mem.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 3, "created once")
	assert.Equal(t, created.ID, all[2].ID)

	// A refusal is answered again as it was: the retry of a claim of a
	// task someone holds says so, and does not claim.
	d.n.Store(1)
	_, err = c.Claim(ctx, 1, "other")
	var cl *tg.ClaimedError
	require.ErrorAs(t, err, &cl)
}

// A hub that restarted between the attempt and its retry does not
// remember the key: the retry is refused as an unknown outcome, never
// applied a second time.
func TestRetryAfterRestartIsUnknownOutcome(t *testing.T) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Admin)
	require.NoError(t, err)
	mem := tg.NewMemStore()
	d := &dropFirst{}
	d.api = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hub.NewServer(mem, tokens).ServeHTTP(w, r) // a new hub for every request: one that restarted
	})
	ts := httptest.NewServer(d)
	defer ts.Close()
	c, err := hub.NewClient(ts.URL, tok)
	require.NoError(t, err)
	d.n.Store(1)
	_, err = c.Create(ctx, tg.NewTask{Subject: "a"})
	require.ErrorIs(t, err, tg.ErrUnknownOutcome)
	assert.Contains(t, err.Error(), "does not remember")
	all, err := mem.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1, "applied once, by the first attempt")
}

// The keys on the wire: a key names one request (another body is
// refused); a retry that comes while the first attempt runs waits for it
// and gets its answer; another token's same key is another write.
func TestKeys(t *testing.T) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Admin)
	require.NoError(t, err)
	other, err := tokens.Add(ctx, "other", hub.Admin)
	require.NoError(t, err)
	mem := &gatedStore{MemStore: tg.NewMemStore()}
	ts := httptest.NewServer(hub.NewServer(mem, tokens))
	defer ts.Close()
	var hubMu sync.Mutex // the posts below run at once
	hubID := ""
	post := func(token, key, body string, retry bool) (int, string) {
		req, err := http.NewRequest("POST", ts.URL+"/v1/tasks", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set(hub.KeyHeader, key)
		if retry {
			req.Header.Set(hub.RetryHeader, "1")
		}
		hubMu.Lock()
		if key == "after-lost-request" {
			req.Header.Set(hub.RetryHeader, hubID)
		}
		hubMu.Unlock()
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		hubMu.Lock()
		hubID = resp.Header.Get(hub.HubHeader)
		hubMu.Unlock()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	code, first := post(tok, "k1", `{"Subject":"a"}`, false)
	require.Equal(t, 200, code, first)
	code, again := post(tok, "k1", `{"Subject":"a"}`, true)
	require.Equal(t, 200, code)
	assert.Equal(t, first, again, "the same answer, byte for byte")
	code, body := post(tok, "k1", `{"Subject":"b"}`, true)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "another request")
	code, body = post(other, "k1", `{"Subject":"a"}`, false)
	require.Equal(t, 200, code, body)
	assert.Contains(t, body, `"ID":2`, "another token's key is its own")
	code, body = post(tok, "never-seen", `{"Subject":"a"}`, true)
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, body, `"kind":"unknown_outcome"`, "a retry from a client that knows no hub: the first attempt may have reached one")
	code, body = post(tok, "after-lost-request", `{"Subject":"d"}`, false)
	require.Equal(t, 200, code, "a retry naming this very hub, which does not know the key: the first attempt never reached it, so it runs: %s", body)

	mem.entered, mem.gate = make(chan struct{}, 2), make(chan struct{})
	answers := make(chan string, 2)
	go func() { _, b := post(tok, "k2", `{"Subject":"c"}`, false); answers <- b }()
	<-mem.entered // the first attempt is in the store
	go func() { _, b := post(tok, "k2", `{"Subject":"c"}`, true); answers <- b }()
	select {
	case b := <-answers:
		t.Fatalf("the retry did not wait for the first attempt: %s", b)
	case <-time.After(100 * time.Millisecond):
	}
	close(mem.gate)
	a1, a2 := <-answers, <-answers
	assert.Equal(t, a1, a2)
	all, err := mem.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 4, "each write once")
}

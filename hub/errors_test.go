package hub_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// Every kind of store error crosses the wire as the same typed error,
// with the same text and fields: errors.As finds the type, errors.Is the
// sentinel.
func TestErrorsCrossTyped(t *testing.T) {
	mem := tg.NewMemStore()
	c := serve(t, mem)
	a, err := c.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	b, err := c.Create(ctx, tg.NewTask{Subject: "b", BlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err)

	_, err = c.Get(ctx, 42)
	var nf *tg.NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, tg.ID(42), nf.ID)

	_, err = c.Claim(ctx, b.ID, "x")
	var bl *tg.BlockedError
	require.ErrorAs(t, err, &bl)
	assert.Equal(t, []tg.ID{a.ID}, bl.By)

	_, err = c.Claim(ctx, a.ID, "x")
	require.NoError(t, err)
	_, err = c.Claim(ctx, a.ID, "y")
	var cl *tg.ClaimedError
	require.ErrorAs(t, err, &cl)
	assert.Equal(t, "x", cl.Owner)

	_, err = c.Update(ctx, a.ID, tg.Patch{AddBlockedBy: []tg.ID{b.ID}})
	var cy *tg.CycleError
	require.ErrorAs(t, err, &cy)
	assert.Equal(t, []tg.ID{a.ID, b.ID, a.ID}, cy.Path)

	z := "z"
	_, err = c.Update(ctx, a.ID, tg.Patch{IfRev: 1, Subject: &z})
	var co *tg.ConflictError
	require.ErrorAs(t, err, &co)

	_, err = c.Create(ctx, tg.NewTask{})
	var in *tg.InvalidError
	require.ErrorAs(t, err, &in)
	assert.Equal(t, "subject", in.Field)

	_, err = c.ClaimNext(ctx, "x")
	require.ErrorIs(t, err, tg.ErrNoReady)
	require.Equal(t, tg.ErrNoReady.Error(), err.Error())

	_, err = mem.Create(ctx, tg.NewTask{Subject: "later", NotBefore: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, err = c.Claim(ctx, 3, "x")
	var de *tg.DeferredError
	require.ErrorAs(t, err, &de)

	require.NoError(t, mem.Close())
	_, err = c.Get(ctx, a.ID)
	require.ErrorIs(t, err, tg.ErrClosed, "the store behind the hub is closed")
}

// A write whose answer never comes back — the hub died, or the context
// ended, after the request left — is ErrUnknownOutcome, never a plain
// failure that says it did not happen; a read is just a failure.
func TestLostAnswerIsUnknownOutcome(t *testing.T) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Admin)
	require.NoError(t, err)
	mem := tg.NewMemStore()
	api := hub.NewServer(mem, tokens)
	// The hub applies the write, then the connection dies before the answer.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(httptest.NewRecorder(), r)
		panic(http.ErrAbortHandler)
	}))
	defer ts.Close()
	c, err := hub.NewClient(ts.URL, tok)
	require.NoError(t, err)
	_, err = c.Create(ctx, tg.NewTask{Subject: "a"})
	require.ErrorIs(t, err, tg.ErrUnknownOutcome)
	all, lerr := mem.List(ctx)
	require.NoError(t, lerr)
	require.Len(t, all, 1, "and it did happen")
	_, err = c.Get(ctx, 1)
	require.Error(t, err)
	require.False(t, errors.Is(err, tg.ErrUnknownOutcome), "a read has no outcome to be unknown")

	// A context that ends while the hub works: unknown, and says why.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		api.ServeHTTP(w, r)
	}))
	defer slow.Close()
	c, err = hub.NewClient(slow.URL, tok)
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = c.Create(short, tg.NewTask{Subject: "b"})
	require.ErrorIs(t, err, tg.ErrUnknownOutcome)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// A hub that is not there: the write surely never left.
	ts.Close()
	c, err = hub.NewClient(ts.URL, tok)
	require.NoError(t, err)
	_, err = c.Create(ctx, tg.NewTask{Subject: "c"})
	require.Error(t, err)
	require.False(t, errors.Is(err, tg.ErrUnknownOutcome), "%v", err)
}

// A body over the bound, an unknown field (on every endpoint that takes a
// body) and an unknown endpoint are refused with ErrInvalid or
// ErrNotFound, and change nothing.
func TestBadRequests(t *testing.T) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Admin)
	require.NoError(t, err)
	mem := tg.NewMemStore()
	api := hub.NewServer(mem, tokens)
	api.SetMaxBody(1 << 10)
	ts := httptest.NewServer(api)
	defer ts.Close()
	do := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	code, body := do("POST", "/v1/tasks", `{"Subject":"`+strings.Repeat("x", 2<<10)+`"}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "too large")
	code, body = do("POST", "/v1/tasks", `{"Subject":"a","Sneaky":1}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "Sneaky")
	code, body = do("POST", "/v1/tasks", `{"Subject":"a"}{"Subject":"b"}`)
	assert.Equal(t, http.StatusBadRequest, code, body)
	// Every endpoint that takes a body reads it alike (withBody), before
	// the store: a field it does not know is refused, even on no task.
	for _, route := range []string{"POST /v1/plans", "POST /v1/load", "PATCH /v1/tasks/1", "POST /v1/tasks/1/claim",
		"POST /v1/claim-next", "POST /v1/tasks/1/renew", "POST /v1/tasks/1/complete", "POST /v1/tasks/1/fail",
		"POST /v1/tasks/1/release", "POST /v1/tasks/1/notes", "POST /v1/tasks/1/cancel", "POST /v1/tasks/1/reopen",
		"PUT /v1/limits", "PUT /v1/liveness", "POST /v1/tasks/1/approve", "POST /v1/tasks/1/reject", "PUT /v1/approval"} {
		method, path, _ := strings.Cut(route, " ")
		sneaky := `{"Sneaky":1}`
		if path == "/v1/plans" || path == "/v1/load" {
			sneaky = "[" + sneaky + "]"
		}
		code, body = do(method, path, sneaky)
		assert.Equal(t, http.StatusBadRequest, code, "%s: %s", route, body)
		assert.Contains(t, body, "Sneaky", route)
	}
	code, _ = do("GET", "/v1/nothing", "")
	assert.Equal(t, http.StatusNotFound, code)
	code, body = do("GET", "/v1/tasks/abc", "")
	assert.Equal(t, http.StatusBadRequest, code, body)
	code, body = do("GET", "/v1/tasks?limit=many", "")
	assert.Equal(t, http.StatusBadRequest, code, body)
	all, err := mem.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, all)
}

// A token past its rate is refused with 429 and Retry-After, changing
// nothing, while another token goes on; the Client waits as told and
// its call succeeds.
func TestRate(t *testing.T) {
	tokens := &hub.MemTokens{}
	fast, err := tokens.Add(ctx, "fast", hub.Agent)
	require.NoError(t, err)
	other, err := tokens.Add(ctx, "other", hub.Agent)
	require.NoError(t, err)
	mem := tg.NewMemStore()
	api := hub.NewServer(mem, tokens, hub.WithRate(2, 2))
	defer api.Close()
	ts := httptest.NewServer(api)
	defer ts.Close()
	post := func(tok string) *http.Response {
		req, err := http.NewRequest("POST", ts.URL+"/v1/tasks", strings.NewReader(`{"Subject":"a"}`))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	require.Equal(t, 200, post(fast).StatusCode)
	require.Equal(t, 200, post(fast).StatusCode)
	third := post(fast)
	require.Equal(t, http.StatusTooManyRequests, third.StatusCode, "past the burst")
	require.Equal(t, "1", third.Header.Get("Retry-After"))
	require.Equal(t, 200, post(other).StatusCode, "each token has its own rate")
	all, err := mem.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 3, "the refused request did nothing")

	c, err := hub.NewClient(ts.URL, fast)
	require.NoError(t, err)
	start := time.Now()
	_, err = c.Create(ctx, tg.NewTask{Subject: "b"})
	require.NoError(t, err, "the client waits out the rate")
	require.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)
}

package hub_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// An endpoint of the API, as the access matrix calls it. body acts as
// the token's own name ("me") or names no owner; asOther, if not "",
// is the same request naming another owner, "bob".
type endpoint struct {
	pattern       string // as the server registers it
	method, path  string
	body, asOther string
	need          hub.Role // the least role that may call it
}

// endpoints covers every route of the API; TestAccessMatrix checks that
// none is missing.
var endpoints = []endpoint{
	{"GET /v1/tasks/{id}", "GET", "/v1/tasks/1", "", "", hub.Viewer},
	{"GET /v1/tasks", "GET", "/v1/tasks?status=pending", "", "", hub.Viewer},
	{"GET /v1/board", "GET", "/v1/board", "", "", hub.Viewer},
	{"GET /v1/limits", "GET", "/v1/limits", "", "", hub.Viewer},
	{"GET /v1/liveness", "GET", "/v1/liveness", "", "", hub.Viewer},
	{"GET /v1/events", "GET", "/v1/events", "", "", hub.Viewer},
	{"GET /v1/whoami", "GET", "/v1/whoami", "", "", hub.Viewer},
	{"POST /v1/tasks", "POST", "/v1/tasks", `{"Subject":"new","Owner":"me"}`, `{"Subject":"new","Owner":"bob"}`, hub.Agent},
	{"POST /v1/plans", "POST", "/v1/plans", `[{"Subject":"p","Key":"p"}]`, `[{"Subject":"p","Key":"p","Owner":"bob"}]`, hub.Agent},
	{"PATCH /v1/tasks/{id}", "PATCH", "/v1/tasks/1", `{"Subject":"edited"}`, `{"Owner":"bob"}`, hub.Agent},
	{"POST /v1/tasks/{id}/claim", "POST", "/v1/tasks/1/claim", `{"Owner":"me"}`, `{"Owner":"bob"}`, hub.Agent},
	{"POST /v1/claim-next", "POST", "/v1/claim-next", `{}`, `{"Owner":"bob"}`, hub.Agent},
	{"POST /v1/tasks/{id}/renew", "POST", "/v1/tasks/3/renew", `{"TTL":60000000000}`, `{"Owner":"bob","TTL":60000000000}`, hub.Agent},
	{"POST /v1/tasks/{id}/complete", "POST", "/v1/tasks/3/complete", `{"Result":"ok"}`, `{"Owner":"bob"}`, hub.Agent},
	{"POST /v1/tasks/{id}/fail", "POST", "/v1/tasks/3/fail", `{"Reason":"no"}`, `{"Owner":"bob","Reason":"no"}`, hub.Agent},
	{"POST /v1/tasks/{id}/release", "POST", "/v1/tasks/3/release", `{}`, `{"Owner":"bob"}`, hub.Agent},
	{"POST /v1/tasks/{id}/notes", "POST", "/v1/tasks/1/notes", `{"Text":"tried"}`, `{"Author":"bob","Text":"tried"}`, hub.Agent},
	{"POST /v1/tasks/{id}/cancel", "POST", "/v1/tasks/1/cancel", `{"Reason":"no"}`, "", hub.Admin},
	{"POST /v1/tasks/{id}/reopen", "POST", "/v1/tasks/4/reopen", `{}`, "", hub.Admin},
	{"DELETE /v1/tasks/{id}", "DELETE", "/v1/tasks/1", "", "", hub.Admin},
	{"PUT /v1/limits", "PUT", "/v1/limits", `{"Label":"db","N":2}`, "", hub.Admin},
	{"PUT /v1/liveness", "PUT", "/v1/liveness", `{"Label":"db","MaxRuntime":3600000000000}`, "", hub.Admin},
	{"POST /v1/tasks/{id}/approve", "POST", "/v1/tasks/5/approve", `{"By":"me"}`, "", hub.Admin},
	{"POST /v1/tasks/{id}/reject", "POST", "/v1/tasks/5/reject", `{"By":"me","Reason":"no"}`, "", hub.Admin},
	{"GET /v1/approval", "GET", "/v1/approval", "", "", hub.Viewer},
	{"PUT /v1/approval", "PUT", "/v1/approval", `{"labels":["prod"]}`, "", hub.Admin},
	{"POST /v1/load", "POST", "/v1/load", `[{"ID":100,"Subject":"loaded","Status":"pending"}]`, "", hub.Admin},
}

// seeded returns a store with a task of each kind the endpoints act on:
// 1 pending, 2 held by bob, 3 held by me, 4 completed by bob, 5
// awaiting approval.
func seeded(t *testing.T) *tg.MemStore {
	t.Helper()
	s := tg.NewMemStore()
	for _, subj := range []string{"one", "two", "three", "four"} {
		_, err := s.Create(ctx, tg.NewTask{Subject: subj})
		require.NoError(t, err)
	}
	_, err := s.Claim(ctx, 2, "bob")
	require.NoError(t, err)
	_, err = s.Claim(ctx, 3, "me", tg.WithLease(time.Hour))
	require.NoError(t, err)
	_, err = s.Claim(ctx, 4, "bob")
	require.NoError(t, err)
	_, err = s.Complete(ctx, 4, "bob")
	require.NoError(t, err)
	_, err = s.Create(ctx, tg.NewTask{Subject: "five", NeedsApproval: true})
	require.NoError(t, err)
	return s
}

// state is everything a request could change.
func state(t *testing.T, s *tg.MemStore) string {
	t.Helper()
	all, err := s.List(ctx)
	require.NoError(t, err)
	limits, err := s.Limits(ctx)
	require.NoError(t, err)
	defaults, err := s.LivenessDefaults(ctx)
	require.NoError(t, err)
	policy, err := s.ApprovalPolicy(ctx)
	require.NoError(t, err)
	return fmt.Sprintf("%+v %v %v %+v", all, limits, defaults, policy)
}

// The access matrix: through every endpoint, a request without a token,
// with a wrong or revoked one, by a viewer writing, by an agent doing
// what only an admin may, and by an agent acting as another owner, is
// refused (401 or 403, with its kind) and changes nothing; the rest are
// let through to the store, and an agent's own writes happen.
func TestAccessMatrix(t *testing.T) {
	var covered []string
	for _, ep := range endpoints {
		covered = append(covered, ep.pattern)
	}
	srv := hub.NewServer(tg.NewMemStore(), &hub.MemTokens{})
	assert.ElementsMatch(t, srv.Routes(), covered, "the matrix covers every route")

	type caller struct {
		name  string
		token func(tokens *hub.MemTokens) string
		role  hub.Role // "" for a token that is no one's
		other bool     // names another owner
	}
	add := func(tokens *hub.MemTokens, name string, role hub.Role) string {
		tok, err := tokens.Add(ctx, name, role)
		require.NoError(t, err)
		return tok
	}
	callers := []caller{
		{"no token", func(*hub.MemTokens) string { return "" }, "", false},
		{"wrong token", func(*hub.MemTokens) string { return "tgh_" + strings.Repeat("A", 43) }, "", false},
		{"revoked token", func(ts *hub.MemTokens) string {
			tok := add(ts, "me", hub.Admin)
			require.NoError(t, ts.Revoke(ctx, "me"))
			return tok
		}, "", false},
		{"viewer", func(ts *hub.MemTokens) string { return add(ts, "me", hub.Viewer) }, hub.Viewer, false},
		{"agent", func(ts *hub.MemTokens) string { return add(ts, "me", hub.Agent) }, hub.Agent, false},
		{"agent as bob", func(ts *hub.MemTokens) string { return add(ts, "me", hub.Agent) }, hub.Agent, true},
		{"admin", func(ts *hub.MemTokens) string { return add(ts, "me", hub.Admin) }, hub.Admin, false},
		{"admin as bob", func(ts *hub.MemTokens) string { return add(ts, "me", hub.Admin) }, hub.Admin, true},
	}
	rank := map[hub.Role]int{hub.Viewer: 1, hub.Agent: 2, hub.Admin: 3}
	for _, ep := range endpoints {
		for _, c := range callers {
			body := ep.body
			if c.other {
				if ep.asOther == "" {
					continue
				}
				body = ep.asOther
			}
			t.Run(ep.pattern+"/"+c.name, func(t *testing.T) {
				store := seeded(t)
				tokens := &hub.MemTokens{}
				tok := c.token(tokens)
				ts := httptest.NewServer(hub.NewServer(store, tokens))
				defer ts.Close()
				before := state(t, store)

				req, err := http.NewRequest(ep.method, ts.URL+ep.path, strings.NewReader(body))
				require.NoError(t, err)
				if tok != "" {
					req.Header.Set("Authorization", "Bearer "+tok)
				}
				resp, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				var data []byte
				if resp.StatusCode == http.StatusOK && ep.path == "/v1/events" {
					data = []byte("a stream") // it goes on: its status says it was let through
				} else {
					data, _ = io.ReadAll(resp.Body)
				}
				resp.Body.Close()

				var want int
				switch {
				case c.role == "":
					want = http.StatusUnauthorized
				case rank[c.role] < rank[ep.need], c.other && c.role == hub.Agent:
					want = http.StatusForbidden
				}
				if want != 0 {
					require.Equal(t, want, resp.StatusCode, "%s", data)
					kind := map[int]string{401: `"kind":"unauthorized"`, 403: `"kind":"forbidden"`}[want]
					assert.Contains(t, string(data), kind)
					if tok != "" {
						assert.NotContains(t, string(data), tok[4:], "a token is never echoed")
					}
					assert.Equal(t, before, state(t, store), "a refused request changes nothing")
					return
				}
				// Let through: the store decides (an admin's empty owner
				// is anyone's, which Claim refuses, say); an agent's
				// requests here are all ones the store grants.
				assert.NotContains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, resp.StatusCode, "%s %s by %s: %s", ep.method, ep.path, c.name, data)
				if c.role == hub.Agent || c.role == hub.Viewer {
					require.Less(t, resp.StatusCode, 300, "%s %s by %s: %s", ep.method, ep.path, c.name, data)
					if ep.method != "GET" {
						assert.NotEqual(t, before, state(t, store), "the request was let through and did its write")
					}
				}
			})
		}
	}
}

// An agent's token that names no owner acts as itself: the claim, the
// note and the completion are its name's.
func TestAgentActsAsItself(t *testing.T) {
	store := tg.NewMemStore()
	c, _ := serveAs(t, store, hub.Agent) // the token is "me"'s
	a, err := c.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	got, err := c.ClaimNext(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, "me", got.Owner)
	got, err = c.Note(ctx, a.ID, "", "looked")
	require.NoError(t, err)
	assert.Equal(t, "me", got.Notes[0].Author)

	_, err = c.Claim(ctx, a.ID, "bob")
	require.ErrorIs(t, err, hub.ErrForbidden)
	_, err = c.Complete(ctx, a.ID, "bob")
	require.ErrorIs(t, err, hub.ErrForbidden)
	require.ErrorIs(t, c.Delete(ctx, a.ID), hub.ErrForbidden)
	require.ErrorIs(t, c.SetLimit(ctx, "x", 1), hub.ErrForbidden)
	done, err := c.Complete(ctx, a.ID, "")
	require.NoError(t, err)
	assert.Equal(t, tg.Completed, done.Task.Status)
	assert.Equal(t, "me", done.Task.Owner)
}

// A request without a valid token gets ErrUnauthorized through the
// client.
func TestClientUnauthorized(t *testing.T) {
	tokens := &hub.MemTokens{}
	ts := httptest.NewServer(hub.NewServer(tg.NewMemStore(), tokens))
	defer ts.Close()
	c, err := hub.NewClient(ts.URL, "tgh_nope")
	require.NoError(t, err)
	_, err = c.List(ctx)
	require.ErrorIs(t, err, hub.ErrUnauthorized)
	_, err = c.Create(ctx, tg.NewTask{Subject: "x"})
	require.ErrorIs(t, err, hub.ErrUnauthorized)
	require.False(t, slices.ContainsFunc([]error{err}, func(e error) bool { return strings.Contains(e.Error(), "tgh_nope") }), "the token is never echoed")
}

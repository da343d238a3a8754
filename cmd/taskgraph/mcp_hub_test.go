package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// bearer adds a token to every request, as an MCP host configured with an
// Authorization header does.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpConnect opens an MCP session at url (a hub's /mcp) with the Go SDK's
// Streamable HTTP client, sending token.
func mcpConnect(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "taskgraph-test", Version: "1"}, nil)
	hc := &http.Client{Transport: bearer{token}}
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// mcpCall calls tool with args (JSON) and returns its text and error flag.
func mcpCall(t *testing.T, cs *mcp.ClientSession, tool, args string) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	require.NoError(t, err, "%s %s", tool, args)
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n"), res.IsError
}

// startMCPHub serves store's API and /mcp in this process, as taskgraph
// serve does (hubMCP), and returns the URL of /mcp.
func startMCPHub(t *testing.T, store hub.Store, tokens hub.Tokens, ttl time.Duration) string {
	t.Helper()
	cctx, cancel := context.WithCancel(context.Background())
	api := hub.NewServer(store, tokens, hub.WithMCP(hubMCP(cctx, ttl)))
	mux := http.NewServeMux()
	mux.Handle("/v1/", api)
	mux.Handle(hub.MCPPath, api)
	ts := httptest.NewServer(mux)
	t.Cleanup(func() {
		api.Close()
		ts.Close()
		cancel()
	})
	return ts.URL + hub.MCPPath
}

// taskgraph serve's /mcp serves the same tools as taskgraph mcp on stdio
// — names, titles, schemas, annotations, instructions — to a real MCP
// client over Streamable HTTP, and each session acts as its token's
// name: the claims, notes and completions are the token's, in the
// directory.
func TestHubMCPServesTheStdioTools(t *testing.T) {
	dir := project(t)
	tok := strings.TrimSpace(ok(t, dir, "token", "add", "builder"))
	base := startServe(t, dir)
	cs, err := mcpConnect(t, base+"mcp", tok)
	require.NoError(t, err)

	assert.Equal(t, "taskgraph", cs.InitializeResult().ServerInfo.Name)
	assert.Equal(t, agenttools.Instructions, cs.InitializeResult().Instructions)
	got, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	// The stdio server's tools, as `taskgraph mcp` lists them.
	stdio := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	ct, st := mcp.NewInMemoryTransports()
	server := newMCPServer(taskgraph.NewMemStore())
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	local, err := stdio.Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer local.Close()
	want, err := local.ListTools(ctx, nil)
	require.NoError(t, err)
	gotJSON, _ := json.Marshal(got.Tools)
	wantJSON, _ := json.Marshal(want.Tools)
	assert.JSONEq(t, string(wantJSON), string(gotJSON), "the same tools as on stdio")

	text, isErr := mcpCall(t, cs, "task_create", `{"subject":"write the parser"}`)
	require.False(t, isErr, text)
	text, isErr = mcpCall(t, cs, "task_claim_next", `{}`)
	require.False(t, isErr, text)
	assert.Contains(t, text, "Claimed #1: write the parser")
	text, isErr = mcpCall(t, cs, "task_note", `{"task_id":1,"text":"grammar in docs"}`)
	require.False(t, isErr, text)
	show := ok(t, dir, "show", "1", "--json")
	var task struct {
		Owner          string
		Status         string
		LeaseExpiresAt time.Time
		Notes          []struct{ Author string }
	}
	require.NoError(t, json.Unmarshal([]byte(show), &task), show)
	assert.Equal(t, "builder", task.Owner, "the session acts as its token's name")
	assert.Equal(t, "in_progress", task.Status)
	assert.WithinDuration(t, time.Now().Add(defaultMCPLease), task.LeaseExpiresAt, time.Minute, "claims are leases, as on stdio")
	require.Len(t, task.Notes, 1)
	assert.Equal(t, "builder", task.Notes[0].Author)
	text, isErr = mcpCall(t, cs, "task_complete", `{"task_id":1}`)
	require.False(t, isErr, text)
	assert.Contains(t, ok(t, dir, "show", "1"), "completed")
}

// Every request to /mcp needs a valid token, and a session is its
// opener's: another token — another agent, or the same name with another
// role — is refused on it (403), and a revoked token is refused at its
// next request.
func TestHubMCPSessionsAreTheirTokens(t *testing.T) {
	tokens := &hub.MemTokens{}
	me, err := tokens.Add(ctx, "me", hub.Agent)
	require.NoError(t, err)
	bob, err := tokens.Add(ctx, "bob", hub.Agent)
	require.NoError(t, err)
	store := taskgraph.NewMemStore()
	url := startMCPHub(t, store, tokens, time.Minute)

	for _, tok := range []string{"", "tgh_" + strings.Repeat("A", 43)} {
		_, err := mcpConnect(t, url, tok)
		require.Error(t, err, "no session without a valid token")
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", body)
		assert.Contains(t, string(body), `"kind":"unauthorized"`)
		assert.NotEmpty(t, resp.Header.Get("Www-Authenticate"))
	}

	cs, err := mcpConnect(t, url, me)
	require.NoError(t, err)
	text, isErr := mcpCall(t, cs, "task_create", `{"subject":"a"}`)
	require.False(t, isErr, text)

	// bob, on me's session: refused, nothing done.
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"task_claim_next","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+bob)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s", body)
	a, err := store.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, taskgraph.Pending, a.Status, "bob's call on me's session did nothing")

	require.NoError(t, tokens.Revoke(ctx, "me"))
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_claim_next", Arguments: json.RawMessage(`{}`)})
	require.Error(t, err, "a revoked token is refused at its next request")
	a, err = store.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, taskgraph.Pending, a.Status)
}

// mcpSeeded is the graph each cell of the MCP access matrix starts from:
// 1 pending, 2 held by bob, 3 held by me (leased), 4 completed by bob.
func mcpSeeded(t *testing.T) *taskgraph.MemStore {
	t.Helper()
	s := taskgraph.NewMemStore()
	for _, subj := range []string{"one", "two", "three", "four"} {
		_, err := s.Create(ctx, taskgraph.NewTask{Subject: subj})
		require.NoError(t, err)
	}
	_, err := s.Claim(ctx, 2, "bob")
	require.NoError(t, err)
	_, err = s.Claim(ctx, 3, "me", taskgraph.WithLease(time.Hour))
	require.NoError(t, err)
	_, err = s.Claim(ctx, 4, "bob")
	require.NoError(t, err)
	_, err = s.Complete(ctx, 4, "bob")
	require.NoError(t, err)
	return s
}

// mcpState is everything a tool call could change.
func mcpState(t *testing.T, s *taskgraph.MemStore) string {
	t.Helper()
	all, err := s.List(ctx)
	require.NoError(t, err)
	return fmt.Sprintf("%+v", all)
}

// A call of one tool in the MCP access matrix: args act on the caller's
// own task or on none; asOther, if not "", is the same tool on bob's.
type mcpCell struct {
	tool          string
	args, asOther string
	need          hub.Role // the least role that may call it
}

// mcpCells covers every tool /mcp serves; TestHubMCPAccessMatrix checks
// that none is missing.
var mcpCells = []mcpCell{
	{"task_list", `{}`, "", hub.Viewer},
	{"task_get", `{"task_id":2}`, "", hub.Viewer},
	{"task_wait", `{}`, "", hub.Viewer},
	{"task_create", `{"subject":"new"}`, "", hub.Agent},
	{"task_plan", `{"tasks":[{"key":"p","subject":"planned"}]}`, "", hub.Agent},
	{"task_update", `{"task_id":1,"priority":0}`, `{"task_id":2,"status":"pending"}`, hub.Agent},
	{"task_claim", `{"task_id":1}`, `{"task_id":2}`, hub.Agent},
	{"task_claim_next", `{}`, "", hub.Agent},
	{"task_complete", `{"task_id":3,"result":"ok"}`, `{"task_id":2}`, hub.Agent},
	{"task_fail", `{"task_id":3,"reason":"no"}`, `{"task_id":2,"reason":"no"}`, hub.Agent},
	{"task_note", `{"task_id":1,"text":"tried"}`, "", hub.Agent},
	{"task_release", `{"task_id":3}`, `{"task_id":2}`, hub.Agent},
	{"task_renew", `{"task_id":3}`, `{"task_id":2}`, hub.Agent},
	{"task_delete", `{"task_id":1}`, `{"task_id":2}`, hub.Admin},
}

// The access matrix over MCP, as TestAccessMatrix (hub) proves it over
// the API: through every tool /mcp serves, a revoked token, a viewer
// writing, an agent
// doing what only an admin may, and an agent (or an admin: the tools act
// as their session's name) acting on another's claim are refused and
// change nothing; the rest happen, as the token's name. Sessions without
// a valid token, and another token on a session, are refused in
// TestHubMCPSessionsAreTheirTokens.
func TestHubMCPAccessMatrix(t *testing.T) {
	var covered []string
	for _, c := range mcpCells {
		covered = append(covered, c.tool)
	}
	var served []string
	for _, tool := range agenttools.New(taskgraph.NewMemStore()).List() {
		served = append(served, tool.Name)
	}
	require.ElementsMatch(t, served, covered, "the matrix covers every tool")

	rank := map[hub.Role]int{hub.Viewer: 1, hub.Agent: 2, hub.Admin: 3}
	type caller struct {
		role    hub.Role
		other   bool // acts on bob's task
		revoked bool // the token is revoked after the session opened
	}
	callers := []caller{{hub.Viewer, false, false}, {hub.Agent, false, false}, {hub.Agent, true, false}, {hub.Admin, false, false}, {hub.Admin, true, false}, {hub.Admin, false, true}}
	for _, cell := range mcpCells {
		for _, c := range callers {
			args := cell.args
			if c.other {
				if cell.asOther == "" {
					continue
				}
				args = cell.asOther
			}
			name := fmt.Sprintf("%s/%s", cell.tool, c.role)
			if c.other {
				name += " on bob's"
			}
			if c.revoked {
				name += ", revoked"
			}
			t.Run(name, func(t *testing.T) {
				store := mcpSeeded(t)
				tokens := &hub.MemTokens{}
				tok, err := tokens.Add(ctx, "me", c.role)
				require.NoError(t, err)
				cs, err := mcpConnect(t, startMCPHub(t, store, tokens, time.Hour), tok)
				require.NoError(t, err)
				before := mcpState(t, store)
				if c.revoked {
					require.NoError(t, tokens.Revoke(ctx, "me"))
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: cell.tool, Arguments: json.RawMessage(args)})
					require.Error(t, err, "a revoked token's call is refused before it reaches the tool")
					assert.Equal(t, before, mcpState(t, store), "a refused call changes nothing")
					return
				}
				text, isErr := mcpCall(t, cs, cell.tool, args)
				after := mcpState(t, store)
				switch {
				case rank[c.role] < rank[cell.need]:
					require.True(t, isErr, "%s by a %s: %s", cell.tool, c.role, text)
					if !c.other { // on bob's task, the tool may refuse first
						assert.Contains(t, text, hub.ErrForbidden.Error())
					}
					assert.Equal(t, before, after, "a refused call changes nothing")
				case c.other: // the tools act as the session's name, an admin's too
					require.True(t, isErr, "%s on bob's task by a %s: %s", cell.tool, c.role, text)
					assert.Equal(t, before, after, "acting on another's claim changes nothing")
				default:
					require.False(t, isErr, "%s by a %s: %s", cell.tool, c.role, text)
					if rank[cell.need] > rank[hub.Viewer] {
						assert.NotEqual(t, before, after, "the call was let through and did its write")
					} else {
						assert.Equal(t, before, after, "a read changes nothing")
					}
					for _, task := range mustList(t, store) {
						if !slices.Contains([]string{"", "me", "bob"}, task.Owner) {
							t.Errorf("task %d owned by %q: a session acts only as its token's name", task.ID, task.Owner)
						}
					}
				}
			})
		}
	}
}

func mustList(t *testing.T, s taskgraph.Store) []taskgraph.Task {
	t.Helper()
	all, err := s.List(ctx)
	require.NoError(t, err)
	return all
}

// The hub renews the leases of an MCP session's claims while its client
// is there (a request open, or one within the lease), as taskgraph mcp
// does while it runs; once the client is gone they lapse.
func TestHubMCPKeepsClaimsWhileTheClientIsThere(t *testing.T) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Agent)
	require.NoError(t, err)
	store := taskgraph.NewMemStore()
	_, err = store.Create(ctx, taskgraph.NewTask{Subject: "long"})
	require.NoError(t, err)
	const ttl = time.Second
	url := startMCPHub(t, store, tokens, ttl)
	cs, err := mcpConnect(t, url, tok) // with its standing event stream open
	require.NoError(t, err)
	text, isErr := mcpCall(t, cs, "task_claim_next", `{}`)
	require.False(t, isErr, text)
	first, err := store.Get(ctx, 1)
	require.NoError(t, err)
	time.Sleep(3 * ttl) // no call meanwhile: the open stream is the client
	held, err := store.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, "me", held.Owner)
	assert.True(t, held.LeaseExpiresAt.After(first.LeaseExpiresAt), "renewed: %v, then %v", first.LeaseExpiresAt, held.LeaseExpiresAt)
	assert.True(t, held.LeaseExpiresAt.After(time.Now()), "the lease has not lapsed while the client is there")

	require.NoError(t, cs.Close()) // the client leaves: its session and stream end
	time.Sleep(ttl*2 + ttl/2)      // renewed for at most ttl more, then the lease runs out
	gone, err := store.Get(ctx, 1)
	require.NoError(t, err)
	assert.True(t, gone.LeaseExpiresAt.Before(time.Now()), "the lease lapsed once the client left: %v", gone.LeaseExpiresAt)
}

package hub_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// initialize opens an MCP session at url with token by hand and returns
// the answer's status, its session id and its body.
func initialize(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(body)
}

// The hub keeps at most MaxSessions MCP sessions: one more is refused
// with 503 (busy) until one ends; Close ends them all, and refuses new
// ones. Each identity's server is made once, for all its sessions.
func TestMCPSessionBound(t *testing.T) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", hub.Agent)
	require.NoError(t, err)
	var mu sync.Mutex
	made := map[hub.Identity]int{}
	srv := hub.NewServer(tg.NewMemStore(), tokens, hub.WithMCP(func(_ hub.Store, who hub.Identity, _ func() time.Time) *mcp.Server {
		mu.Lock()
		made[who]++
		mu.Unlock()
		return mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	}), hub.WithRate(0, 0))
	ts := httptest.NewServer(srv)
	defer ts.Close()
	url := ts.URL + hub.MCPPath

	var ids []string
	for range hub.MaxSessions {
		status, id, body := initialize(t, url, tok)
		require.Equal(t, http.StatusOK, status, body)
		ids = append(ids, id)
	}
	status, _, body := initialize(t, url, tok)
	require.Equal(t, http.StatusServiceUnavailable, status, body)
	assert.Contains(t, body, `"kind":"busy"`)
	assert.Equal(t, map[hub.Identity]int{{Name: "me", Role: hub.Agent}: 1}, made, "one server per identity")

	req, _ := http.NewRequest("DELETE", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Mcp-Session-Id", ids[0])
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	status, _, body = initialize(t, url, tok)
	require.Equal(t, http.StatusOK, status, "a session ended makes room: %s", body)

	require.NoError(t, srv.Close())
	status, _, body = initialize(t, url, tok)
	assert.Equal(t, http.StatusServiceUnavailable, status, body)
	assert.Contains(t, body, `"kind":"closed"`)
	req, _ = http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", ids[1])
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.NotEqual(t, http.StatusOK, resp.StatusCode, fmt.Sprintf("a session is gone after Close: %d", resp.StatusCode))
}

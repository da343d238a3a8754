package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/board"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// startServe runs `taskgraph serve` on a free port and returns its URL.
func startServe(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, binary, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, stdout)
	return strings.TrimSpace(line)
}

// taskgraph serve --max-streams N follows N pages at once and refuses one
// more with 503 and a message saying the limit and what to do; a page that
// closes makes room.
func TestServeStreamLimit(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	url := startServe(t, dir, "--max-streams", "2")
	client := &http.Client{Transport: &http.Transport{}}
	get := func() *http.Response {
		t.Helper()
		resp, err := client.Get(url + "api/events")
		require.NoError(t, err)
		return resp
	}
	one, two := get(), get()
	defer two.Body.Close()
	require.Equal(t, http.StatusOK, one.StatusCode)
	require.Equal(t, http.StatusOK, two.StatusCode)
	three := get()
	data, _ := io.ReadAll(three.Body)
	three.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, three.StatusCode, "%s", data)
	var body struct{ Error string }
	require.NoError(t, json.Unmarshal(data, &body), "%s", data)
	assert.Contains(t, body.Error, "limit of 2 event streams")
	assert.Contains(t, body.Error, "--max-streams")
	assert.NotEmpty(t, three.Header.Get("Retry-After"))

	one.Body.Close()
	require.Eventually(t, func() bool {
		resp := get()
		if resp.StatusCode == http.StatusOK {
			t.Cleanup(func() { resp.Body.Close() })
			return true
		}
		resp.Body.Close()
		return false
	}, 10*time.Second, 10*time.Millisecond, "a closed page makes room")

	for _, n := range []string{"0", "-1"} {
		r := tg(t, dir, "serve", "--max-streams", n)
		assert.Equal(t, exitUsage, r.code, "--max-streams %s: %s", n, r.stderr)
		assert.Contains(t, r.stderr, "--max-streams "+n+": at least one page")
	}
}

// taskgraph serve has /metrics for Prometheus: the tasks by state, in its
// text format.
func TestServeMetrics(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	ok(t, dir, "add", "b", "--after", "1")
	url := startServe(t, dir)
	resp, err := http.Get(url + "metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "text/plain; version=0.0.4; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Contains(t, string(body), "# TYPE taskgraph_tasks gauge\n")
	assert.Contains(t, string(body), "\ntaskgraph_tasks{state=\"ready\"} 1\ntaskgraph_tasks{state=\"awaiting_approval\"} 0\ntaskgraph_tasks{state=\"deferred\"} 0\ntaskgraph_tasks{state=\"limited\"} 0\ntaskgraph_tasks{state=\"blocked\"} 1\n")
}

// The board's writes take the hub's tokens, one token system: with
// --allow-writes, a write from the page carries a token of taskgraph
// token add, and does what it may through the API's rules (an agent's
// creates; only an admin's reopens); no token, an unknown one, or one
// revoked by another process is refused, and the refusal never echoes
// the token. serve says, on stderr, how to get one.
func TestServeBoardWritesTakeHubTokens(t *testing.T) {
	dir := project(t)
	agent := strings.TrimSpace(ok(t, dir, "token", "add", "builder"))
	admin := strings.TrimSpace(ok(t, dir, "token", "add", "lead", "--role", "admin"))
	addr := freeAddr(t)
	cmd := exec.Command(binary, "serve", "--addr", addr, "--allow-writes")
	cmd.Dir, cmd.Env = dir, cleanEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	url = strings.TrimSpace(url)
	assert.Equal(t, "http://"+addr+"/", url, "no token in the URL: the user brings one")

	post := func(path, token, body string) (int, string) {
		req, err := http.NewRequest("POST", url+strings.TrimPrefix(path, "/"), strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Origin", strings.TrimSuffix(url, "/"))
		if token != "" {
			req.Header.Set(board.TokenHeader, token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	code, body0 := post("/api/tasks", agent, `{"subject":"from the page"}`)
	require.Equal(t, http.StatusCreated, code, body0)
	code, body := post("/api/tasks", "", `{"subject":"x"}`)
	assert.Equal(t, http.StatusUnauthorized, code, body)
	assert.Contains(t, body, "taskgraph token add")
	code, body = post("/api/tasks", agent+"x", `{"subject":"x"}`)
	assert.Equal(t, http.StatusUnauthorized, code, body)
	assert.NotContains(t, body, agent[4:], "a refusal never echoes the token")
	var created struct{ ID int64 }
	require.NoError(t, json.Unmarshal([]byte(body0), &created))
	c, err := hub.NewClient(url, admin) // the API, beside the board
	require.NoError(t, err)
	_, err = c.Claim(ctx, taskgraph.ID(created.ID), "lead")
	require.NoError(t, err)
	_, err = c.Complete(ctx, taskgraph.ID(created.ID), "lead")
	require.NoError(t, err)
	reopen := fmt.Sprintf("/api/tasks/%d/reopen", created.ID)
	code, body = post(reopen, agent, `{}`)
	assert.Equal(t, http.StatusForbidden, code, body)
	code, body = post(reopen, admin, `{}`)
	assert.Equal(t, http.StatusOK, code, body)
	ok(t, dir, "token", "revoke", "builder")
	code, body = post("/api/tasks", agent, `{"subject":"x"}`)
	assert.Equal(t, http.StatusUnauthorized, code, "revoked by another process: %s", body)
	cmd.Process.Kill()
	cmd.Wait() // stderr is written no more
	assert.NotContains(t, stderr.String(), agent[4:], "tokens are never logged")
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// leaseOf returns the end of task id's lease as the graph on disk says.
func leaseOf(t *testing.T, dir string, id int) time.Time {
	t.Helper()
	s, ok := showJSON(t, dir, id)["leaseExpiresAt"].(string)
	require.True(t, ok, "task %d has a lease", id)
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return at
}

// A claim made through taskgraph mcp is a lease the live server keeps
// renewing, past many of its lengths; once the server is killed, the task
// is free for another owner within about one lease.
func TestMCPKeepsItsClaimsAndLetsGoWhenKilled(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "long job")
	const lease = 2 * time.Second
	p := startMCP(t, dir, cleanEnv(), "--lease", "2s")
	text, isErr := p.call(2, "task_claim_next", `{}`)
	require.False(t, isErr, text)
	require.Contains(t, text, "Claimed #1: long job")
	claimed := time.Now()
	owner := showJSON(t, dir, 1)["owner"].(string)
	assert.Regexp(t, `^mcp-`, owner)
	assert.WithinDuration(t, claimed.Add(lease), leaseOf(t, dir, 1), time.Second, "the claim carries a lease of --lease")

	// Alive, the server keeps the task through four lease lengths.
	for time.Since(claimed) < 4*lease {
		time.Sleep(lease / 4)
		m := showJSON(t, dir, 1)
		require.Equal(t, "in_progress", m["status"], "after %v", time.Since(claimed))
		require.Equal(t, owner, m["owner"], "after %v", time.Since(claimed))
		require.True(t, leaseOf(t, dir, 1).After(time.Now()), "the lease never lapses while the server lives")
	}
	r := tg(t, dir, "claim", "1", "--owner", "other")
	require.Equal(t, exitUnavailable, r.code, "no one else can take it: %s", r.stderr)
	text, _ = p.call(3, "task_list", `{}`)
	assert.Equal(t, "[>] #1: long job @"+owner, text, "the server is still serving")

	// Killed, it lets go within one lease.
	require.NoError(t, p.cmd.Process.Kill())
	killed := time.Now()
	for {
		r := tg(t, dir, "claim", "1", "--owner", "other")
		if r.code == 0 {
			break
		}
		require.Equal(t, exitUnavailable, r.code, r.stderr)
		require.Less(t, time.Since(killed), lease+3*time.Second, "the task is still held %v after the server was killed", time.Since(killed))
		time.Sleep(50 * time.Millisecond)
	}
	assert.Less(t, time.Since(killed), lease+time.Second, "free within about one lease")
	assert.Equal(t, "other", showJSON(t, dir, 1)["owner"])
}

// Without --lease, claims are leased for the default of 5 minutes; a lease
// of 0 (claims that never lapse) is refused, with the reason.
func TestMCPLeaseFlag(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a task")
	p := startMCP(t, dir, cleanEnv())
	text, isErr := p.call(2, "task_claim", `{"task_id": 1}`)
	require.False(t, isErr, text)
	assert.WithinDuration(t, time.Now().Add(defaultMCPLease), leaseOf(t, dir, 1), 30*time.Second)
	text, isErr = p.call(3, "task_renew", `{"task_id": 1}`)
	assert.False(t, isErr, text)

	for _, lease := range []string{"0", "0s", "-5m"} {
		r := tg(t, dir, "mcp", "--lease", lease)
		assert.Equal(t, exitUsage, r.code, "--lease %s: %s", lease, r.stderr)
		assert.Contains(t, r.stderr, "--lease "+lease+":")
		assert.Empty(t, r.stdout)
	}
	assert.Contains(t, tg(t, dir, "mcp", "--lease", "0").stderr, "a session that dies lets go of its tasks; give a positive duration such as 5m")
}

// With no graph and no --dir, the server starts; its tools say which one
// command creates the graph, and once someone has run it the same server
// serves the graph. Nothing is created until then.
func TestMCPStartsWithoutAGraph(t *testing.T) {
	dir := repo(t)
	r := tg(t, dir, "mcp") // stdin is empty: the server starts and ends cleanly
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "run `taskgraph init` in the project")

	p := startMCP(t, dir, cleanEnv())
	for i, c := range []struct{ tool, args string }{
		{"task_list", `{}`}, {"task_create", `{"subject": "x"}`}, {"task_claim_next", `{}`}, {"task_wait", `{}`}, {"task_get", `{"task_id": 1}`},
	} {
		text, isErr := p.call(10+i, c.tool, c.args)
		assert.True(t, isErr, "%s: %s", c.tool, text)
		assert.Equal(t, "Error: there is no task graph yet (no .tasks in "+dir+" or a parent): run `taskgraph init` in the project, then call again", text, c.tool)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "nothing but .git: %v", entries)

	ok(t, dir, "init")
	text, isErr := p.call(20, "task_create", `{"subject": "after init"}`)
	require.False(t, isErr, text)
	assert.Contains(t, ok(t, dir, "list"), "#1: after init")
}

// With --dir or $TASKGRAPH_DIR naming a directory that does not exist, the
// server starts on an empty graph, and the first task written creates the
// directory as taskgraph init does.
func TestMCPCreatesANamedDirectoryOnFirstWrite(t *testing.T) {
	for _, how := range []string{"--dir", "$TASKGRAPH_DIR"} {
		t.Run(how, func(t *testing.T) {
			dir := repo(t)
			tasks := filepath.Join(dir, "plans", "tasks")
			require.NoError(t, os.Mkdir(filepath.Join(dir, "plans"), 0o755))
			var p *mcpProc
			if how == "--dir" {
				p = startMCP(t, dir, cleanEnv(), "--dir", tasks)
			} else {
				p = startMCP(t, dir, cleanEnv("TASKGRAPH_DIR="+tasks))
			}
			for i, c := range []struct{ tool, args, want string }{
				{"task_list", `{}`, "No tasks."},
				{"task_claim_next", `{}`, "Finished: nothing left to do."},
				{"task_wait", `{}`, "Finished: nothing left to do."},
				{"task_get", `{"task_id": 1}`, "Error: task 1 not found"},
			} {
				text, _ := p.call(10+i, c.tool, c.args)
				assert.Equal(t, c.want, text, c.tool)
			}
			_, err := os.Stat(tasks)
			require.True(t, os.IsNotExist(err), "reads create nothing")

			text, isErr := p.call(20, "task_create", `{"subject": "first"}`)
			require.False(t, isErr, text)
			assert.Contains(t, ok(t, dir, "list", "--dir", tasks), "#1: first")
			r := tg(t, dir, "check", "--dir", tasks)
			assert.Equal(t, 0, r.code, "a directory as init makes it: %s%s", r.stdout, r.stderr)
			text, _ = p.call(21, "task_claim_next", `{}`)
			assert.Contains(t, text, "Claimed #1: first")
		})
	}
}

// task_claim_next tells stop from wait, and task_wait, served by the
// binary, wakes when another process changes the graph.
func TestMCPStopOrWait(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "first")
	ok(t, dir, "add", "second", "--after", "1")
	ok(t, dir, "claim", "1", "--owner", "person", "--lease", "10m")
	p := startMCP(t, dir, cleanEnv(), "--owner", "bot")
	text, _ := p.call(2, "task_claim_next", `{}`)
	assert.Regexp(t, `^Nothing ready now: 1 in progress by others, 1 blocked; the next lease lapses in (9m5\ds|10m0s)\.$`, text)

	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"task_wait","arguments":{}}}`)
	time.Sleep(300 * time.Millisecond)
	ok(t, dir, "done", "1", "--owner", "person")
	m := p.reply()
	require.Equal(t, 3.0, m["id"], m)
	res := m["result"].(map[string]any)
	assert.Equal(t, "Ready: #2 second. Claim it with task_claim_next.", res["content"].([]any)[0].(map[string]any)["text"])

	text, _ = p.call(4, "task_claim_next", `{}`)
	require.Contains(t, text, "Claimed #2: second")
	text, _ = p.call(5, "task_fail", `{"task_id": 2, "reason": "no time"}`)
	require.Contains(t, text, "Failed #2")
	text, _ = p.call(6, "task_claim_next", `{}`)
	assert.Equal(t, "Finished, but 1 task failed or is stranded: failed [2].", text)
}

// At the end of its input the server answers every call it has read and
// exits; a task_wait in flight is cut short rather than holding the exit
// back for most of a minute, answered with a JSON-RPC internal error
// (-32603, not the code 0 JSON-RPC does not define) that says the server
// is stopping.
func TestMCPEndOfInputCutsAWaitShort(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "held")
	ok(t, dir, "claim", "1", "--owner", "person")
	p := startMCP(t, dir, cleanEnv())
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task_wait","arguments":{}}}`)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	require.NoError(t, p.stdin.Close())
	m := p.reply()
	assert.Equal(t, 2.0, m["id"], "the wait is answered: %v", m)
	rpcErr, _ := m["error"].(map[string]any)
	require.NotNil(t, rpcErr, "an error reply: %v", m)
	assert.Equal(t, float64(jsonrpc.CodeInternalError), rpcErr["code"], "%v", m)
	assert.Equal(t, "the server is stopping, so task_wait did not finish (context canceled): call it again once the server is back", rpcErr["message"])
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "a clean exit")
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not exit at the end of its input")
	}
	assert.Less(t, time.Since(start), 5*time.Second)
}

// On a --store graph that does not exist yet, the server starts, and its
// tools name the init to run; once it has run, the same server serves the
// graph, and keeps its claims' leases there too.
func TestMCPStoreWithoutAGraph(t *testing.T) {
	url := postgresURL(t)
	graph := fmt.Sprintf("mcp-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { dropGraph(url, graph) })
	dir := repo(t)
	p := startMCP(t, dir, cleanEnv(), "--store", url, "--graph", graph, "--lease", "1s")
	text, isErr := p.call(2, "task_create", `{"subject": "x"}`)
	assert.True(t, isErr)
	assert.Equal(t, fmt.Sprintf("Error: there is no graph %q in the --store database yet: run `taskgraph init` with the same --store and --graph, then call again", graph), text)
	assert.False(t, graphInDB(t, url, graph), "nothing created")

	ok(t, dir, "init", "--store", url, "--graph", graph)
	text, isErr = p.call(3, "task_create", `{"subject": "x"}`)
	require.False(t, isErr, text)
	text, isErr = p.call(4, "task_claim_next", `{}`)
	require.False(t, isErr, text)
	time.Sleep(2500 * time.Millisecond)
	r := tg(t, dir, "claim", "1", "--owner", "other", "--store", url, "--graph", graph)
	assert.Equal(t, exitUnavailable, r.code, "the claim outlived 2.5 leases: %s", r.stderr)
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph/taskgraph"
	"github.com/taskgraph/taskgraph/agenttools"
)

// binary is the taskgraph command built once for the tests that run it as
// a user would.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "taskgraph-cli-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "taskgraph")
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(gobin, "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building taskgraph: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// tg runs the built binary in dir with a fixed owner.
func tg(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TASKGRAPH_DIR=", "TASKGRAPH_OWNER=", "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{out.String(), errb.String(), code}
}

// The first minutes of a new user, in an empty folder, exactly as the
// issue lists them.
func TestNewUserSequence(t *testing.T) {
	dir := t.TempDir()
	r := tg(t, dir, "add", "setup schema")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "Created #1: setup schema\n", r.stdout)

	r = tg(t, dir, "add", "api", "--after", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "Created #2: api (blocked by: [1])\n", r.stdout)

	r = tg(t, dir, "ready")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[ ] #1: setup schema\n", r.stdout)

	r = tg(t, dir, "next")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^Claimed #1: setup schema \(owner .+@.+:\d+\)\n$`, r.stdout)

	r = tg(t, dir, "done", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "Completed #1: setup schema\nUnblocked: #2 api\n", r.stdout)

	r = tg(t, dir, "ready", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var ready []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ready))
	require.Len(t, ready, 1)
	assert.Equal(t, 2.0, ready[0]["id"])
	assert.Equal(t, "api", ready[0]["subject"])
	assert.Equal(t, []any{1.0}, ready[0]["blockedBy"])

	_, err := os.Stat(filepath.Join(dir, ".tasks", "task_2.json"))
	assert.NoError(t, err, "the default directory is .tasks")
	var one map[string]any
	require.NoError(t, json.Unmarshal([]byte(tg(t, dir, "show", "1", "--json").stdout), &one))
	r = tg(t, dir, "list")
	assert.Equal(t, fmt.Sprintf("[x] #1: setup schema @%s\n[ ] #2: api\n", one["owner"]), r.stdout)
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	tg(t, dir, "add", "a")
	tg(t, dir, "add", "b", "--after=1")
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"claim", "2"}, 3, "task 2 is blocked by [1]"},
		{[]string{"--owner", "x", "claim", "1"}, 0, ""},
		{[]string{"--owner", "y", "claim", "1"}, 3, `claimed by "x"`},
		{[]string{"next"}, 3, "no ready task"},
		{[]string{"ready"}, 3, "No task is ready"},
		{[]string{"show", "9"}, 1, "task 9 not found"},
		{[]string{"show"}, 2, "usage: taskgraph show ID"},
		{[]string{"show", "abc"}, 2, "not a task id"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"dep", "add", "1", "2"}, 1, "dependency cycle 1 -> 2 -> 1"},
		{[]string{"--owner", "y", "done", "1"}, 3, `claimed by "x"`},
		{[]string{"done", "1"}, 0, ""},
		{[]string{"add", "c", "--after", "7"}, 1, "task 7 not found"},
		{[]string{"delete", "1"}, 1, "Detach"},
	}
	for _, c := range cases {
		r := tg(t, dir, c.args...)
		assert.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.stderr, "%v", c.args)
	}
}

func TestHelp(t *testing.T) {
	dir := t.TempDir()
	r := tg(t, dir, "--help")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Usage:\n\n\ttaskgraph <command> [arguments] [flags]")
	r = tg(t, dir, "help", "add")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stderr, "usage: taskgraph add SUBJECT")
	assert.Contains(t, r.stderr, "-after ID")
	r = tg(t, dir)
	assert.Equal(t, 2, r.code)
}

func TestGraph(t *testing.T) {
	dir := t.TempDir()
	tg(t, dir, "add", "parse")
	tg(t, dir, "add", "transform", "--after", "1")
	tg(t, dir, "add", "emit", "--after", "1")
	tg(t, dir, "add", "test", "--after", "2,3")
	r := tg(t, dir, "graph")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `flowchart LR
  t1["#1 parse"]:::ready
  t2["#2 transform"]:::blocked
  t3["#3 emit"]:::blocked
  t4["#4 test"]:::blocked
  t1 --> t2
  t1 --> t3
  t2 --> t4
  t3 --> t4
  classDef ready fill:#cfc
  classDef blocked fill:#fff
  classDef inprogress fill:#ffc
  classDef completed fill:#ddd
`, r.stdout)
	r = tg(t, dir, "graph", "--format", "dot")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "digraph tasks {")
	assert.Contains(t, r.stdout, "t2 -> t4;")
	assert.Equal(t, 2, tg(t, dir, "graph", "--format", "svg").code)
}

func TestEdit(t *testing.T) {
	dir := t.TempDir()
	tg(t, dir, "add", "old subject")
	tg(t, dir, "add", "other", "--after", "1")
	editor := func(script string) []string {
		path := filepath.Join(t.TempDir(), "editor.sh")
		require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
		return []string{"EDITOR=" + path}
	}
	run := func(env []string, args ...string) result {
		cmd := exec.Command(binary, args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "VISUAL="), env...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return result{out.String(), errb.String(), code}
	}
	r := run(editor(`sed -i 's/old subject/new subject/' "$1"`), "edit", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, tg(t, dir, "show", "1").stdout, "#1: new subject")

	// An edit that would close a cycle is refused and changes nothing.
	r = run(editor(`sed -i 's/"blockedBy": \[\]/"blockedBy": [2]/' "$1"`), "edit", "1")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "edit refused, nothing changed: dependency cycle")
	r = run(editor(`echo 'not json' > "$1"`), "edit", "1")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "not valid JSON")
	show := tg(t, dir, "show", "1", "--json")
	assert.Contains(t, show.stdout, `"blockedBy": []`)
}

func TestExportImportAndClaudeCode(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	tg(t, src, "add", "a")
	tg(t, src, "add", "b", "--after", "1")
	tg(t, src, "--owner", "me", "claim", "1")
	r := tg(t, src, "export")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.WriteFile(filepath.Join(dst, "plan.json"), []byte(r.stdout), 0o644))
	r = tg(t, dst, "import", "plan.json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "Imported 2 tasks into .tasks\n", r.stdout)
	assert.Equal(t, tg(t, src, "list").stdout, tg(t, dst, "list").stdout)
	assert.Equal(t, 1, tg(t, dst, "import", "plan.json").code, "ids already used")

	cc := t.TempDir()
	abs, err := filepath.Abs("../../claudecode/testdata/tasklist")
	require.NoError(t, err)
	r = tg(t, cc, "import", "--claude-code", abs)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[x] #1: Set up database schema @main\n[>] #2: Implement search endpoint @researcher\n[ ] #3: Write API docs\n[ ] #5: Publish the docs site (blocked by: [3])\n", tg(t, cc, "list").stdout)
}

func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	tg(t, dir, "add", "a")
	r := tg(t, dir, "check")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "no problems")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".tasks", "task_2.json"), []byte("{"), 0o644))
	r = tg(t, dir, "check", "--json")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, `"kind": "corrupt"`)
	r = tg(t, dir, "list")
	assert.Equal(t, 1, r.code, "corrupt files are reported")
	assert.Equal(t, "[ ] #1: a\n", r.stdout, "and the healthy tasks still listed")
}

func TestWatchCommand(t *testing.T) {
	dir := t.TempDir()
	tg(t, dir, "init")
	cmd := exec.Command(binary, "watch", "--json")
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Process.Kill()
	// Wait until it watches, then change the graph from another process.
	line, err := bufio.NewReader(stderr).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "Watching")
	tg(t, dir, "add", "seen by the watcher")
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan())
	assert.Contains(t, sc.Text(), `"kind":"created"`)
	assert.Contains(t, sc.Text(), `"subject":"seen by the watcher"`)
}

// The MCP server through the SDK's own client, in memory.
func TestMCPInMemory(t *testing.T) {
	ctx := context.Background()
	store := taskgraph.NewMemStore()
	server := newMCPServer(store, "mcp-agent")
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	require.NoError(t, err)
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	defer cs.Close()

	list, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	tools := agenttools.New(store).List()
	require.Len(t, list.Tools, len(tools))
	served := map[string]*mcp.Tool{}
	for _, tool := range list.Tools {
		served[tool.Name] = tool
	}
	for _, tool := range tools {
		require.Contains(t, served, tool.Name)
		assert.Equal(t, tool.Description, served[tool.Name].Description)
		var want any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &want))
		assert.Equal(t, want, served[tool.Name].InputSchema, "same schema as agenttools for %s", tool.Name)
	}
	text := func(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_create", Arguments: map[string]any{"subject": "via mcp"}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Contains(t, text(res), `"subject": "via mcp"`)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_claim_next", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Contains(t, text(res), `"owner": "mcp-agent"`)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_get", Arguments: map[string]any{"task_id": 9}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: task 9 not found", text(res))
}

// The built binary speaks JSON-RPC over stdin/stdout on a real directory.
func TestMCPBinary(t *testing.T) {
	dir := t.TempDir()
	tg(t, dir, "add", "existing task")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "mcp", "--owner", "stdio-agent")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	defer cmd.Wait()
	defer stdin.Close()
	out := bufio.NewScanner(stdout)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	send := func(msg string) {
		_, err := io.WriteString(stdin, msg+"\n")
		require.NoError(t, err)
	}
	reply := func(id int) map[string]any {
		for out.Scan() {
			var m map[string]any
			require.NoError(t, json.Unmarshal(out.Bytes(), &m), out.Text())
			if m["id"] == float64(id) {
				return m
			}
		}
		t.Fatalf("no reply %d: %v", id, out.Err())
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	init := reply(1)
	assert.Equal(t, "taskgraph", init["result"].(map[string]any)["serverInfo"].(map[string]any)["name"])
	send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	tools := reply(2)["result"].(map[string]any)["tools"].([]any)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	assert.ElementsMatch(t, []string{"task_create", "task_update", "task_list", "task_get", "task_claim", "task_claim_next", "task_complete", "task_release"}, names)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"task_claim","arguments":{"task_id":1}}}`)
	res := reply(3)["result"].(map[string]any)
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	assert.Contains(t, text, "Claimed #1: existing task")
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"task_list","arguments":{}}}`)
	res = reply(4)["result"].(map[string]any)
	assert.Equal(t, "[>] #1: existing task @stdio-agent", res["content"].([]any)[0].(map[string]any)["text"])
	stdin.Close()

	// The claim is on disk, where every other process sees it.
	assert.Contains(t, tg(t, dir, "show", "1").stdout, "owner:       stdio-agent")
}

// The same commands on a PostgreSQL graph with --store.
func TestStoreFlagPostgres(t *testing.T) {
	url := os.Getenv("TASKGRAPH_POSTGRES_URL")
	if url == "" {
		t.Skip("set TASKGRAPH_POSTGRES_URL to run the PostgreSQL tests; .ci/run sets it")
	}
	graph := fmt.Sprintf("cli-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() {
		pool, err := pgxpool.New(context.Background(), url)
		if err == nil {
			pool.Exec(context.Background(), `DELETE FROM taskgraph_graphs WHERE name = $1`, graph)
			pool.Close()
		}
	})
	dir := t.TempDir()
	pg := func(args ...string) result {
		return tg(t, dir, append([]string{"--store", url, "--graph", graph}, args...)...)
	}
	r := pg("add", "setup schema")
	require.Equal(t, 0, r.code, r.stderr)
	pg("add", "api", "--after", "1")
	r = pg("next")
	require.Equal(t, 0, r.code, r.stderr)
	r = pg("done", "1")
	assert.Equal(t, "Completed #1: setup schema\nUnblocked: #2 api\n", r.stdout)
	r = pg("list")
	assert.Contains(t, r.stdout, "[ ] #2: api\n")
	_, err := os.Stat(filepath.Join(dir, ".tasks"))
	assert.True(t, os.IsNotExist(err), "no directory is used with --store")
}

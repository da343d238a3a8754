package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// The MCP server through the SDK's own client, in memory: the same tools
// as agenttools, with titles, annotations and the error flag.
func TestMCPInMemory(t *testing.T) {
	ctx := context.Background()
	store := taskgraph.NewMemStore()
	server := newMCPServer(store, agenttools.WithOwner("mcp-agent"))
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
		got := served[tool.Name]
		assert.Equal(t, tool.Description, got.Description)
		assert.Equal(t, tool.Title, got.Title)
		assert.NotEmpty(t, got.Title)
		var want any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &want))
		assert.Equal(t, want, got.InputSchema, "same schema as agenttools for %s", tool.Name)
		if tool.OutputSchema == nil {
			assert.Nil(t, got.OutputSchema, tool.Name)
		} else {
			require.NoError(t, json.Unmarshal(tool.OutputSchema, &want))
			assert.Equal(t, want, got.OutputSchema, "same output schema as agenttools for %s", tool.Name)
		}
		require.NotNil(t, got.Annotations, tool.Name)
		assert.Equal(t, tool.Title, got.Annotations.Title)
		require.NotNil(t, got.Annotations.OpenWorldHint)
		assert.False(t, *got.Annotations.OpenWorldHint)
	}
	hints := func(name string) (readOnly, destructive, idempotent bool) {
		a := served[name].Annotations
		return a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint
	}
	for _, name := range []string{"task_list", "task_get", "task_wait"} {
		ro, _, idem := hints(name)
		assert.True(t, ro, name)
		assert.True(t, idem, name)
	}
	for _, name := range []string{"task_create", "task_update", "task_claim", "task_claim_next", "task_complete", "task_fail", "task_plan", "task_release", "task_renew"} {
		ro, destructive, _ := hints(name)
		assert.False(t, ro, name)
		assert.False(t, destructive, name)
	}
	ro, destructive, idem := hints("task_delete")
	assert.False(t, ro)
	assert.True(t, destructive)
	assert.True(t, idem)
	_, _, idem = hints("task_create")
	assert.False(t, idem)

	text := func(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_create", Arguments: map[string]any{"subject": "via mcp"}})
	require.NoError(t, err)
	assert.False(t, res.IsError)
	assert.Contains(t, text(res), `"subject": "via mcp"`)
	assert.Nil(t, res.StructuredContent, "task_create has no output schema")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_claim_next", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Contains(t, text(res), `"owner": "mcp-agent"`)
	assert.Equal(t, map[string]any{"outcome": "claimed", "task": map[string]any{"id": 1.0, "subject": "via mcp", "status": "in_progress", "owner": "mcp-agent"}},
		res.StructuredContent, "the claim as structured content")
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_get", Arguments: map[string]any{"task_id": 9}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Equal(t, "Error: task 9 not found", text(res))
	assert.Nil(t, res.StructuredContent, "a failed call has none")
}

// mcpProc is a `taskgraph mcp` process spoken to in raw JSON-RPC lines.
type mcpProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
}

func startMCP(t *testing.T, dir string, env []string, args ...string) *mcpProc {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	out := bufio.NewScanner(stdout)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	p := &mcpProc{t: t, cmd: cmd, stdin: stdin, out: out}
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	init := p.reply()
	require.Equal(t, 1.0, init["id"], init)
	assert.Equal(t, "taskgraph", init["result"].(map[string]any)["serverInfo"].(map[string]any)["name"])
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`)
	return p
}

func (p *mcpProc) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.stdin, line+"\n")
	require.NoError(p.t, err)
}

// reply reads the next message the server writes.
func (p *mcpProc) reply() map[string]any {
	p.t.Helper()
	require.True(p.t, p.out.Scan(), "the server stopped: %v", p.out.Err())
	var m map[string]any
	require.NoError(p.t, json.Unmarshal(p.out.Bytes(), &m), p.out.Text())
	return m
}

// call calls a tool and returns its text and error flag.
func (p *mcpProc) call(id int, tool, args string) (string, bool) {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":` + strings.TrimSpace(jsonNum(id)) + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`)
	m := p.reply()
	require.Equal(p.t, float64(id), m["id"], m)
	res := m["result"].(map[string]any)
	isErr, _ := res["isError"].(bool)
	return res["content"].([]any)[0].(map[string]any)["text"].(string), isErr
}

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

// The built binary speaks JSON-RPC over stdin/stdout on a real directory.
func TestMCPBinary(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "existing task")
	p := startMCP(t, dir, cleanEnv(), "--owner", "stdio-agent", "--lease", "10m")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	tools := p.reply()["result"].(map[string]any)["tools"].([]any)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	assert.ElementsMatch(t, []string{"task_create", "task_update", "task_list", "task_get", "task_plan", "task_claim", "task_claim_next", "task_wait", "task_complete", "task_fail", "task_note", "task_release", "task_renew", "task_delete"}, names)
	text, isErr := p.call(3, "task_claim", `{"task_id":1}`)
	assert.False(t, isErr)
	assert.Contains(t, text, "Claimed #1: existing task")
	assert.Contains(t, text, `"leaseExpiresAt"`, "--lease leases the claims")
	text, _ = p.call(4, "task_list", `{}`)
	assert.Equal(t, "[>] #1: existing task @stdio-agent", text)
	p.send(`{"jsonrpc":"2.0","id":40,"method":"tools/call","params":{"name":"task_list","arguments":{}}}`)
	structured := p.reply()["result"].(map[string]any)["structuredContent"].(map[string]any)["tasks"].([]any)
	require.Len(t, structured, 1)
	assert.Equal(t, "stdio-agent", structured[0].(map[string]any)["owner"], "task_list's structuredContent, on the wire")
	text, isErr = p.call(5, "task_renew", `{"task_id":1}`)
	assert.False(t, isErr, text)
	assert.Contains(t, text, "Renewed #1: existing task")

	// The claim is on disk, where every other process sees it.
	assert.Contains(t, ok(t, dir, "show", "1"), "owner:       stdio-agent")
	lease, err := time.Parse(time.RFC3339, showJSON(t, dir, 1)["leaseExpiresAt"].(string))
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now().Add(10*time.Minute), lease, time.Minute)
}

// Lines that are not JSON-RPC messages get JSON-RPC errors, and the server
// goes on serving; at the end of its input it exits cleanly.
func TestMCPSurvivesGarbageFrames(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a task")
	p := startMCP(t, dir, cleanEnv(), "--owner", "x")
	garbage := []struct {
		line string
		code float64
		id   any
	}{
		{"this is not json", -32700, nil},
		{`{"jsonrpc":"2.0","id":7,"method":`, -32700, nil},
		{`{"a":1} {"b":2}`, -32700, nil},
		{`[]`, -32600, nil},
		{`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, -32600, nil},
		{`{"jsonrpc":"1.0","id":9,"method":"ping"}`, -32600, 9.0},
		{`{"jsonrpc":"2.0"}`, -32600, nil},
		{`{"jsonrpc":"2.0","id":10,"method":5}`, -32600, 10.0},
		{`{"jsonrpc":"2.0","id":{"no":1},"method":"ping"}`, -32600, nil},
		{`42`, -32600, nil},
		{`"hello"`, -32600, nil},
		{"\x00\x01\x02", -32700, nil},
	}
	for i, g := range garbage {
		p.send(g.line)
		m := p.reply()
		assert.Equal(t, "2.0", m["jsonrpc"], g.line)
		assert.Equal(t, g.id, m["id"], g.line)
		require.Contains(t, m, "error", g.line)
		assert.Equal(t, g.code, m["error"].(map[string]any)["code"], g.line)
		// Still serving.
		text, isErr := p.call(100+i, "task_get", `{"task_id":1}`)
		assert.False(t, isErr)
		assert.Contains(t, text, `"subject": "a task"`)
	}
	// Empty lines are skipped, as whitespace between messages.
	p.send("")
	p.send(`{"jsonrpc":"2.0","id":200,"method":"ping"}`)
	assert.Equal(t, 200.0, p.reply()["id"])
	// Well-formed requests the server cannot take are the SDK's to answer.
	for i, line := range []string{
		`{"jsonrpc":"2.0","id":201,"method":"no/such","params":{}}`,
		`{"jsonrpc":"2.0","id":202,"method":"tools/call","params":"garbage"}`,
		`{"jsonrpc":"2.0","id":203,"method":"tools/call","params":{"name":"task_get","arguments":[1]}}`,
	} {
		p.send(line)
		m := p.reply()
		assert.Equal(t, float64(201+i), m["id"], line)
		if _, isErr := m["error"]; !isErr {
			assert.Equal(t, true, m["result"].(map[string]any)["isError"], line)
		}
	}
	text, _ := p.call(204, "task_get", `{"task_id":1}`)
	assert.Contains(t, text, `"subject": "a task"`)
	p.stdin.Close()
	require.NoError(t, p.cmd.Wait(), "a clean exit at the end of the input")
}

// garbageWriter writes a garbage line before each message of the client.
type garbageWriter struct {
	w     io.WriteCloser
	lines []string
	n     atomic.Int64
}

func (g *garbageWriter) Write(p []byte) (int, error) {
	line := g.lines[int(g.n.Add(1)-1)%len(g.lines)]
	if _, err := io.WriteString(g.w, line+"\n"); err != nil {
		return 0, err
	}
	return g.w.Write(p)
}

func (g *garbageWriter) Close() error { return g.w.Close() }

// The official SDK client, talking to the built binary through a pipe that
// slips a garbage line before every one of its messages: each gets a
// JSON-RPC error (which the test takes out of the stream: the SDK client
// would, rightly, drop a connection that sends it a response to no
// request), and every call of the client works.
func TestMCPSDKClientWithGarbage(t *testing.T) {
	dir := project(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "mcp")
	cmd.Dir = dir
	cmd.Env = cleanEnv("TASKGRAPH_OWNER=a-person")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Wait()

	pr, pw := io.Pipe()
	var mu sync.Mutex
	var errorReplies []map[string]any
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["id"] == nil && m["error"] != nil {
				mu.Lock()
				errorReplies = append(errorReplies, m)
				mu.Unlock()
				continue
			}
			pw.Write(append(sc.Bytes(), '\n'))
		}
		pw.Close()
	}()
	gw := &garbageWriter{w: stdin, lines: []string{"garbage", "{not json", `[]`, `{"jsonrpc":"2.0"}`}}
	client := mcp.NewClient(&mcp.Implementation{Name: "sdk-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: pr, Writer: gw}, nil)
	require.NoError(t, err)
	defer cs.Close()

	text := func(r *mcp.CallToolResult) string { return r.Content[0].(*mcp.TextContent).Text }
	for i := range 5 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_create", Arguments: map[string]any{"subject": "task " + jsonNum(i)}})
		require.NoError(t, err)
		require.False(t, res.IsError, text(res))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_claim_next", Arguments: map[string]any{}})
	require.NoError(t, err)
	// Without --owner, the server is its own agent, not the person of
	// $TASKGRAPH_OWNER.
	assert.Regexp(t, `"owner": "mcp-[^"]+-\d+-[0-9a-f]{6}"`, text(res))
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "task_list", Arguments: map[string]any{}})
	require.NoError(t, err)
	assert.Contains(t, text(res), "[ ] #5: task 4")
	require.NoError(t, cs.Close())

	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, len(errorReplies), 8, "one error per garbage line")
	assert.LessOrEqual(t, int64(len(errorReplies)), gw.n.Load())
	for _, m := range errorReplies {
		code := m["error"].(map[string]any)["code"]
		assert.Contains(t, []any{-32700.0, -32600.0}, code)
	}
}

// Two MCP servers on one directory, with no --owner, are two agents: one
// cannot complete or take the other's claim. --owner overrides.
func TestMCPIdentityPerProcess(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "contested")
	ok(t, dir, "add", "second")
	env := cleanEnv("TASKGRAPH_OWNER=shared-person")
	one := startMCP(t, dir, env)
	two := startMCP(t, dir, env)
	text, isErr := one.call(10, "task_claim", `{"task_id":1}`)
	require.False(t, isErr, text)
	for _, c := range []struct{ tool, args string }{
		{"task_claim", `{"task_id":1}`}, {"task_complete", `{"task_id":1}`}, {"task_release", `{"task_id":1}`},
		{"task_update", `{"task_id":1,"status":"completed"}`}, {"task_renew", `{"task_id":1,"seconds":60}`},
	} {
		text, isErr = two.call(11, c.tool, c.args)
		assert.True(t, isErr, "%s: %s", c.tool, text)
		assert.Contains(t, text, "is claimed by \"mcp-")
	}
	owner := showJSON(t, dir, 1)["owner"].(string)
	assert.Regexp(t, `^mcp-.+-\d+-[0-9a-f]{6}$`, owner)
	assert.NotEqual(t, "shared-person", owner)
	text, _ = two.call(12, "task_claim", `{"task_id":2}`)
	assert.NotContains(t, text, owner, "a different identity")

	named := startMCP(t, dir, env, "--owner", "named-agent")
	text, isErr = named.call(13, "task_create", `{"subject":"third"}`)
	require.False(t, isErr, text)
	text, _ = named.call(14, "task_claim_next", `{}`)
	assert.Contains(t, text, `"owner": "named-agent"`)
}

// Requests written in one go, and stdin closed at once: every request read
// is answered before the process exits, and the graph holds exactly what
// the replies say — no claim made and never reported.
func TestMCPAnswersEveryRequestBeforeExit(t *testing.T) {
	for round := range 5 {
		dir := project(t)
		ok(t, dir, "add", "existing")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, binary, "mcp", "--owner", "eof-agent")
		cmd.Dir = dir
		cmd.Env = cleanEnv()
		var in strings.Builder
		in.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}` + "\n")
		const creates = 8
		ids := []any{1.0, "claim", "ping"}
		for i := range creates {
			id := 10 + i
			ids = append(ids, float64(id))
			in.WriteString(`{"jsonrpc":"2.0","id":` + jsonNum(id) + `,"method":"tools/call","params":{"name":"task_create","arguments":{"subject":"created ` + jsonNum(i) + `"}}}` + "\n")
		}
		in.WriteString(`{"jsonrpc":"2.0","id":"claim","method":"tools/call","params":{"name":"task_claim","arguments":{"task_id":1}}}` + "\n")
		in.WriteString(`{"jsonrpc":"2.0","id":"ping","method":"ping"}` + "\n")
		cmd.Stdin = strings.NewReader(in.String()) // closed as soon as it is written
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		require.NoError(t, err, "a clean exit: %s", stderr.String())

		replies := map[any]map[string]any{}
		for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(line), &m), line)
			require.NotContains(t, replies, m["id"], "one reply a request")
			replies[m["id"]] = m
		}
		for _, id := range ids {
			require.Contains(t, replies, id, "round %d: no reply to request %v before exit; got %d replies: %s", round, id, len(replies), stdout)
			assert.NotContains(t, replies[id], "error", "round %d: request %v", round, id)
		}
		require.Len(t, replies, creates+3)

		// The graph holds what the replies said: every task created, the claim made.
		var tasks []map[string]any
		require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "list", "--json")), &tasks))
		assert.Len(t, tasks, 1+creates)
		claim := replies["claim"]["result"].(map[string]any)
		assert.NotEqual(t, true, claim["isError"], claim)
		assert.Equal(t, "eof-agent", showJSON(t, dir, 1)["owner"])
	}
}

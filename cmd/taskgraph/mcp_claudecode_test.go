package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// taskgraph mcp --tools claude-code serves Claude Code's four tools, with
// the schemas of agenttools.ClaudeCode (pinned by its golden files), on
// the directory every other process sees, as its own identity.
func TestMCPClaudeCodeTools(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "existing task")
	p := startMCP(t, dir, cleanEnv(), "--owner", "cc-agent", "--tools", "claude-code")
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	served := p.reply()["result"].(map[string]any)["tools"].([]any)
	want := agenttools.ClaudeCode(taskgraph.NewMemStore()).List()
	require.Len(t, served, len(want))
	byName := map[string]map[string]any{}
	for _, s := range served {
		byName[s.(map[string]any)["name"].(string)] = s.(map[string]any)
	}
	for _, tool := range want {
		got := byName[tool.Name]
		require.NotNil(t, got, "%s is served", tool.Name)
		assert.Equal(t, tool.Description, got["description"])
		var schema any
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
		assert.Equal(t, schema, got["inputSchema"], tool.Name)
	}

	text, isErr := p.call(3, "TaskCreate", `{"subject":"write tests","description":"for the parser","activeForm":"Writing tests"}`)
	require.False(t, isErr, text)
	assert.Equal(t, "Task #2 created successfully: write tests", text)
	text, isErr = p.call(4, "TaskUpdate", `{"taskId":"2","addBlockedBy":["1"]}`)
	require.False(t, isErr, text)
	text, isErr = p.call(5, "TaskUpdate", `{"taskId":"1","addBlockedBy":["2"]}`)
	assert.True(t, isErr)
	assert.Equal(t, "Error: adding 2 -> 1 would create a cycle 1 -> 2 -> 1", text)
	text, isErr = p.call(6, "TaskUpdate", `{"taskId":"1","status":"in_progress"}`)
	require.False(t, isErr, text)
	text, _ = p.call(7, "TaskList", `{}`)
	assert.Equal(t, "#1 [in_progress] existing task (cc-agent)\n#2 [pending] write tests [blocked by #1]", text)
	text, isErr = p.call(8, "TaskUpdate", `{"taskId":"1","owner":"someone-else"}`)
	assert.True(t, isErr, text)

	// The CLI sees the claim and the edge.
	assert.Contains(t, ok(t, dir, "list"), "[>] #1: existing task @cc-agent")
	assert.Equal(t, "Writing tests", showJSON(t, dir, 2)["metadata"].(map[string]any)["activeForm"])

	// Both sets at once, and a set that does not exist.
	both := startMCP(t, dir, cleanEnv(), "--owner", "x", "--tools", "taskgraph,claude-code")
	both.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	assert.Len(t, both.reply()["result"].(map[string]any)["tools"].([]any), len(agenttools.New(taskgraph.NewMemStore()).List())+4)
	r := tg(t, dir, "mcp", "--tools", "claude")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "want taskgraph, claude-code")
}

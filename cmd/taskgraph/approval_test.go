package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// TestApproveCommand: real processes. add --needs-approval holds a task:
// next claims nothing (exit 3, saying why), claim is refused, list,
// board and explain say it awaits approval; approve records who, and the
// task can be claimed; reject cancels and names what it strands, and the
// history records who; a task that does not await approval is refused.
func TestApproveCommand(t *testing.T) {
	dir := project(t)
	assert.Contains(t, ok(t, dir, "add", "deploy prod", "--needs-approval"), "Created #1")
	ok(t, dir, "add", "smoke test", "--after", "1")
	assert.Contains(t, ok(t, dir, "list"), "#1: deploy prod (awaiting approval)")
	assert.Contains(t, ok(t, dir, "board"), "Awaiting approval (1)\n  [ ] #1: deploy prod")
	assert.Contains(t, ok(t, dir, "list", "--state", "awaiting_approval"), "#1: deploy prod")
	assert.Contains(t, ok(t, dir, "explain", "1"), "task 1 awaits approval")
	r := tg(t, dir, "next", "--owner", "bot")
	assert.Equal(t, 3, r.code, r.stderr)
	assert.Contains(t, r.stderr, "1 awaiting approval")
	r = tg(t, dir, "claim", "1", "--owner", "bot")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "awaits approval")

	assert.Contains(t, ok(t, dir, "approve", "1", "--owner", "alice"), "Approved #1: deploy prod (by alice")
	assert.Contains(t, ok(t, dir, "history", "1"), "approved by alice")
	assert.Contains(t, ok(t, dir, "next", "--owner", "bot"), "Claimed #1")
	r = tg(t, dir, "approve", "1", "--owner", "alice")
	assert.NotEqual(t, 0, r.code, "approved once: %s", r.stdout)

	ok(t, dir, "add", "drop table", "--needs-approval")
	ok(t, dir, "add", "after drop", "--after", "3")
	out := ok(t, dir, "reject", "3", "too risky", "--owner", "bob")
	assert.Contains(t, out, "Rejected (cancelled) #3: drop table (too risky)")
	assert.Contains(t, out, "Cannot start until #3 is reopened: #4")
	assert.Contains(t, ok(t, dir, "history", "3"), "rejected by bob")
	var task struct {
		NeedsApproval bool   `json:"needsApproval"`
		CreatedVia    string `json:"createdVia"`
		Status        string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "show", "3", "--json")), &task))
	assert.Equal(t, "cancelled", task.Status)
	assert.True(t, task.NeedsApproval, "reopened, it would await approval again")
	assert.Equal(t, taskgraph.ViaCLI, task.CreatedVia)
}

// TestApprovalPolicyCommand: approval --label/--via sets the policy,
// which add then applies, and prints it; --none removes it; a bad one is
// a usage error.
func TestApprovalPolicyCommand(t *testing.T) {
	dir := project(t)
	assert.Contains(t, ok(t, dir, "approval"), "No approval policy")
	out := ok(t, dir, "approval", "--label", "prod", "--via", "tools,mcp")
	assert.Equal(t, "New tasks labelled prod need approval\nNew tasks created through mcp, tools need approval\n", out)
	ok(t, dir, "add", "ship", "--label", "prod")
	assert.Contains(t, ok(t, dir, "list"), "#1: ship {prod} (awaiting approval)")
	ok(t, dir, "add", "tidy", "--label", "dev")
	assert.NotContains(t, ok(t, dir, "list"), "#2: tidy {dev} (awaiting")
	assert.Contains(t, ok(t, dir, "approval", "--none"), "No approval policy")
	assert.Equal(t, 2, tg(t, dir, "approval", "--via", "Not A Way").code)
}

// TestLinkCommand: link adds links, a set; show prints them; a bad link
// is a usage error.
func TestLinkCommand(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "fix the parser")
	assert.Contains(t, ok(t, dir, "link", "1", "https://example.com/pr/7", "c0ffee1"), "Linked #1: https://example.com/pr/7, c0ffee1")
	ok(t, dir, "link", "1", "c0ffee1")
	show := ok(t, dir, "show", "1")
	assert.Contains(t, show, "links:       https://example.com/pr/7")
	assert.Equal(t, 1, strings.Count(show, "c0ffee1"), "a set: %s", show)
	assert.Equal(t, 2, tg(t, dir, "link", "1").code)
	assert.Equal(t, 2, tg(t, dir, "link", "1", "two\nlines").code)
}

// TestMCPTasksAwaitApproval: real processes. With the policy "every task
// created through MCP needs approval", a task a model creates through
// taskgraph mcp awaits approval; no tool approves; the model cannot claim
// it; a person approves with the CLI and the model claims it.
func TestMCPTasksAwaitApproval(t *testing.T) {
	dir := project(t)
	ok(t, dir, "approval", "--via", "mcp")
	m := startMCP(t, dir, cleanEnv(), "--owner", "model")
	m.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	list := m.reply()
	data, _ := json.Marshal(list)
	assert.NotContains(t, strings.ToLower(string(data)), "approv", "no tool approves")
	text, isErr := m.call(3, "task_create", `{"subject":"rewrite history"}`)
	require.False(t, isErr, text)
	assert.Contains(t, ok(t, dir, "list"), "#1: rewrite history (awaiting approval)")
	text, isErr = m.call(4, "task_claim", `{"task_id":1}`)
	assert.True(t, isErr)
	assert.Contains(t, text, "awaits approval")
	ok(t, dir, "approve", "1", "--owner", "alice")
	text, isErr = m.call(5, "task_claim", `{"task_id":1}`)
	assert.False(t, isErr, text)
}

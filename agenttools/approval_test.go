package agenttools_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// TestToolsNeverApprove: the tools record how their tasks were created
// (ViaTools, or WithCreatedVia's), so the policy "every task a model
// creates needs approval" gates them; no tool approves, and none can
// claim or start a task awaiting approval, which the model is told;
// task_get shows the gate. After a person approves, the model can claim
// it.
func TestToolsNeverApprove(t *testing.T) {
	ctx := context.Background()
	store := taskgraph.NewMemStore()
	require.NoError(t, store.SetApprovalPolicy(ctx, taskgraph.ApprovalPolicy{Via: []string{taskgraph.ViaTools, taskgraph.ViaMCP}}))
	tools := agenttools.New(store, agenttools.WithOwner("agent-1"))
	for _, tool := range tools.List() {
		assert.NotContains(t, strings.ToLower(tool.Name+string(tool.InputSchema)), "approv", "no tool offers approval")
	}
	call := func(tools *agenttools.Tools, name, input string) agenttools.Result {
		t.Helper()
		res, err := tools.Call(ctx, name, json.RawMessage(input))
		require.NoError(t, err)
		return res
	}
	res := call(tools, "task_create", `{"subject": "drop the old table"}`)
	require.False(t, res.IsError, res.Text)
	task, err := store.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, taskgraph.ViaTools, task.Extra.CreatedVia)
	assert.True(t, task.AwaitingApproval(), "the policy gates what a model creates")
	assert.Contains(t, call(tools, "task_get", `{"task_id": 1}`).Text, `"awaitingApproval": true`)

	for _, c := range []struct{ name, input string }{
		{"task_claim", `{"task_id": 1}`},
		{"task_update", `{"task_id": 1, "status": "in_progress"}`},
	} {
		res := call(tools, c.name, c.input)
		assert.True(t, res.IsError, "%s: %s", c.name, res.Text)
		assert.Contains(t, res.Text, "awaits approval", c.name)
	}
	res = call(tools, "task_claim_next", `{}`)
	assert.Contains(t, res.Text, "1 awaiting a person's approval")

	mcp := agenttools.New(store, agenttools.WithOwner("agent-2"), agenttools.WithCreatedVia(taskgraph.ViaMCP))
	require.False(t, call(mcp, "task_plan", `{"tasks": [{"key": "a", "subject": "a"}]}`).IsError)
	planned, err := store.Get(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, taskgraph.ViaMCP, planned.Extra.CreatedVia)
	assert.True(t, planned.AwaitingApproval())

	_, err = store.Approve(ctx, 1, "alice")
	require.NoError(t, err)
	res = call(tools, "task_claim", `{"task_id": 1}`)
	assert.False(t, res.IsError, res.Text)
}

// TestToolsAddLinks: task_update adds links, a set; task_get shows them.
func TestToolsAddLinks(t *testing.T) {
	ctx := context.Background()
	store := taskgraph.NewMemStore()
	tools := agenttools.New(store, agenttools.WithOwner("agent-1"))
	for _, in := range []string{`{"subject": "fix"}`} {
		res, err := tools.Call(ctx, "task_create", json.RawMessage(in))
		require.NoError(t, err)
		require.False(t, res.IsError, res.Text)
	}
	res, err := tools.Call(ctx, "task_update", json.RawMessage(`{"task_id": 1, "addLinks": ["https://example.com/pr/7", "abc1234"]}`))
	require.NoError(t, err)
	require.False(t, res.IsError, res.Text)
	res, err = tools.Call(ctx, "task_update", json.RawMessage(`{"task_id": 1, "addLinks": ["abc1234"]}`))
	require.NoError(t, err)
	require.False(t, res.IsError, res.Text)
	task, err := store.Get(ctx, 1)
	require.NoError(t, err)
	require.NotNil(t, task.Extra)
	assert.Len(t, task.Extra.Links, 2)
	res, err = tools.Call(ctx, "task_get", json.RawMessage(`{"task_id": 1}`))
	require.NoError(t, err)
	assert.Contains(t, res.Text, `"https://example.com/pr/7"`)
	res, err = tools.Call(ctx, "task_update", json.RawMessage(`{"task_id": 1, "addLinks": ["two\nlines"]}`))
	require.NoError(t, err)
	assert.True(t, res.IsError, "a bad link is refused: %s", res.Text)
}

package agenttools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// The four schemas are pinned by golden files, and their argument names
// and types are Claude Code's: checked here too, so that rewriting the
// golden files cannot change them unnoticed.
func TestClaudeCodeSchemas(t *testing.T) {
	tools := agenttools.ClaudeCode(taskgraph.NewMemStore()).List()
	type prop struct{ name, typ string }
	want := map[string]struct {
		props    []prop
		required []string
	}{
		"TaskCreate": {[]prop{{"activeForm", "string"}, {"description", "string"}, {"metadata", "object"}, {"subject", "string"}}, []string{"subject", "description"}},
		"TaskGet":    {[]prop{{"taskId", "string"}}, []string{"taskId"}},
		"TaskUpdate": {[]prop{{"activeForm", "string"}, {"addBlockedBy", "array"}, {"addBlocks", "array"}, {"description", "string"},
			{"metadata", "object"}, {"owner", "string"}, {"removeBlockedBy", "array"}, {"removeBlocks", "array"},
			{"status", "string"}, {"subject", "string"}, {"taskId", "string"}}, []string{"taskId"}},
		"TaskList": {nil, nil},
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Name)
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, tool.InputSchema, "", "  "), tool.Name)
		golden(t, "schema_"+tool.Name+".golden", []byte(fmt.Sprintf("%s\n%s\n%s\n", tool.Name, tool.Description, pretty.String())))

		var schema struct {
			Type       string `json:"type"`
			Properties map[string]struct {
				Type  string   `json:"type"`
				Enum  []string `json:"enum"`
				Items *struct {
					Type string `json:"type"`
				} `json:"items"`
			} `json:"properties"`
			Required             []string `json:"required"`
			AdditionalProperties *bool    `json:"additionalProperties"`
		}
		require.NoError(t, json.Unmarshal(tool.InputSchema, &schema))
		assert.Equal(t, "object", schema.Type)
		require.NotNil(t, schema.AdditionalProperties, tool.Name)
		assert.False(t, *schema.AdditionalProperties, "%s is a strict object", tool.Name)
		var got []prop
		for name, p := range schema.Properties {
			got = append(got, prop{name, p.Type})
			if p.Type == "array" {
				require.NotNil(t, p.Items, "%s.%s", tool.Name, name)
				assert.Equal(t, "string", p.Items.Type, "%s.%s: ids are strings", tool.Name, name)
			}
		}
		sort.Slice(got, func(i, j int) bool { return got[i].name < got[j].name })
		assert.Equal(t, want[tool.Name].props, got, tool.Name)
		assert.Equal(t, want[tool.Name].required, schema.Required, tool.Name)
		if tool.Name == "TaskUpdate" {
			assert.Equal(t, []string{"pending", "in_progress", "completed", "deleted"}, schema.Properties["status"].Enum)
		}
	}
	assert.Equal(t, []string{"TaskCreate", "TaskGet", "TaskUpdate", "TaskList"}, names)
}

// A session in Claude Code's shapes, with every kind of refusal, against
// the golden transcript.
func TestClaudeCodeSession(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }
	store := taskgraph.NewMemStore(taskgraph.WithClock(clock))
	me := agenttools.ClaudeCode(store, agenttools.WithOwner("agent-1"))
	other := agenttools.ClaudeCode(store, agenttools.WithOwner("agent-2"))
	calls := []struct {
		who         *agenttools.Tools
		name, input string
	}{
		{me, "TaskList", `{}`},
		{me, "TaskCreate", `{"subject": "Set up database schema", "description": "users and sessions tables", "activeForm": "Setting up database schema"}`},
		{me, "TaskCreate", `{"subject": "Write API", "description": "REST endpoints"}`},
		{me, "TaskCreate", `{"subject": "Write docs", "description": "", "metadata": {"area": "docs"}}`},
		{me, "TaskUpdate", `{"taskId": "2", "addBlockedBy": ["1"]}`},
		{me, "TaskUpdate", `{"taskId": "1", "addBlocks": ["3"]}`},
		{me, "TaskList", `{}`},
		{me, "TaskUpdate", `{"taskId": "2", "status": "in_progress"}`},
		{me, "TaskUpdate", `{"taskId": "1", "status": "in_progress"}`},
		{me, "TaskGet", `{"taskId": "1"}`},
		{me, "TaskGet", `{"taskId": "2"}`},
		{other, "TaskUpdate", `{"taskId": "1", "status": "completed"}`},
		{other, "TaskUpdate", `{"taskId": "1", "status": "deleted"}`},
		{other, "TaskUpdate", `{"taskId": "1", "owner": "agent-2"}`},
		{me, "TaskUpdate", `{"taskId": "1", "addBlockedBy": ["2"]}`},
		{me, "TaskUpdate", `{"taskId": "2", "addBlockedBy": ["9"]}`},
		{me, "TaskUpdate", `{"taskId": "2", "addBlockedBy": ["2"]}`},
		{me, "TaskUpdate", `{"taskId": "1", "status": "completed"}`},
		{me, "TaskList", `{}`},
		{me, "TaskUpdate", `{"taskId": "3", "removeBlockedBy": ["1"]}`},
		{me, "TaskUpdate", `{"taskId": "3", "owner": "researcher"}`},
		{me, "TaskUpdate", `{"taskId": "3", "owner": "agent-1"}`},
		{me, "TaskUpdate", `{"taskId": "3", "owner": ""}`},
		{me, "TaskUpdate", `{"taskId": "3", "subject": "Write the docs", "metadata": {"area": null, "reviewed": true}}`},
		{me, "TaskGet", `{"taskId": "3"}`},
		{me, "TaskUpdate", `{"taskId": "3"}`},
		{me, "TaskUpdate", `{"taskId": "2", "status": "deleted"}`},
		{me, "TaskGet", `{"taskId": "2"}`},
		{me, "TaskGet", `{"taskId": 3}`},
		{me, "TaskGet", `{"taskId": "#3"}`},
		{me, "TaskGet", `{"taskId": "abc"}`},
		{me, "TaskGet", `{"taskId": "0"}`},
		{me, "TaskGet", `{}`},
		{me, "TaskUpdate", `{"taskId": "3", "status": "failed"}`},
		{me, "TaskUpdate", `{"taskId": "3", "status": "deleted", "subject": "x"}`},
		{me, "TaskUpdate", `{"taskId": "3", "addBlockedBy": [1]}`},
		{me, "TaskUpdate", `{"taskId": "3", "colour": "red"}`},
		{me, "TaskCreate", `{"description": "no subject"}`},
		{me, "TaskCreate", `{"subject": "x", "metadata": "not an object"}`},
		{me, "TaskList", `{"all": true}`},
		{me, "TaskList", `{}`},
		{me, "task_list", `{}`},
	}
	var transcript bytes.Buffer
	for _, c := range calls {
		res, err := c.who.Call(context.Background(), c.name, json.RawMessage(c.input))
		require.NoError(t, err, "%s %s", c.name, c.input)
		assert.Equal(t, strings.HasPrefix(res.Text, "Error: "), res.IsError, "%s %s: the flag and the text agree", c.name, c.input)
		if res.IsError {
			assert.NotRegexp(t, goNames, res.Text, "%s %s", c.name, c.input)
		}
		fmt.Fprintf(&transcript, "> %s %s\n%s\n\n", c.name, c.input, res.Text)
	}
	golden(t, "claudecode_session.golden", transcript.Bytes())
	// activeForm lives where the claudecode import puts it.
	assert.Equal(t, "Setting up database schema", get(t, store, 1).Metadata["activeForm"])
}

// Every change another identity tries to make to the status or owner of
// a task one holds or completed is refused, and nothing is written; edges
// and text may be edited on any task.
func TestClaudeCodeClaimSafety(t *testing.T) {
	stores(t, func(t *testing.T, store taskgraph.Store, clk *clock) {
		a := agenttools.ClaudeCode(store, agenttools.WithOwner("model-A"))
		b := agenttools.ClaudeCode(store, agenttools.WithOwner("model-B"), agenttools.WithLease(time.Minute))
		mustCall(t, a, "TaskCreate", `{"subject": "held by A", "description": ""}`)
		mustCall(t, a, "TaskCreate", `{"subject": "completed by A", "description": ""}`)
		mustCall(t, a, "TaskCreate", `{"subject": "free", "description": ""}`)
		mustCall(t, a, "TaskUpdate", `{"taskId": "1", "status": "in_progress"}`)
		mustCall(t, a, "TaskUpdate", `{"taskId": "2", "status": "completed"}`)
		require.Equal(t, "model-A", get(t, store, 2).Owner)

		before := snapshot(t, store)
		for _, id := range []int{1, 2} {
			for _, change := range []string{`"status": "pending"`, `"status": "in_progress"`, `"status": "completed"`, `"status": "deleted"`,
				`"owner": "model-B"`, `"owner": ""`, `"owner": "model-A"`, `"status": "completed", "addBlocks": ["3"]`,
				`"status": "pending", "subject": "mine now"`} {
				in := fmt.Sprintf(`{"taskId": "%d", %s}`, id, change)
				if id == 2 && strings.HasPrefix(change, `"status": "completed"`) {
					continue // already completed: no change of status asked (edges may change on any task)
				}
				res := call(t, b, "TaskUpdate", in)
				assert.True(t, res.IsError, "model-B TaskUpdate %s was accepted: %s", in, res.Text)
			}
		}
		assert.Equal(t, before, snapshot(t, store), "nothing was written")

		// Edges and text may be edited on any task.
		assert.Equal(t, "Updated task #1 addBlocks", mustCall(t, b, "TaskUpdate", `{"taskId": "1", "addBlocks": ["3"]}`))
		assert.Equal(t, []taskgraph.ID{1}, get(t, store, 3).BlockedBy)
		mustCall(t, b, "TaskUpdate", `{"taskId": "1", "description": "see the ticket"}`)
		assert.Equal(t, "model-A", get(t, store, 1).Owner)

		// B's own claim has B's lease.
		mustCall(t, b, "TaskUpdate", `{"taskId": "3", "removeBlockedBy": ["1"]}`)
		mustCall(t, b, "TaskUpdate", `{"taskId": "3", "status": "in_progress"}`)
		three := get(t, store, 3)
		assert.Equal(t, "model-B", three.Owner)
		assert.Equal(t, clk.Now().Add(time.Minute), three.LeaseExpiresAt.UTC())
		// And A cannot delete it.
		assert.True(t, call(t, a, "TaskUpdate", `{"taskId": "3", "status": "deleted"}`).IsError)
		mustCall(t, b, "TaskUpdate", `{"taskId": "3", "status": "deleted"}`)
		_, err := store.Get(context.Background(), 3)
		assert.ErrorIs(t, err, taskgraph.ErrNotFound)
	})
}

// TaskGet's "Blocked by" lists what still blocks a task, as Claude Code's
// own does: a blocker that completed is no longer named.
func TestClaudeCodeGetNamesOpenBlockersOnly(t *testing.T) {
	stores(t, func(t *testing.T, store taskgraph.Store, clk *clock) {
		a := agenttools.ClaudeCode(store, agenttools.WithOwner("model-A"))
		mustCall(t, a, "TaskCreate", `{"subject": "first", "description": ""}`)
		mustCall(t, a, "TaskCreate", `{"subject": "second", "description": ""}`)
		mustCall(t, a, "TaskCreate", `{"subject": "last", "description": ""}`)
		mustCall(t, a, "TaskUpdate", `{"taskId": "3", "addBlockedBy": ["1", "2"]}`)
		assert.Contains(t, mustCall(t, a, "TaskGet", `{"taskId": "3"}`), "Blocked by: #1, #2")

		mustCall(t, a, "TaskUpdate", `{"taskId": "1", "status": "in_progress"}`)
		mustCall(t, a, "TaskUpdate", `{"taskId": "1", "status": "completed"}`)
		got := mustCall(t, a, "TaskGet", `{"taskId": "3"}`)
		assert.Contains(t, got, "Blocked by: #2")
		assert.NotContains(t, got, "#1", "a completed blocker is not named")

		mustCall(t, a, "TaskUpdate", `{"taskId": "2", "status": "in_progress"}`)
		mustCall(t, a, "TaskUpdate", `{"taskId": "2", "status": "completed"}`)
		assert.NotContains(t, mustCall(t, a, "TaskGet", `{"taskId": "3"}`), "Blocked by", "nothing blocks it any more")
	})
}

package agenttools_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// listGraph is 1 completed, 2 in progress (agent-2), 3 ready, 4 blocked
// by 3, 5 ready.
func listGraph(t *testing.T) (*agenttools.Tools, taskgraph.Store) {
	t.Helper()
	store := taskgraph.NewMemStore()
	me := agenttools.New(store, agenttools.WithOwner("agent-1"))
	other := agenttools.New(store, agenttools.WithOwner("agent-2"))
	for _, s := range []string{"done", "doing", "ready", "waits", "also ready"} {
		mustCall(t, me, "task_create", fmt.Sprintf(`{"subject": %q}`, s))
	}
	mustCall(t, me, "task_update", `{"task_id": 4, "addBlockedBy": [3]}`)
	mustCall(t, me, "task_update", `{"task_id": 1, "status": "completed"}`)
	mustCall(t, other, "task_claim", `{"task_id": 2}`)
	return me, store
}

func TestListFilters(t *testing.T) {
	tools, _ := listGraph(t)
	for _, c := range []struct{ input, want string }{
		{`{}`, "[x] #1: done @agent-1\n[>] #2: doing @agent-2\n[ ] #3: ready\n[ ] #4: waits (blocked by: [3])\n[ ] #5: also ready"},
		{`{"status": "pending"}`, "[ ] #3: ready\n[ ] #4: waits (blocked by: [3])\n[ ] #5: also ready"},
		{`{"status": "completed"}`, "[x] #1: done @agent-1"},
		{`{"owner": "agent-2"}`, "[>] #2: doing @agent-2"},
		{`{"ready": true}`, "[ ] #3: ready\n[ ] #5: also ready"},
		{`{"ready": false}`, "[x] #1: done @agent-1\n[>] #2: doing @agent-2\n[ ] #3: ready\n[ ] #4: waits (blocked by: [3])\n[ ] #5: also ready"},
		{`{"ready": true, "status": "in_progress"}`, "No tasks match."},
		{`{"owner": "nobody"}`, "No tasks match."},
		{`{"label": "frontend"}`, "No tasks match."},
		// Over the limit: in progress first, then ready, then the rest,
		// shown by id; the last line counts what was left out.
		{`{"limit": 2}`, "[>] #2: doing @agent-2\n[ ] #3: ready\n… and 3 more: 2 pending, 1 completed (use limit or filters)"},
		{`{"limit": 4}`, "[>] #2: doing @agent-2\n[ ] #3: ready\n[ ] #4: waits (blocked by: [3])\n[ ] #5: also ready\n… and 1 more: 1 completed (use limit or filters)"},
		{`{"limit": 1, "status": "pending"}`, "[ ] #3: ready\n… and 2 more: 2 pending (use limit or filters)"},
	} {
		assert.Equal(t, c.want, mustCall(t, tools, "task_list", c.input), c.input)
	}
	for _, c := range []struct{ input, want string }{
		{`{"limit": 0}`, "Error: limit must be between 1 and 10000, not 0"},
		{`{"limit": "ten"}`, `Error: limit must be an integer, not the string "ten"`},
		{`{"status": "done"}`, `Error: status: "done" is not pending, in_progress, completed, failed or cancelled`},
		{`{"ready": "yes"}`, `Error: ready must be true or false, not the string "yes"`},
		{`{"owner": 3}`, `Error: owner must be a string, not 3`},
		// A label no task could carry is a mistake to point out, not a
		// filter that matches nothing: "No tasks match." would tell the
		// model there is no backend work.
		{`{"label": "Backend"}`, `Error: label: "Backend" is not a label: use 1 to 64 lower-case letters, digits and -_.:/ (e.g. "frontend")`},
	} {
		res := call(t, tools, "task_list", c.input)
		assert.True(t, res.IsError, c.input)
		assert.Equal(t, c.want, res.Text, c.input)
	}
}

// At the default limit a big graph is cut to DefaultListLimit lines and a
// last line that says how many more there are.
func TestListDefaultLimit(t *testing.T) {
	store := taskgraph.NewMemStore()
	tools := agenttools.New(store)
	for i := range agenttools.DefaultListLimit + 7 {
		_, err := store.Create(context.Background(), taskgraph.NewTask{Subject: fmt.Sprintf("task %d", i+1)})
		require.NoError(t, err)
	}
	lines := strings.Split(mustCall(t, tools, "task_list", `{}`), "\n")
	require.Len(t, lines, agenttools.DefaultListLimit+1)
	assert.Equal(t, "[ ] #1: task 1", lines[0])
	assert.Equal(t, "… and 7 more: 7 pending (use limit or filters)", lines[len(lines)-1])
	lines = strings.Split(mustCall(t, tools, "task_list", `{"limit": 100}`), "\n")
	assert.Len(t, lines, agenttools.DefaultListLimit+7)
}

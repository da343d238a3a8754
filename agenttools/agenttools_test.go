package agenttools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./agenttools -update to create it")
	assert.Equal(t, string(want), string(got), "golden file %s (go test ./agenttools -update rewrites it)", path)
}

func TestSchemas(t *testing.T) {
	tools := agenttools.New(taskgraph.NewMemStore())
	for _, tool := range tools.List() {
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, tool.InputSchema, "", "  "), tool.Name)
		doc := fmt.Sprintf("%s\n%s\n%s\n", tool.Name, tool.Description, pretty.String())
		if tool.OutputSchema != nil {
			pretty.Reset()
			require.NoError(t, json.Indent(&pretty, tool.OutputSchema, "", "  "), tool.Name)
			doc += "output:\n" + pretty.String() + "\n"
		}
		golden(t, "schema_"+tool.Name+".golden", []byte(doc))
	}
}

// TestScriptedSession replays the reference's prompts as tool calls, then
// the multi-agent tools and every kind of bad call, and compares each
// output with the golden transcript.
func TestScriptedSession(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC) }
	store := taskgraph.NewMemStore(taskgraph.WithClock(clock))
	tools := agenttools.New(store, agenttools.WithOwner("agent-1"))
	other := agenttools.New(store, agenttools.WithOwner("agent-2"))
	calls := []struct {
		who         *agenttools.Tools
		name, input string
	}{
		{tools, "task_list", `{}`},
		{tools, "task_create", `{"subject": "Setup project"}`},
		{tools, "task_create", `{"subject": "Write code", "description": "the parser"}`},
		{tools, "task_create", `{"subject": "Write tests"}`},
		{tools, "task_update", `{"task_id": 2, "addBlockedBy": [1]}`},
		{tools, "task_update", `{"task_id": 3, "addBlockedBy": [2]}`},
		{tools, "task_list", `{}`},
		{tools, "task_update", `{"task_id": 1, "status": "completed"}`},
		{tools, "task_list", `{}`},
		{tools, "task_create", `{"subject": "Write docs", "blockedBy": [2]}`},
		{tools, "task_update", `{"task_id": 3, "addBlockedBy": [4]}`},
		{tools, "task_list", `{}`},
		{tools, "task_claim", `{"task_id": 3}`},
		{tools, "task_claim_next", `{}`},
		{other, "task_claim", `{"task_id": 2}`},
		{other, "task_claim_next", `{}`},
		{tools, "task_list", `{}`},
		{tools, "task_complete", `{"task_id": 2}`},
		{tools, "task_get", `{"task_id": 4}`},
		{other, "task_claim_next", `{}`},
		{other, "task_note", `{"task_id": 4, "text": "the fixture is stale: regenerate it first"}`},
		{other, "task_release", `{"task_id": 4}`},
		{tools, "task_note", `{"task_id": 4}`},
		{tools, "task_note", `{"task_id": 4, "text": ""}`},
		{tools, "task_get", `{"task_id": 4}`},
		{tools, "task_get", `{"task_id": 9}`},
		{tools, "task_update", `{"task_id": 2, "addBlockedBy": [3]}`},
		{tools, "task_update", `{"task_id": 3, "addBlockedBy": [3]}`},
		{tools, "task_update", `{"task_id": 3, "status": "done"}`},
		{tools, "task_create", `{"subject": ""}`},
		{tools, "task_create", `{"description": "no subject"}`},
		{tools, "task_get", `{"task_id": "3"}`},
		{tools, "task_get", `{"task_id": 3`},
		{tools, "task_get", `{}`},
		{tools, "task_update", `{"task_id": 3, "addBlockedBy": [1], "colour": "red"}`},
		{tools, "task_complete", `{"task_id": 1}`},
		{tools, "task_get", `{"task_id": -3}`},
		{tools, "task_get", `{"task_id": 1.5}`},
		{tools, "task_update", `{"task_id": 3, "addBlockedBy": [-3]}`},
		{tools, "task_update", `{"task_id": 3, "addBlockedBy": ["2"]}`},
		{tools, "task_list", `[]`},
		{tools, "task_list", `{"verbose": true}`},
		{other, "task_claim", `{"task_id": 4}`},
		{other, "task_renew", `{"task_id": 4}`},
		{other, "task_renew", `{"task_id": 4, "seconds": 600}`},
		{tools, "task_renew", `{"task_id": 4, "seconds": 600}`},
		{tools, "task_delete", `{"task_id": 4}`},
		{tools, "task_delete", `{"task_id": 1}`},
		{tools, "task_create", `{"subject": "Scratch"}`},
		{tools, "task_delete", `{"task_id": 5}`},
		{tools, "task_delete", `{"task_id": 5}`},
		{tools, "task_frobnicate", `{"task_id": 1}`},
		{tools, "task_claim_next", `{"verbose": true}`},
		// Priorities, labels and keys.
		{tools, "task_create", `{"subject": "Ship it", "labels": ["Release"]}`},
		{tools, "task_create", `{"subject": "Ship it", "priority": 7}`},
		{tools, "task_create", `{"subject": "Ship it", "priority": 0, "labels": ["release"], "key": "ship"}`},
		{tools, "task_create", `{"subject": "Ship it again", "key": "ship"}`},
		// A whole plan in one call, and the same plan again.
		{tools, "task_plan", `{"tasks": [{"key": "design", "subject": "Design the cache"}, {"key": "build", "subject": "Build the cache", "after": ["design"], "labels": ["backend"]}, {"key": "bench", "subject": "Benchmark it", "after": ["build", "#6"], "priority": 1}]}`},
		{tools, "task_plan", `{"tasks": [{"key": "design", "subject": "Design the cache"}, {"key": "docs", "subject": "Document the cache", "after": ["design", 3]}]}`},
		{tools, "task_plan", `{"tasks": [{"key": "epic", "subject": "Cache epic"}, {"key": "e1", "subject": "Evict", "parent": "epic"}, {"key": "e2", "subject": "Warm", "parent": "epic", "maxAttempts": 3, "backoffSeconds": 30}]}`},
		{tools, "task_get", `{"task_id": 11}`},
		{tools, "task_create", `{"subject": "Expire", "parent": 11}`},
		{tools, "task_create", `{"subject": "Orphan", "parent": 99}`},
		{tools, "task_create", `{"subject": "Self", "parent": 15}`},
		{tools, "task_plan", `{"tasks": [{"key": "a", "subject": "A", "after": ["b"]}, {"key": "b", "subject": "B", "after": ["a"]}]}`},
		{tools, "task_plan", `{"tasks": [{"key": "c", "subject": "C", "after": ["nowhere"]}]}`},
		{tools, "task_plan", `{"tasks": [{"subject": "no key"}]}`},
		{tools, "task_plan", `{"tasks": []}`},
		{tools, "task_plan", `{"tasks": [{"key": "d", "subject": "D", "colour": "red"}]}`},
		{tools, "task_list", `{"label": "backend"}`},
		{tools, "task_list", `{"status": "pending", "limit": 2}`},
		{tools, "task_claim_next", `{"labels": ["backend"]}`},
		{other, "task_claim_next", `{"labels": ["release"]}`},
		// An outcome: the holder fails its task, and what depends on it
		// cannot start.
		{other, "task_fail", `{"task_id": 6}`},
		{tools, "task_fail", `{"task_id": 6, "reason": "not mine"}`},
		{other, "task_fail", `{"task_id": 6, "reason": "the release build is red"}`},
		{tools, "task_get", `{"task_id": 9}`},
		{tools, "task_get", `{"task_id": 8}`},
		{tools, "task_list", `{}`},
		{tools, "task_list", `{"status": "failed"}`},
		{tools, "task_update", `{"task_id": 6, "status": "pending"}`},
		{other, "task_update", `{"task_id": 6, "status": "pending"}`},
		{tools, "task_claim_next", `{}`},
		{tools, "task_complete", `{"task_id": 6, "result": "shipped as v1.2"}`},
		{tools, "task_get", `{"task_id": 6}`},
		{tools, "task_update", `{"task_id": 8, "priority": 0, "labels": []}`},
		{tools, "task_update", `{"task_id": 8, "priority": -1}`},
	}
	var transcript bytes.Buffer
	for _, c := range calls {
		res, err := c.who.Call(context.Background(), c.name, json.RawMessage(c.input))
		require.NoError(t, err, "%s %s", c.name, c.input)
		assert.Equal(t, strings.HasPrefix(res.Text, "Error: "), res.IsError, "%s %s: the flag and the text agree", c.name, c.input)
		fmt.Fprintf(&transcript, "> %s %s\n%s\n\n", c.name, c.input, res.Text)
	}
	golden(t, "session.golden", transcript.Bytes())
}

func TestClosedStoreIsTheHarnessProblem(t *testing.T) {
	store := taskgraph.NewMemStore()
	tools := agenttools.New(store)
	require.NoError(t, store.Close())
	_, err := tools.Call(context.Background(), "task_list", nil)
	assert.ErrorIs(t, err, taskgraph.ErrClosed)
}

package agenttools_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// checkStructured checks what every call returns beside its text: the
// structured output of a tool with an output schema, an object the schema
// accepts whose tasks carry id, subject and status, when the call did not
// fail; nothing otherwise. call runs it on every call of these tests.
func checkStructured(t *testing.T, tools *agenttools.Tools, name string, res agenttools.Result) {
	t.Helper()
	var schema json.RawMessage
	for _, tool := range tools.List() {
		if tool.Name == name {
			schema = tool.OutputSchema
		}
	}
	if schema == nil || res.IsError {
		assert.Nil(t, res.Structured, "%s: structured output without an output schema, or for a failed call", name)
		return
	}
	require.NotNil(t, res.Structured, "%s has an output schema: its result must have structured output", name)
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal(schema, &s), name)
	rs, err := s.Resolve(nil)
	require.NoError(t, err, name)
	var v any
	require.NoError(t, json.Unmarshal(res.Structured, &v), name)
	require.NoError(t, rs.Validate(v), "%s: %s", name, res.Structured)
	obj := v.(map[string]any)
	tasks, _ := obj["tasks"].([]any)
	if task, ok := obj["task"]; ok {
		tasks = append(tasks, task)
	}
	for _, task := range tasks {
		for _, field := range []string{"id", "subject", "status"} {
			assert.Contains(t, task, field, "%s: every task view has %s", name, field)
		}
	}
}

// structured calls name and checks its structured output against want.
func structured(t *testing.T, tools *agenttools.Tools, name, input, want string) {
	t.Helper()
	res := call(t, tools, name, input)
	require.False(t, res.IsError, "%s %s: %s", name, input, res.Text)
	assert.JSONEq(t, want, string(res.Structured), "%s %s", name, input)
}

// task_get, task_list, task_claim_next and task_wait return beside their
// text the same result as JSON (MCP's structuredContent): tasks as
// TaskView, and for a claim or a wait its outcome — claimed or ready,
// wait, finished, stalled — as the text's first words say it.
func TestStructuredOutput(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	store := taskgraph.NewMemStore(taskgraph.WithClock(func() time.Time { return now }))
	a := agenttools.New(store, agenttools.WithOwner("a"), agenttools.WithLease(time.Minute))
	b := agenttools.New(store, agenttools.WithOwner("b"), agenttools.WithWait(time.Millisecond))

	structured(t, b, "task_claim_next", `{}`, `{"outcome":"finished"}`)
	structured(t, b, "task_list", `{}`, `{"tasks":[]}`)
	mustCall(t, a, "task_create", `{"subject": "build", "description": "make all", "priority": 1, "labels": ["ci"], "key": "build"}`)
	mustCall(t, a, "task_create", `{"subject": "test", "blockedBy": [1]}`)
	mustCall(t, a, "task_create", `{"subject": "release"}`)
	mustCall(t, a, "task_create", `{"subject": "ship", "blockedBy": [2], "parent": 3}`)
	mustCall(t, a, "task_note", `{"task_id": 1, "text": "try make -j"}`)

	structured(t, a, "task_get", `{"task_id": 2}`,
		`{"task":{"id":2,"subject":"test","status":"pending","state":"blocked","blockedBy":[1],"blocks":[4],"why":"task 2 is blocked, waiting on 1 (pending)"}}`)
	structured(t, b, "task_wait", `{"labels": ["ci"]}`,
		`{"outcome":"ready","task":{"id":1,"subject":"build","status":"pending","state":"ready","priority":1,"labels":["ci"],"blocks":[2],"key":"build","description":"make all",
		"notes":[{"at":"2026-12-02T12:00:00Z","author":"a","text":"try make -j"}]}}`)
	structured(t, a, "task_claim_next", `{"labels": ["ci"]}`,
		`{"outcome":"claimed","task":{"id":1,"subject":"build","status":"in_progress","priority":1,"labels":["ci"],"owner":"a","blocks":[2],"key":"build","description":"make all",
		"leaseExpiresAt":"2026-12-02T12:01:00Z","notes":[{"at":"2026-12-02T12:00:00Z","author":"a","text":"try make -j"}]}}`)
	structured(t, b, "task_claim_next", `{"labels": ["ci"]}`, `{"outcome":"wait"}`)
	structured(t, b, "task_wait", `{"labels": ["ci"]}`, `{"outcome":"wait"}`)
	// A list leaves out the description, blocks, notes and metadata.
	structured(t, a, "task_list", `{"limit": 2}`,
		`{"tasks":[{"id":1,"subject":"build","status":"in_progress","priority":1,"labels":["ci"],"owner":"a","key":"build","leaseExpiresAt":"2026-12-02T12:01:00Z"},
		{"id":2,"subject":"test","status":"pending","state":"blocked","blockedBy":[1]}],"more":2}`)

	mustCall(t, a, "task_fail", `{"task_id": 1, "reason": "no compiler"}`)
	structured(t, b, "task_claim_next", `{"under": 3}`, `{"outcome":"stalled","stranded":[4]}`)
	structured(t, b, "task_claim_next", `{}`, `{"outcome":"stalled","failed":[1],"stranded":[2,3,4]}`)
	structured(t, b, "task_get", `{"task_id": 4}`,
		`{"task":{"id":4,"subject":"ship","status":"pending","state":"stranded","blockedBy":[2],"blocks":[3],"parent":3,
		"why":"task 4 is stranded: it waits on 2, which cannot start because 1 failed (\"no compiler\"); reopen 1 or remove the edge"}}`)

	for _, c := range []struct{ name, input string }{
		{"task_get", `{"task_id": 9}`}, {"task_list", `{"limit": 0}`}, {"task_claim_next", `{"labels": ["CI"]}`}, {"task_wait", `{"under": -1}`},
	} {
		res := call(t, b, c.name, c.input)
		assert.True(t, res.IsError, "%s %s", c.name, c.input)
		assert.Nil(t, res.Structured, "%s %s: a failed call has no structured output", c.name, c.input)
	}
	res := call(t, a, "task_create", `{"subject": "no schema"}`)
	assert.Nil(t, res.Structured, "a tool without an output schema returns text alone")
	for _, tool := range a.List() {
		switch tool.Name {
		case "task_get", "task_list", "task_claim_next", "task_wait":
			assert.NotNil(t, tool.OutputSchema, tool.Name)
		default:
			assert.Nil(t, tool.OutputSchema, tool.Name)
		}
	}
}

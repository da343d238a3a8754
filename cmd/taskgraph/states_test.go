package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stateGraph returns a project where every state has a task: #1 failed,
// #2 and #3 stranded by it, #4 ready, #5 in progress, #6 blocked by #5,
// #7 completed, #8 cancelled.
func stateGraph(t *testing.T) string {
	t.Helper()
	dir := project(t)
	for _, args := range [][]string{{"add", "build"}, {"add", "test", "--after", "1"}, {"add", "release", "--after", "2"},
		{"add", "docs"}, {"add", "api"}, {"add", "ui", "--after", "5"}, {"add", "setup"}, {"add", "old idea"}} {
		ok(t, dir, args...)
	}
	ok(t, dir, "claim", "1")
	ok(t, dir, "fail", "1", "broke")
	ok(t, dir, "claim", "5")
	ok(t, dir, "claim", "7")
	ok(t, dir, "done", "7")
	ok(t, dir, "cancel", "8", "dropped")
	return dir
}

// list --json and show --json carry each task's derived state, by the
// names the states print with.
func TestStateInJSON(t *testing.T) {
	dir := stateGraph(t)
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "list", "--json")), &list))
	got := map[float64]any{}
	for _, task := range list {
		got[task["id"].(float64)] = task["state"]
	}
	want := map[float64]any{1: "failed", 2: "stranded", 3: "stranded", 4: "ready", 5: "in_progress", 6: "blocked", 7: "completed", 8: "cancelled"}
	assert.Equal(t, want, got)
	for id, state := range want {
		assert.Equal(t, state, showJSON(t, dir, int(id))["state"], "show %v", id)
	}
	// export is what import reads back: no derived state in it.
	assert.NotContains(t, ok(t, dir, "export"), `"state"`)
}

// list --state filters by derived state; --status refuses a state and
// points at --state, and --state refuses a status and points at --status.
func TestListByState(t *testing.T) {
	dir := stateGraph(t)
	assert.Equal(t, "[ ] #2: test (cannot start: #1 failed)\n[ ] #3: release (cannot start: #1 failed)\n", ok(t, dir, "list", "--state", "stranded"))
	assert.Equal(t, "[ ] #4: docs\n[ ] #6: ui (blocked by: [5])\n", ok(t, dir, "list", "--state", "ready,blocked"))
	assert.Equal(t, "[ ] #4: docs\n[ ] #6: ui (blocked by: [5])\n", ok(t, dir, "list", "--state", "ready", "--state", "blocked"))
	assert.Equal(t, "No tasks match.\n", ok(t, dir, "list", "--state", "stranded", "--ready"))

	r := tg(t, dir, "list", "--status", "stranded")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, `taskgraph list: --status "stranded" is not pending, in_progress, completed, failed or cancelled; stranded is a state, derived from the graph: use --state stranded`)
	r = tg(t, dir, "list", "--state", "pending")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, `taskgraph list: --state "pending" is not ready, awaiting_approval, deferred, limited, blocked, stranded, in_progress, completed, failed or cancelled; pending is a status: use --status pending`)
	r = tg(t, dir, "list", "--state", "done")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, `--state "done" is not ready, awaiting_approval, deferred, limited, blocked, stranded, in_progress, completed, failed or cancelled`)
	assert.NotContains(t, r.stderr, "use --status")
	// ready takes no --state: it is the ready state.
	assert.Equal(t, exitUsage, tg(t, dir, "ready", "--state", "blocked").code)
}

// board prints the partition: each state with its tasks; --json an
// object keyed by state.
func TestBoardCommand(t *testing.T) {
	dir := stateGraph(t)
	me := defaultOwner()
	assert.Equal(t, "Ready (1)\n  [ ] #4: docs\n"+
		"Awaiting approval (0)\n"+
		"Deferred (0)\n"+
		"Limited (0)\n"+
		"Blocked (1)\n  [ ] #6: ui (blocked by: [5])\n"+
		"Stranded (2)\n  [ ] #2: test (cannot start: #1 failed)\n  [ ] #3: release (cannot start: #1 failed)\n"+
		"In progress (1)\n  [>] #5: api @"+me+"\n"+
		"Completed (1)\n  [x] #7: setup @"+me+"\n"+
		"Failed (1)\n  [!] #1: build @"+me+"\n"+
		"Cancelled (1)\n  [-] #8: old idea\n", ok(t, dir, "board"))

	var b map[string][]map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "board", "--json")), &b))
	ids := map[string][]float64{}
	for state, tasks := range b {
		ids[state] = []float64{}
		for _, task := range tasks {
			ids[state] = append(ids[state], task["id"].(float64))
			assert.Equal(t, state, task["state"], "#%v", task["id"])
		}
	}
	assert.Equal(t, map[string][]float64{"ready": {4}, "awaiting_approval": {}, "deferred": {}, "limited": {}, "blocked": {6}, "stranded": {2, 3}, "in_progress": {5},
		"completed": {7}, "failed": {1}, "cancelled": {8}}, ids)

	empty := project(t)
	assert.Equal(t, "Ready (0)\nAwaiting approval (0)\nDeferred (0)\nLimited (0)\nBlocked (0)\nStranded (0)\nIn progress (0)\nCompleted (0)\nFailed (0)\nCancelled (0)\n", ok(t, empty, "board"))
	require.NoError(t, json.Unmarshal([]byte(ok(t, empty, "board", "--json")), &b))
	assert.Len(t, b, 10)
	assert.Equal(t, exitUsage, tg(t, empty, "board", "extra").code)
}

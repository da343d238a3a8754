package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A claim a label's limit refuses is a wait, exit status 3, like any other
// "not now", in claim and in next: not an error (1).
func TestLimitedClaimIsAWait(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a", "--label", "db")
	ok(t, dir, "add", "b", "--label", "db")
	ok(t, dir, "limit", "db", "1")
	ok(t, dir, "claim", "1")
	r := tg(t, dir, "claim", "2")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	assert.Equal(t, "taskgraph claim: task 2 cannot start now: 1 tasks labelled \"db\" are in progress, its limit of 1; wait for one to finish\n", r.stderr)
	r = tg(t, dir, "next", "--label", "db")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	assert.Contains(t, r.stderr, "1 held back by a label's limit")
}

// A global flag given before the command is never taken as the value of
// the command's flag left without one at the end.
func TestGlobalFlagBeforeTheCommandIsNotSwallowed(t *testing.T) {
	dir := project(t)
	other := project(t)
	r := tg(t, other, "--dir", dir+"/.tasks", "add", "x", "--after")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "flag needs an argument: --after\n")
	assert.NotContains(t, r.stderr, `invalid value "--dir"`)
	assert.Equal(t, "Created #1: x\n", ok(t, other, "--dir", dir+"/.tasks", "--owner", "bob", "add", "x", "--priority", "P1"))
	assert.Equal(t, "Claimed #1: x (owner bob)\n", ok(t, other, "--dir", dir+"/.tasks", "--owner", "bob", "claim", "1"))
}

// A plan file takes the words the command line and the tools take: a
// priority as "P1" (or 1), and "under" for the task a task is under
// (parent's other name); both at once is refused, as a bad priority is.
func TestPlanSpeaksTheCLIsVocabulary(t *testing.T) {
	dir := project(t)
	plan := filepath.Join(dir, "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(`{"tasks": [
		{"key": "epic", "subject": "cache epic", "priority": "P1"},
		{"key": "evict", "subject": "evict", "under": "epic", "priority": 0},
		{"key": "warm", "subject": "warm", "parent": "epic", "priority": "p3"}]}`), 0o644))
	assert.Contains(t, ok(t, dir, "plan", plan), "[ ] #1 epic: cache epic P1 (blocked by: [2, 3])\n[ ] #2 evict: evict P0\n[ ] #3 warm: warm P3\nCreated 3 of 3 tasks in ")
	assert.Equal(t, "[ ] #2: evict P0\n[ ] #3: warm P3\n", ok(t, dir, "list", "--under", "1"))

	for bad, msg := range map[string]string{
		`{"key": "x", "subject": "x", "priority": "P7"}`:                  `priority: "P7" is not a priority`,
		`{"key": "x", "subject": "x", "priority": true}`:                  `priority must be a priority, 0 to 4 or "P0" to "P4", not true`,
		`{"key": "x", "subject": "x", "under": "epic", "parent": "epic"}`: "parent and under are one field",
	} {
		require.NoError(t, os.WriteFile(plan, []byte(`{"tasks": [`+bad+`]}`), 0o644))
		r := tg(t, dir, "plan", plan)
		assert.Equal(t, exitError, r.code, bad)
		assert.Contains(t, r.stderr, msg, bad)
	}
	assert.Len(t, strings.Split(strings.TrimSpace(ok(t, dir, "list")), "\n"), 3, "a refused plan creates nothing")
}

// $TASKGRAPH_LOG sets what the stores and servers log on stderr: warnings
// by default, the durability protocol chosen at debug; a level it does not
// know is a usage error.
func TestTaskgraphLog(t *testing.T) {
	dir := project(t)
	r := tg(t, dir, "list")
	assert.Empty(t, r.stderr)
	r = runIn(t, dir, cleanEnv("TASKGRAPH_LOG=debug"), "list")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `level=DEBUG msg="taskgraph: durability protocol chosen" dir=\S+ protocol=\S+ filesystem=`, r.stderr)
	r = runIn(t, dir, cleanEnv("TASKGRAPH_LOG=loud"), "list")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "$TASKGRAPH_LOG=loud: want debug, info, warn, error or off")
}

package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In a clone, whose ids have twelve digits, a person reads and types %N:
// the text shows it, every command and id flag takes it, and --json keeps
// the full id. After a pull brings another task numbered N, %N is refused,
// naming both, never taken for one of them; an id is never read as a short
// form, nor a short form as an id.
func TestShortIDsOfAClone(t *testing.T) {
	origin := gitGraphOf(t)
	clone := cloneOf(t, origin, "clone", true)

	first := addID(t, clone, "setup schema")
	require.Len(t, first, 12, "a block of the clone's own")
	assert.Equal(t, "000001", first[6:], "the first id of a block: idBlock is ids.go's blockSize")
	assert.Equal(t, "Created %2: api (blocked by: [%1])\n", ok(t, clone, "add", "api", "--after", "%1"))
	assert.Equal(t, "[ ] %1: setup schema\n[ ] %2: api (blocked by: [%1])\n", ok(t, clone, "list"))
	show := ok(t, clone, "show", "%2")
	assert.Contains(t, show, "%2: api\n")
	assert.Contains(t, show, "\nid:          "+first[:6]+"000002\n", "show gives the full id too")
	assert.Contains(t, show, "\ndepends on:  [%1]\n")

	var task listed
	require.NoError(t, json.Unmarshal([]byte(ok(t, clone, "show", "%2", "--json")), &task))
	assert.Equal(t, first[:6]+"000002", jsonID(task.ID), "--json keeps the full id")
	assert.Equal(t, []int64{mustID(t, first)}, task.BlockedBy)

	assert.Contains(t, ok(t, clone, "claim", "%1"), "Claimed %1: setup schema")
	assert.Contains(t, ok(t, clone, "done", first), "Completed %1: setup schema\n", "the full id works as ever")
	assert.Equal(t, "Created %3: docs\n", ok(t, clone, "add", "docs", "--parent", "%2"))
	assert.Equal(t, "[ ] %3: docs\n", ok(t, clone, "ready", "--under", "%2"))

	r := tg(t, clone, "show", "%9")
	assert.Equal(t, exitError, r.code)
	assert.Equal(t, "taskgraph show: %9 names no task: task not found\n", r.stderr)
	r = tg(t, clone, "add", "x", "--after", "%9")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "--after %9 names no task")
	for _, bad := range []string{"%0", "%1000000", "%-1", "%1x"} {
		r = tg(t, clone, "show", bad)
		assert.Equal(t, exitUsage, r.code, bad)
	}

	// The origin numbers from 1: after a pull, %1 names two tasks.
	o := addID(t, origin, "from origin")
	require.Equal(t, "1", o)
	commitAll(t, clone, "clone")
	pull(t, origin, clone)
	r = tg(t, origin, "show", "%1")
	assert.Equal(t, exitUsage, r.code)
	assert.Equal(t, "taskgraph show: %1 is ambiguous: it names 2 tasks, #1, #"+first+"; give the full id\n", r.stderr)
	r = tg(t, origin, "dep", "add", "%2", "%1")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "%1 is ambiguous")
	r = tg(t, origin, "add", "y", "--after", "%1")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--after %1 is ambiguous: it names 2 tasks, #1, #"+first)
	// list holds the whole graph: it names by full id the tasks %1 names,
	// so that what a person reads can be typed back.
	assert.Contains(t, ok(t, origin, "list"), "[ ] #1: from origin\n[x] #"+first+": setup schema @")
	assert.Contains(t, ok(t, origin, "list"), "[ ] %2: api (blocked by: [%3])\n")
	assert.Contains(t, ok(t, origin, "show", "1"), "#1: from origin\n", "an id is never a short form")
	assert.Contains(t, ok(t, origin, "show", first), "%1: setup schema\n")
}

func mustID(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, json.Unmarshal([]byte(s), &n))
	return n
}

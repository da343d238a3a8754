package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoteHandedOverAndHistory: an agent notes what it tried and its lease
// lapses; the next agent's claim prints that note first; history lists
// every transition of a task that was created, claimed, lapsed,
// reclaimed, failed, reopened and completed, in text and JSON.
func TestNoteHandedOverAndHistory(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "flaky deploy")
	ok(t, dir, "next", "--owner", "alice", "--lease", "50ms")
	assert.Equal(t, "Noted on #1: flaky deploy\n", ok(t, dir, "note", "1", "registry times out; the mirror works", "--owner", "alice"))
	time.Sleep(60 * time.Millisecond)
	out := ok(t, dir, "next", "--owner", "bob")
	assert.Contains(t, out, "Claimed #1: flaky deploy (owner bob)\n")
	assert.Contains(t, out, "alice: registry times out; the mirror works\n", "the note of the agent before, on the claim")
	ok(t, dir, "fail", "1", "mirror down too", "--owner", "bob")
	ok(t, dir, "reopen", "1")
	ok(t, dir, "next", "--owner", "carol")
	ok(t, dir, "done", "1", "--owner", "carol", "--result", "deployed")

	text := ok(t, dir, "history", "1")
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n")[1:] {
		events = append(events, strings.TrimRight(strings.Fields(line)[1], ":,"))
	}
	assert.Equal(t, []string{"created", "claimed", "noted", "lapsed", "claimed", "failed", "reopened", "claimed", "completed"}, events, text)
	assert.Contains(t, text, "failed by bob: mirror down too")
	assert.Contains(t, text, "completed by carol: deployed")
	assert.Contains(t, text, "lapsed, held by alice")

	var h []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "history", "1", "--json")), &h))
	require.Len(t, h, 9)
	assert.Equal(t, "lapsed", h[3]["event"])
	assert.Equal(t, "alice", h[3]["by"])
	assert.Contains(t, ok(t, dir, "show", "1"), "notes, latest first:\n")

	r := tg(t, dir, "note", "1", "", "--owner", "alice")
	assert.Equal(t, 2, r.code, "an empty note is a usage error: %s", r.stderr)
	r = tg(t, dir, "note", "9", "x", "--owner", "alice")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "9")

	// Export keeps notes and history; import reads them back.
	export := ok(t, dir, "export")
	assert.Contains(t, export, `"notes"`)
	assert.Contains(t, export, `"history"`)
}

package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// TestMCPProgressWindow: real processes. A `taskgraph mcp` whose client
// stays connected but makes no tool call stops renewing its claim after
// --progress-window, says why in the task's history, and the lease lapses;
// another session's task_wait, waiting meanwhile, reports the task, which
// its task_claim_next takes over, the history naming the lapse. A session
// that keeps calling tools (any tool) keeps its claim past the window.
func TestMCPProgressWindow(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "hangs")
	ok(t, dir, "add", "keeps going")
	const window = 2 * time.Second
	hung := startMCP(t, dir, cleanEnv(), "--owner", "hung-agent", "--lease", "1s", "--progress-window", window.String())
	busy := startMCP(t, dir, cleanEnv(), "--owner", "busy-agent", "--lease", "1s", "--progress-window", window.String())
	other := startMCP(t, dir, cleanEnv(), "--owner", "other-agent")
	text, isErr := hung.call(2, "task_claim", `{"task_id":1}`)
	require.False(t, isErr, text)
	text, isErr = busy.call(2, "task_claim", `{"task_id":2}`)
	require.False(t, isErr, text)
	claimed := time.Now()

	// The busy session calls a read-only tool every 300ms, from another
	// goroutine, while the other session waits.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := 3; ; id++ {
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
			busy.send(`{"jsonrpc":"2.0","id":` + jsonNum(id) + `,"method":"tools/call","params":{"name":"task_list","arguments":{}}}`)
			busy.reply()
		}
	}()
	text, isErr = other.call(2, "task_wait", `{}`)
	waited := time.Since(claimed)
	require.False(t, isErr, text)
	assert.Equal(t, `Ready: #1 hangs (the lease of "hung-agent" lapsed). Claim it with task_claim_next.`, text)
	assert.GreaterOrEqual(t, waited, window, "the hung session renewed its lease for the window")
	assert.Less(t, waited, window+10*time.Second, "then its lease lapsed, within about one lease")

	text, isErr = other.call(3, "task_claim_next", `{}`)
	require.False(t, isErr, text)
	assert.Contains(t, text, "Claimed #1: hangs")
	close(stop)
	<-done
	assert.Equal(t, "busy-agent", showJSON(t, dir, 2)["owner"], "a session that calls tools keeps its claim past the window")
	text, isErr = other.call(4, "task_claim_next", `{}`)
	require.False(t, isErr, text)
	assert.NotContains(t, text, "Claimed #2", "the busy session's claim still holds")

	var h []taskgraph.Transition
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "history", "1", "--json")), &h))
	var events []string
	for _, e := range h {
		events = append(events, string(e.Event)+" "+e.By)
	}
	assert.Equal(t, []string{"created ", "claimed hung-agent", "noted hung-agent", "lapsed hung-agent", "claimed other-agent"}, events)
	notes := showJSON(t, dir, 1)["notes"].([]any)
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0].(map[string]any)["text"], "made no tool call for 2s (--progress-window), so its lease is no longer renewed")
}

// TestAddMaxRuntime: `add --max-runtime --progress-window` store the
// limits; `show` prints them and, for a claim they end before its lease,
// which clock ends it; `explain` says so too; out-of-range values are
// refused before anything is written.
func TestAddMaxRuntime(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "capped", "--max-runtime", "2h", "--progress-window", "30m")
	ok(t, dir, "claim", "1", "--owner", "ann", "--lease", "5h")
	show := ok(t, dir, "show", "1")
	assert.Contains(t, show, "max runtime: 2h0m0s")
	assert.Contains(t, show, "no progress: 30m0s ends a claim")
	assert.Regexp(t, `claim ends:  no-progress window \(30m0s since the last claim or note\) runs out in (30m0s|29m5\ds), at `, show)
	explain := ok(t, dir, "explain", "1")
	assert.Contains(t, explain, "no-progress window (30m0s since the last claim or note) runs out in")
	r := tg(t, dir, "add", "x", "--max-runtime", "-1s")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--max-runtime -1s: want 0 (no cap) to 168h0m0s")
	r = tg(t, dir, "add", "x", "--progress-window", "200h")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.False(t, strings.Contains(ok(t, dir, "list"), "x"), "nothing was added")
}

// TestMCPMaxRuntime: real processes. A session that keeps calling tools,
// and so keeps renewing its lease, still loses its claim once the task's
// MaxRuntime has passed: its renewal is refused, another session takes
// the task over, the attempt is counted and the history says why.
func TestMCPMaxRuntime(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "runs long", "--max-runtime", "1s", "--max-attempts", "3")
	slow := startMCP(t, dir, cleanEnv(), "--owner", "slow-agent", "--lease", "10m")
	other := startMCP(t, dir, cleanEnv(), "--owner", "other-agent")
	text, isErr := slow.call(2, "task_claim", `{"task_id":1}`)
	require.False(t, isErr, text)
	text, isErr = other.call(2, "task_claim_next", `{}`)
	require.False(t, isErr, text)
	assert.NotContains(t, text, "Claimed #1", "held while its runtime runs")
	time.Sleep(1100 * time.Millisecond)
	text, isErr = slow.call(3, "task_renew", `{"task_id":1}`)
	assert.True(t, isErr, "a renewal does not bring back a claim past its max runtime: %s", text)
	assert.Contains(t, text, "ran past its max runtime of 1s")
	text, isErr = other.call(3, "task_claim_next", `{}`)
	require.False(t, isErr, text)
	assert.Contains(t, text, "Claimed #1: runs long")
	task := showJSON(t, dir, 1)
	assert.Equal(t, "other-agent", task["owner"])
	var h []taskgraph.Transition
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "history", "1", "--json")), &h))
	require.GreaterOrEqual(t, len(h), 2)
	lapse := h[len(h)-2]
	assert.Equal(t, taskgraph.HistoryLapsed, lapse.Event)
	assert.Equal(t, "slow-agent", lapse.By)
	assert.Equal(t, "ran past its max runtime of 1s", lapse.Detail)
	assert.Contains(t, ok(t, dir, "show", "1"), "attempts:    1 used of 3", "the attempt that ran too long is counted")
}

// TestLivenessCommand: `liveness LABEL --max-runtime --progress-window`
// keeps a label's default with the graph; a task added with the label
// gets it; `liveness` lists the defaults; both 0 removes one; a bad label
// is a usage error.
func TestLivenessCommand(t *testing.T) {
	dir := project(t)
	assert.Contains(t, ok(t, dir, "liveness", "gpu", "--max-runtime", "2h", "--progress-window", "15m"), "Tasks created with gpu get max runtime 2h0m0s, no-progress window 15m0s")
	assert.Equal(t, "gpu max runtime 2h0m0s, no-progress window 15m0s\n", ok(t, dir, "liveness"))
	ok(t, dir, "add", "train", "--label", "gpu")
	show := ok(t, dir, "show", "1")
	assert.Contains(t, show, "max runtime: 2h0m0s")
	assert.Contains(t, show, "no progress: 15m0s")
	assert.Contains(t, ok(t, dir, "liveness", "gpu"), "No default liveness for gpu")
	assert.Equal(t, "", ok(t, dir, "liveness"))
	r := tg(t, dir, "liveness", "Not A Label", "--max-runtime", "1h")
	assert.Equal(t, 2, r.code, r.stderr)
}

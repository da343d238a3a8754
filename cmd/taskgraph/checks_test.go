//go:build !windows

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// history returns task id's history as `taskgraph history --json` prints
// it.
func historyOf(t *testing.T, dir string, id int) []taskgraph.Transition {
	t.Helper()
	var h []taskgraph.Transition
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "history", strconv.Itoa(id), "--json")), &h))
	return h
}

// TestDoneRunsCheck: real processes, real git. `taskgraph done` on a
// task whose check fails leaves it not completed — the attempt failed,
// the evidence (exit status, output digest and tail, the git commit) in
// `taskgraph history`; on a passing check it completes, the evidence in
// the history, and its dependent becomes ready. A check past its timeout
// is killed with its whole process group: the child it left sleeping is
// not running afterwards. --no-verify completes a checked task and the
// history records the skip; a checks file that is a symbolic link is
// refused, the task left as it was.
func TestDoneRunsCheck(t *testing.T) {
	dir := gitRepo(t)
	gitIn(t, dir, "commit", "-q", "--allow-empty", "-m", "start")
	head := strings.TrimSpace(gitIn(t, dir, "rev-parse", "HEAD"))
	ok(t, dir, "init")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".tasks", taskgraph.ChecksFile), []byte(`{
  "unit": {"command": "echo checking; test -f ok.txt || { echo 'ok.txt is missing' >&2; exit 3; }", "timeout": "30s"},
  "hangs": {"command": "sleep 300 & echo $! > child.pid; wait", "timeout": "1s"}
}`), 0o644))
	ok(t, dir, "add", "build", "--check", "unit", "--accept", "the unit tests pass, all of them", "--max-attempts", "3")
	ok(t, dir, "add", "ship", "--after", "1")
	ok(t, dir, "add", "hung check", "--check", "hangs")
	ok(t, dir, "add", "person's call", "--check", "unit")
	as := func(args ...string) result { return runIn(t, dir, cleanEnv("TASKGRAPH_OWNER=w"), args...) }

	require.Equal(t, 0, as("claim", "1").code)
	r := as("done", "1")
	assert.NotEqual(t, 0, r.code, "a failing check is not a completion")
	assert.Contains(t, r.stderr, "ok.txt is missing", "the check's output goes to stderr")
	assert.Contains(t, r.stderr, "check unit failed: exit 3")
	task := showJSON(t, dir, 1)
	assert.Equal(t, "pending", task["status"], "the attempt failed; attempts remain")
	h := historyOf(t, dir, 1)
	last := h[len(h)-1]
	assert.Equal(t, taskgraph.HistoryFailed, last.Event)
	for _, want := range []string{"check unit failed: exit 3", "output sha256:", "at commit " + head, "tail: checking ok.txt is missing"} {
		assert.Contains(t, last.Detail, want)
	}
	assert.Equal(t, "pending", showJSON(t, dir, 2)["status"])

	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.txt"), nil, 0o644))
	require.Equal(t, 0, as("claim", "1").code)
	r = as("done", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Completed #1: build")
	assert.Contains(t, r.stdout, "Unblocked: #2", "on a passing check the dependents become ready")
	h = historyOf(t, dir, 1)
	require.GreaterOrEqual(t, len(h), 2)
	ev := h[len(h)-2]
	assert.Equal(t, taskgraph.HistoryVerified, ev.Event)
	assert.Equal(t, "w", ev.By)
	for _, want := range []string{"check unit passed: exit 0", "at commit " + head, "output sha256:", "tail: checking"} {
		assert.Contains(t, ev.Detail, want)
	}
	assert.Equal(t, taskgraph.HistoryCompleted, h[len(h)-1].Event)

	require.Equal(t, 0, as("claim", "3").code)
	start := time.Now()
	r = as("done", "3")
	took := time.Since(start)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "check hangs failed: killed at its timeout")
	assert.Less(t, took, 20*time.Second, "killed at its timeout, not waited for")
	assert.Equal(t, "failed", showJSON(t, dir, 3)["status"], "no attempts left: failed")
	data, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	require.NoError(t, err)
	gone := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			gone = true
			break
		}
	}
	assert.True(t, gone, "the check's sleeping child (pid %d) was killed with its process group", pid)

	require.Equal(t, 0, as("claim", "4").code)
	r = as("done", "4", "--no-verify")
	require.Equal(t, 0, r.code, r.stderr)
	h = historyOf(t, dir, 4)
	assert.Equal(t, taskgraph.HistorySkipped, h[len(h)-2].Event)
	assert.Contains(t, h[len(h)-2].Detail, "--no-verify")

	// A hostile checks file: refused, nothing changed.
	ok(t, dir, "add", "again", "--check", "unit")
	require.Equal(t, 0, as("claim", "5").code)
	checks := filepath.Join(dir, ".tasks", taskgraph.ChecksFile)
	require.NoError(t, os.Rename(checks, filepath.Join(dir, "real.json")))
	require.NoError(t, os.Symlink(filepath.Join(dir, "real.json"), checks))
	r = as("done", "5")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "symbolic link")
	assert.Equal(t, "in_progress", showJSON(t, dir, 5)["status"], "a refused checks file changes nothing")
	r = as("done", "5")
	assert.NotEqual(t, 0, r.code)
	require.NoError(t, os.Remove(checks))
	r = as("done", "5")
	assert.Contains(t, r.stderr, `no check named "unit"`, "a missing file defines no check")
	assert.Equal(t, "in_progress", showJSON(t, dir, 5)["status"])
}

// TestDoneKeepsTheClaim: real processes. `taskgraph done` keeps the
// claim alive while the check runs: an agent that tries to claim the task
// once its lease would have lapsed, mid-check, is refused, and done
// completes it. (Before, the lease lapsed during the check, the other
// agent took the task, and done failed after the check had passed.)
func TestDoneKeepsTheClaim(t *testing.T) {
	dir := repo(t)
	ok(t, dir, "init")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".tasks", taskgraph.ChecksFile), []byte(`{"slow": {"command": "sleep 3"}}`), 0o644))
	ok(t, dir, "add", "slow to verify", "--check", "slow")
	as := func(owner string, args ...string) result {
		return runIn(t, dir, cleanEnv("TASKGRAPH_OWNER="+owner), args...)
	}
	require.Equal(t, 0, as("w", "claim", "1", "--lease", "1s").code)

	done := make(chan result, 1)
	go func() { done <- as("w", "done", "1") }()
	time.Sleep(2 * time.Second) // the 1s lease would have lapsed by now
	other := as("other", "claim", "1")
	r := <-done
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotEqual(t, 0, other.code, "the task was claimed from under its check: %s", other.stdout)
	assert.Contains(t, other.stderr, "w")
	assert.Equal(t, "completed", showJSON(t, dir, 1)["status"])
}

// TestEditCheck: a person gives a task a check and acceptance items in
// `taskgraph edit` (a "check" line added), changes them, and clears them;
// a check named like a command is refused, nothing changed.
func TestEditCheck(t *testing.T) {
	dir := repo(t)
	ok(t, dir, "init")
	ok(t, dir, "add", "needs a check")
	edit := func(script string) result {
		return runIn(t, dir, cleanEnv(writeEditor(t, script), "VISUAL="), "edit", "1")
	}
	r := edit(`sed -i 's/"description": ""/"description": "", "check": "unit", "acceptance": ["the tests pass"]/' "$1"`)
	require.Equal(t, 0, r.code, r.stderr)
	task := showJSON(t, dir, 1)
	assert.Equal(t, "unit", task["check"])
	assert.Equal(t, []any{"the tests pass"}, task["acceptance"])

	r = edit(`sed -i 's/"unit"/"lint"/' "$1"`)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "lint", showJSON(t, dir, 1)["check"])

	r = edit(`sed -i 's/"lint"/"make test"/' "$1"`)
	assert.Equal(t, 1, r.code, "a check is a name, never a command")
	assert.Contains(t, r.stderr, "edit refused, nothing changed")
	assert.Equal(t, "lint", showJSON(t, dir, 1)["check"])

	r = edit(`sed -i 's/"check": "lint"/"check": ""/; s/"the tests pass"//' "$1"`)
	require.Equal(t, 0, r.code, r.stderr)
	task = showJSON(t, dir, 1)
	assert.NotContains(t, task, "check")
	assert.NotContains(t, task, "acceptance")
}

// TestMCPChecks: real processes. `taskgraph mcp` without --run-checks
// never runs a check: task_complete (and task_update to completed) of a
// task with a check is refused, the check's marker file never appears,
// and the task stays in progress; no tool can define a check — no tool's
// input schema has a command, a check named like a command is refused,
// and the checks file is as it was after every call. With --run-checks,
// task_complete runs the check: a failing one fails the attempt with the
// evidence in the history, a passing one completes the task.
func TestMCPChecks(t *testing.T) {
	dir := project(t)
	checksFile := filepath.Join(dir, ".tasks", taskgraph.ChecksFile)
	checks := []byte(`{"marked": {"command": "echo ran >> marker.txt; test -f ok.txt", "timeout": "30s"}}`)
	require.NoError(t, os.WriteFile(checksFile, checks, 0o644))
	ok(t, dir, "add", "checked", "--check", "marked", "--max-attempts", "3")

	plain := startMCP(t, dir, cleanEnv(), "--owner", "agent")
	plain.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	for _, tool := range plain.reply()["result"].(map[string]any)["tools"].([]any) {
		schema, _ := json.Marshal(tool.(map[string]any)["inputSchema"])
		assert.NotContains(t, strings.ToLower(string(schema)), "command", "no tool takes a command")
	}
	text, isErr := plain.call(3, "task_create", `{"subject": "sneaky", "check": "sh -c 'touch pwned'"}`)
	assert.True(t, isErr, "a check is named, never a command: %s", text)
	assert.Contains(t, text, "not a check name")
	text, isErr = plain.call(4, "task_claim", `{"task_id": 1}`)
	require.False(t, isErr, text)
	text, isErr = plain.call(5, "task_complete", `{"task_id": 1}`)
	assert.True(t, isErr, text)
	assert.Contains(t, text, `its check "marked" has not passed`)
	text, isErr = plain.call(6, "task_update", `{"task_id": 1, "status": "completed"}`)
	assert.True(t, isErr, text)
	assert.NoFileExists(t, filepath.Join(dir, "marker.txt"), "without --run-checks the server runs no command")
	assert.Equal(t, "in_progress", showJSON(t, dir, 1)["status"])
	text, isErr = plain.call(7, "task_release", `{"task_id": 1}`)
	require.False(t, isErr, text)

	runs := startMCP(t, dir, cleanEnv(), "--owner", "runner", "--run-checks")
	text, isErr = runs.call(2, "task_claim", `{"task_id": 1}`)
	require.False(t, isErr, text)
	text, isErr = runs.call(3, "task_complete", `{"task_id": 1}`)
	assert.True(t, isErr, text)
	assert.Contains(t, text, "check marked failed: exit 1")
	assert.FileExists(t, filepath.Join(dir, "marker.txt"), "--run-checks ran it")
	h := historyOf(t, dir, 1)
	assert.Equal(t, taskgraph.HistoryFailed, h[len(h)-1].Event)
	assert.Contains(t, h[len(h)-1].Detail, "check marked failed: exit 1")
	assert.Equal(t, "pending", showJSON(t, dir, 1)["status"], "a failed attempt; the retry waits for its claim")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.txt"), nil, 0o644))
	text, isErr = runs.call(4, "task_claim", `{"task_id": 1}`)
	require.False(t, isErr, text)
	text, isErr = runs.call(5, "task_complete", `{"task_id": 1}`)
	require.False(t, isErr, text)
	assert.Contains(t, text, "Completed #1")
	h = historyOf(t, dir, 1)
	assert.Equal(t, taskgraph.HistoryVerified, h[len(h)-2].Event)
	assert.Contains(t, h[len(h)-2].Detail, "check marked passed: exit 0")

	after, err := os.ReadFile(checksFile)
	require.NoError(t, err)
	assert.Equal(t, checks, after, "no tool call changed the checks file")
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// next says plainly whether to wait or stop when it claims nothing: 3
// nothing ready now (and why), 5 finished, 6 finished with tasks failed or
// stranded.
func TestNextSaysWaitOrStop(t *testing.T) {
	dir := project(t)
	r := tg(t, dir, "next")
	assert.Equal(t, exitFinished, r.code)
	assert.Equal(t, "taskgraph next: finished: nothing left to do\n", r.stderr)
	assert.Empty(t, r.stdout)

	ok(t, dir, "add", "build")
	ok(t, dir, "add", "test", "--after", "1")
	ok(t, dir, "add", "docs")
	ok(t, dir, "claim", "3", "--owner", "me")
	ok(t, dir, "claim", "1", "--owner", "other", "--lease", "5m")
	r = tg(t, dir, "next", "--owner", "me")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Regexp(t, `^taskgraph next: nothing ready now: 2 in progress \(1 by you\), the next lease lapses in (4m5\ds|5m0s); taskgraph next --wait --owner me waits for one\n$`, r.stderr)
	var out map[string]any
	r = tg(t, dir, "next", "--owner", "me", "--json")
	assert.Equal(t, exitUnavailable, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, "nothing_ready", out["outcome"])
	assert.Contains(t, out["message"], "nothing ready now: 2 in progress (1 by you)")
	assert.Empty(t, r.stderr, "--json says it on stdout")

	ok(t, dir, "done", "3", "--owner", "me")
	ok(t, dir, "fail", "1", "broke", "--owner", "other")
	r = tg(t, dir, "next")
	assert.Equal(t, exitStalled, r.code)
	assert.Equal(t, "taskgraph next: finished, but 2 tasks failed or are stranded: #1 (failed), #2 (stranded); reopen a failed task (taskgraph reopen ID) to go on, and taskgraph explain ID says what strands a task\n", r.stderr)
	r = tg(t, dir, "next", "--json")
	assert.Equal(t, exitStalled, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, map[string]any{"outcome": "stalled", "message": out["message"], "failed": []any{1.0}, "stranded": []any{2.0}}, out)

	ok(t, dir, "reopen", "1")
	ok(t, dir, "claim", "1", "--owner", "other")
	r = tg(t, dir, "next")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Contains(t, r.stderr, "nothing ready now: 1 in progress by others, held without a lease that lapses")
	ok(t, dir, "done", "1", "--force")
	ok(t, dir, "next")
	ok(t, dir, "done", "2")
	r = tg(t, dir, "next", "--json")
	assert.Equal(t, exitFinished, r.code)
	out = nil
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, map[string]any{"outcome": "finished", "message": "finished: nothing left to do"}, out)

	// Nothing in progress, and what is pending waits on a task that does
	// not exist (its file was removed by hand).
	ok(t, dir, "add", "deploy", "--after", "2")
	require.NoError(t, os.Remove(filepath.Join(dir, ".tasks", "task_2.json")))
	r = tg(t, dir, "next")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Contains(t, r.stderr, "nothing ready now: 1 blocked on missing tasks [2] (create them, or remove the edges with taskgraph dep rm)")
}

// waiter is `taskgraph next --wait` running in the background.
type waiter struct {
	cmd        *exec.Cmd
	out, errb  bytes.Buffer
	done       chan struct{}
	exitStatus int
}

func startWaiter(t *testing.T, dir string, args ...string) *waiter {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"next", "--wait"}, args...)...)
	cmd.Dir, cmd.Env = dir, cleanEnv()
	return start(t, cmd)
}

// start starts cmd, a command that waits, and returns it as a waiter.
func start(t *testing.T, cmd *exec.Cmd) *waiter {
	t.Helper()
	w := &waiter{cmd: cmd, done: make(chan struct{})}
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.errb
	require.NoError(t, w.cmd.Start())
	go func() {
		_ = w.cmd.Wait()
		w.exitStatus = w.cmd.ProcessState.ExitCode()
		close(w.done)
	}()
	t.Cleanup(func() { _ = w.cmd.Process.Kill(); <-w.done })
	return w
}

// waiting requires w to be still waiting after a while.
func (w *waiter) waiting(t *testing.T) {
	t.Helper()
	select {
	case <-w.done:
		t.Fatalf("next --wait returned %d: %s%s", w.exitStatus, w.out.String(), w.errb.String())
	case <-time.After(700 * time.Millisecond):
	}
}

// result waits for w to end and returns its exit status.
func (w *waiter) result(t *testing.T) int {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		t.Fatal("next --wait did not return")
	}
	return w.exitStatus
}

// next --wait blocks until it claims a task or the graph is finished;
// --timeout bounds it.
func TestNextWait(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "build")
	ok(t, dir, "add", "test", "--after", "1")
	ok(t, dir, "claim", "1", "--owner", "other")

	// A blocker completes: the waiter claims what it freed.
	w := startWaiter(t, dir, "--owner", "me")
	w.waiting(t)
	ok(t, dir, "done", "1", "--owner", "other")
	require.Equal(t, 0, w.result(t), w.errb.String())
	assert.Equal(t, "Claimed #2: test (owner me)\n", w.out.String())

	// Nothing comes: --timeout gives up with exit status 3.
	start := time.Now()
	r := tg(t, dir, "next", "--wait", "--timeout", "300ms", "--owner", "other")
	assert.Equal(t, exitUnavailable, r.code)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Contains(t, r.stderr, "taskgraph next: nothing ready now (waited 300ms): 1 in progress by others")

	// The last task completes: the waiter stops, finished.
	w = startWaiter(t, dir, "--owner", "other")
	w.waiting(t)
	ok(t, dir, "done", "2", "--owner", "me")
	assert.Equal(t, exitFinished, w.result(t))
	assert.Equal(t, "taskgraph next: finished: nothing left to do\n", w.errb.String())

	// The last task fails: the waiter stops, saying what failed.
	ok(t, dir, "add", "deploy")
	ok(t, dir, "claim", "3", "--owner", "me")
	w = startWaiter(t, dir, "--owner", "other", "--json")
	w.waiting(t)
	ok(t, dir, "fail", "3", "no access", "--owner", "me")
	assert.Equal(t, exitStalled, w.result(t))
	var out map[string]any
	require.NoError(t, json.Unmarshal(w.out.Bytes(), &out), w.out.String())
	assert.Equal(t, "stalled", out["outcome"])
	assert.Equal(t, []any{3.0}, out["failed"])

	// A lease lapses: the waiter takes the task over.
	ok(t, dir, "reopen", "3")
	ok(t, dir, "claim", "3", "--owner", "me", "--lease", "1s")
	w = startWaiter(t, dir, "--owner", "other")
	assert.Equal(t, 0, w.result(t), w.errb.String())
	assert.Equal(t, "Claimed #3: deploy (owner other)\n", w.out.String())

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"next", "--timeout", "1s"}, "--timeout 1s bounds --wait: give --wait too"},
		{[]string{"next", "--wait", "--timeout", "-1s"}, "--timeout -1s: a timeout cannot be negative"},
	} {
		r := tg(t, dir, c.args...)
		assert.Equal(t, exitUsage, r.code, "%v", c.args)
		assert.Contains(t, r.stderr, c.want, "%v", c.args)
	}
}

// With a task file that cannot be read, next that claims nothing fails
// with the corrupt file (exit 1), with or without --wait, as task_wait and
// Work do: the unreadable task may be pending, so the graph is not known
// to be finished, nor what to wait on.
func TestNextWithACorruptFile(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	ok(t, dir, "next", "--owner", "me")
	ok(t, dir, "done", "1", "--owner", "me")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".tasks", "task_2.json"), []byte("{garbage"), 0o644))
	for _, args := range [][]string{
		{"next"}, {"next", "--json"}, {"next", "--wait", "--timeout", "1s"},
	} {
		r := tg(t, dir, args...)
		assert.Equal(t, exitError, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "corrupt task file", args)
		assert.Contains(t, r.stderr, "task_2.json", args)
		assert.NotContains(t, r.stdout+r.stderr, "finished", args)
	}
	// A readable ready task is still claimed.
	ok(t, dir, "add", "b")
	r := tg(t, dir, "next", "--owner", "me")
	assert.Equal(t, exitOK, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Claimed #3")
}

// next --under ID --wait waits for a task under ID, not for any ready
// task, and stops when every task under ID is done, whatever else the
// graph holds.
func TestNextUnderWait(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "epic")
	ok(t, dir, "add", "a", "--parent", "1")
	ok(t, dir, "add", "b", "--parent", "1", "--after", "2")
	ok(t, dir, "add", "elsewhere") // ready, but not under #1
	ok(t, dir, "claim", "2", "--owner", "other")

	w := startWaiter(t, dir, "--under", "1", "--owner", "me")
	w.waiting(t)
	ok(t, dir, "done", "2", "--owner", "other")
	require.Equal(t, 0, w.result(t), w.errb.String())
	assert.Equal(t, "Claimed #3: b (owner me)\n", w.out.String())

	r := tg(t, dir, "next", "--under", "1", "--owner", "else")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Equal(t, "taskgraph next: nothing ready now under #1: 1 in progress by others, held without a lease that lapses; taskgraph next --wait --under 1 --owner else waits for one\n", r.stderr)

	w = startWaiter(t, dir, "--under", "1", "--owner", "else")
	w.waiting(t)
	ok(t, dir, "done", "3", "--owner", "me")
	assert.Equal(t, exitFinished, w.result(t))
	assert.Equal(t, "taskgraph next: finished: nothing left to do under #1\n", w.errb.String())
	r = tg(t, dir, "next", "--under", "1", "--json")
	assert.Equal(t, exitFinished, r.code)
	assert.JSONEq(t, `{"outcome": "finished", "message": "finished: nothing left to do under #1"}`, r.stdout)
	assert.Contains(t, ok(t, dir, "next", "--owner", "me"), "#1: epic", "the graph is not finished")

	// Stalled under the epic: it says so of the epic. (An epic gains
	// children only while it has not begun: no task is begun before its
	// blockers are done.)
	ok(t, dir, "release", "1", "--owner", "me")
	ok(t, dir, "add", "c", "--parent", "1")
	ok(t, dir, "add", "d", "--parent", "1", "--after", "5")
	ok(t, dir, "claim", "5", "--owner", "me")
	ok(t, dir, "fail", "5", "broke", "--owner", "me")
	r = tg(t, dir, "next", "--under", "1")
	assert.Equal(t, exitStalled, r.code, r.stderr)
	assert.True(t, strings.HasPrefix(r.stderr, "taskgraph next: finished under #1, but 2 tasks failed or are stranded: #5 (failed), #6 (stranded);"), r.stderr)

	// A parent that does not exist: an error, not "finished".
	for _, args := range [][]string{{"next", "--under", "99"}, {"next", "--under", "99", "--wait"}, {"list", "--under", "99"}, {"ready", "--under", "99"}} {
		r := tg(t, dir, args...)
		assert.Equal(t, exitError, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "99", args)
		assert.NotContains(t, r.stderr, "finished", args)
	}
}

// next's hint is the command as given, waiting: run in a shell, it waits
// for a task with the same labels and claims it under the same identity.
func TestNextHintIsTheSameCommand(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs POSIX sh: the hint is run as a shell command line, as a person would paste it")
	}
	dir := project(t)
	ok(t, dir, "add", "write it", "--label", "dev") // ready, but not a review
	ok(t, dir, "add", "review it", "--label", "review", "--after", "1")
	r := tg(t, dir, "next", "--label", "review", "--owner", "the reviewer", "--")
	require.Equal(t, exitUnavailable, r.code, r.stderr)
	m := regexp.MustCompile(`; (taskgraph next .*) waits for one\n$`).FindStringSubmatch(r.stderr)
	require.Len(t, m, 2, r.stderr)
	assert.Equal(t, "taskgraph next --wait --label review --owner 'the reviewer' --", m[1])

	cmd := exec.Command("sh", "-c", m[1])
	cmd.Dir, cmd.Env = dir, cleanEnv("PATH="+filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	w := start(t, cmd)
	w.waiting(t) // #1 is ready, but not a review
	ok(t, dir, "claim", "1", "--owner", "dev")
	ok(t, dir, "done", "1", "--owner", "dev")
	require.Equal(t, 0, w.result(t), w.errb.String())
	assert.Equal(t, "Claimed #2: review it (owner the reviewer)\n", w.out.String())
}

// TestShellLine: what a shell would split or expand is quoted.
func TestShellLine(t *testing.T) {
	assert.Equal(t, `taskgraph next --label a,b --owner=x@host --dir ./p/.tasks`, shellLine([]string{"taskgraph", "next", "--label", "a,b", "--owner=x@host", "--dir", "./p/.tasks"}))
	assert.Equal(t, `a 'b c' '' 'it'\''s' '$HOME' '*' '=x' '~' a=b`, shellLine([]string{"a", "b c", "", "it's", "$HOME", "*", "=x", "~", "a=b"}))
}

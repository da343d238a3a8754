package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSyscallFaultsOfAMultiFileWrite: the real command, a real kernel, one
// system call failing at a time (strace's fault injection) at each of its
// occurrences (once, and from there on) in `taskgraph add five --blocks 2 --blocks 3`, a write of
// three files. Each run ends one of three ways, checked by a fresh
// `taskgraph list` afterwards: success and applied; an error and not
// applied; or "may or may not have happened" — only where a sync failed,
// at the commit point. (Before, an unlinkat of the journal failing after
// the write was durable was reported as an unknown outcome: issue 45.)
func TestSyscallFaultsOfAMultiFileWrite(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("SYSCALL FAULT TEST NOT RUN: strace is not installed (apt-get install strace; CI has it)")
	}
	template := t.TempDir()
	ok(t, template, "init")
	for _, s := range []string{"one", "two", "three"} {
		ok(t, template, "add", s)
	}
	// Every call, at each of its occurrences. Background work (the spares
	// made after the lock) interleaves its own calls, so an occurrence's
	// number is not the same step from run to run: each run is judged on
	// its outcome alone.
	counts, runs := map[string]int{}, map[string]int{}
	for _, call := range []string{"unlinkat", "fsync", "fdatasync", "syncfs", "renameat", "openat", "write", "pwrite64"} {
		n := syscallCount(t, template, call)
		runs[call] = n
		for at := 1; at <= 2*n; at++ {
			if multiFileWriteFault(t, template, call, occurrence(at)) == "unknown" {
				counts[call]++
			}
		}
	}
	t.Logf("runs by failing call: %v; unknown outcomes: %v", runs, counts)
	require.Positive(t, runs["unlinkat"], "the calls were traced")

	require.Positive(t, runs["fsync"], "the calls were traced")
}

// occurrence is strace's occurrence spec for the at-th run: 1, 1+, 2, 2+, …
// (once, and from that occurrence on).
func occurrence(at int) string {
	return fmt.Sprint((at+1)/2) + map[bool]string{true: "+"}[at%2 == 0]
}

// multiFileWriteFault runs the three-file write in a copy of template
// with call failing at occurrence spec w, checks the outcome against what
// a fresh list reads, and says which it was: "applied", "not applied" or
// "unknown".
func multiFileWriteFault(t *testing.T, template, call, w string) string {
	t.Helper()
	dir := copyGraph(t, template)
	cmd := exec.Command("strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace="+call,
		"-e", fmt.Sprintf("inject=%s:error=EIO:when=%s", call, w), binary, "add", "five", "--blocks", "2", "--blocks", "3")
	cmd.Dir, cmd.Env = dir, cleanEnv()
	r := collect(t, cmd)
	applied := hasTask(t, dir, "five")
	name := fmt.Sprintf("%s #%s failing: exit %d: %s", call, w, r.code, strings.TrimSpace(r.stderr))
	if os.Getenv("SHOW_FAULTS") != "" {
		t.Logf("%s (applied %v)", name, applied)
	}
	switch {
	case r.code == 0:
		assert.True(t, applied, "%s: success means applied", name)
		return "applied"
	case strings.Contains(r.stderr, "may or may not have happened"):
		assert.Contains(t, []string{"fsync", "fdatasync", "syncfs"}, call, "%s: an unknown outcome only at the commit point, a sync", name)
		return "unknown"
	default:
		assert.False(t, applied, "%s: an error means not applied", name)
		return "not applied"
	}
}

// syscallCount is how many times the multi-file write makes call.
func syscallCount(t *testing.T, template, call string) int {
	t.Helper()
	dir := copyGraph(t, template)
	out := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command("strace", "-f", "-qq", "-o", out, "-e", "trace="+call, binary, "add", "five", "--blocks", "2", "--blocks", "3")
	cmd.Dir, cmd.Env = dir, cleanEnv()
	r := collect(t, cmd)
	require.Equal(t, 0, r.code, r.stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	return strings.Count(string(data), call+"(")
}

// copyGraph copies the graph in template/.tasks to a new directory,
// without its cache (the snapshot, written after the lock, may or may not
// be there yet), so that every run reads the same files the same way.
func copyGraph(t *testing.T, template string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, exec.Command("cp", "-a", filepath.Join(template, ".tasks"), dir).Run())
	require.NoError(t, os.RemoveAll(filepath.Join(dir, ".tasks", ".taskgraph.cache")))
	return dir
}

// hasTask reports whether the graph in dir has a task with subject.
func hasTask(t *testing.T, dir, subject string) bool {
	t.Helper()
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "list", "--json")), &list))
	for _, task := range list {
		if task["subject"] == subject {
			return true
		}
	}
	return false
}

//go:build windows && wine

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The command line after a write of several files whose journal cannot be
// removed, with a release build of taskgraph.exe, whose delete Wine 8
// refuses (scripts/wine-test builds it beside the test build, whose delete
// takes the fallback Wine has). The write has happened and says so; every
// later read — list, show, ready — reads the tasks as the journal leaves
// them; check says what it sees and promises nothing the next command will
// not do; another write is refused with the reason, not "may or may not
// have happened"; and the first build that can delete applies and removes
// the journal. (Before, every later command, reads included, answered "the
// write may or may not have happened", and check promised that the next
// operation would finish the journal: issue 43.)
func TestJournalUnderWinesReleaseDeleteCLI(t *testing.T) {
	release := os.Getenv("TASKGRAPH_TEST_RELEASE_BINARY")
	require.NotEmpty(t, release, "scripts/wine-test names the release build of taskgraph.exe in TASKGRAPH_TEST_RELEASE_BINARY")
	rel := func(dir string, args ...string) result {
		t.Helper()
		cmd := exec.Command(release, args...)
		cmd.Dir = dir
		cmd.Env = cleanEnv()
		return collect(t, cmd)
	}
	dir := project(t)
	for _, s := range []string{"one", "two", "three"} {
		ok(t, dir, "add", s)
	}

	r := rel(dir, "add", "five", "--blocks", "2", "--blocks", "3")
	journal := filepath.Join(dir, ".tasks", ".taskgraph.journal")
	if _, err := os.Stat(journal); err != nil {
		t.Skipf("WINE DELETES WITH THE RELEASE BUILD'S PATH NOW: the journal was removed (%v), so a journal that cannot be removed is not staged here; faults_test.go TestJournalThatCannotBeRemoved stages it on Linux", err)
	}
	require.Equal(t, 0, r.code, "the write has happened: %s", r.stderr)
	assert.Equal(t, "Created #4: five\n", r.stdout)

	for _, args := range [][]string{{"list"}, {"show", "2"}, {"ready"}} {
		r = rel(dir, args...)
		require.Equal(t, 0, r.code, "%v reads on: %s", args, r.stderr)
		assert.NotContains(t, r.stderr, "may or may not", args)
	}
	assert.Contains(t, rel(dir, "list").stdout, "[ ] #2: two (blocked by: [4])\n", "as the journal leaves the tasks")
	assert.Equal(t, "[ ] #1: one\n[ ] #4: five\n", rel(dir, "ready").stdout)

	r = rel(dir, "check")
	assert.Contains(t, r.stdout+r.stderr, "has happened", "check says what it sees")
	assert.NotContains(t, r.stdout+r.stderr, "the next operation", "check promises nothing the next command will not do")

	r = rel(dir, "add", "six")
	assert.Equal(t, exitError, r.code, "another write is refused: %s", r.stdout)
	assert.NotContains(t, r.stderr, "may or may not", "not an unknown outcome: it did not happen, and says why")
	assert.NotContains(t, ok(t, dir, "list"), "six")

	// A build that can delete applies the journal and goes on.
	assert.Equal(t, "Created #5: six\n", ok(t, dir, "add", "six"))
	_, err := os.Stat(journal)
	assert.True(t, os.IsNotExist(err), "the journal is applied and removed: %v", err)
	r = tg(t, dir, "check")
	assert.Equal(t, 0, r.code, "%s%s", r.stdout, r.stderr)
}

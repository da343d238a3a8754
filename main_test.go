package taskgraph_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// TestMain lets the test binary re-execute itself as a worker process: the
// multi-process, crash and soak tests run real processes of their roles.
func TestMain(m *testing.M) {
	tg.SetSnapshotMin(1)
	if role := os.Getenv("TASKGRAPH_TEST_ROLE"); role != "" {
		os.Exit(runRole(role, os.Getenv("TASKGRAPH_TEST_DIR"), os.Getenv("TASKGRAPH_TEST_ARG")))
	}
	os.Exit(m.Run())
}

// roles are the worker processes the tests start, by name. Each gets a
// store on the test's directory and the test's argument, and returns the
// process's exit code. The files of tests that do not build on Windows
// add theirs in an init: "mutate" (durability_test.go), "soak"
// (soak_test.go), "work" (work_test.go).
var roles = map[string]func(s *tg.FileStore, dir, arg string) int{
	"claimnext": claimAll,      // multiprocess_test.go
	"labelled":  claimLabelled, // multiprocess_test.go
	"limited":   claimLimited,  // multiprocess_test.go
	"increment": increment,     // multiprocess_test.go
	"holdlock":  holdLock,      // multiprocess_test.go
}

// worker starts the test binary as a worker process in role.
func worker(t *testing.T, role, dir, arg string) *exec.Cmd {
	t.Helper()
	require.Contains(t, roles, role)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TASKGRAPH_TEST_ROLE="+role, "TASKGRAPH_TEST_DIR="+dir, "TASKGRAPH_TEST_ARG="+arg)
	cmd.Stderr = os.Stderr
	return cmd
}

func runRole(role, dir, arg string) int {
	run, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "no worker role %q\n", role)
		return 2
	}
	s, err := tg.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	return run(s, dir, arg)
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(from)))
	return dir
}

func idsOf(ts []tg.Task) []tg.ID {
	out := []tg.ID{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// mountTmpfs mounts a small tmpfs at a new directory. The test machines
// run as root; elsewhere the test says why it cannot run.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("needs root to mount a tmpfs (%v: %s); CI runs as root", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() {
			continue // the cache directory: not the graph
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(data)
	}
	return out
}

var ctx = context.Background()

// openStore opens a FileStore on dir that the test closes when it ends.
func openStore(t testing.TB, dir string, opts ...tg.Option) *tg.FileStore {
	t.Helper()
	s, err := tg.Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// Package gittest runs real git for the tests of the packages that place a
// graph in a repository (the root, gitrepo): one copy of the helpers they
// share.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Need skips a test that needs the git binary when there is none, saying
// so loudly.
func Need(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("GIT TEST NOT RUN: no git binary on PATH; these tests check taskgraph against the layouts real git makes (install git to run them)")
	}
}

// Run runs git in dir, with no system or user configuration, and fails the
// test unless it succeeds; it returns git's output.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// RealDir returns a new empty directory, its path free of symlinks (git
// writes resolved paths in its link files).
func RealDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

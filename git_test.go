package taskgraph

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
)

// needGit skips a test that needs the git binary when there is none.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("GIT TEST NOT RUN: no git binary on PATH; these tests check taskgraph against the layouts real git makes (install git to run them)")
	}
}

// runGit runs git in dir and requires it to succeed; it returns its output.
func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// realDir returns a new empty directory, its path free of symlinks (git
// writes resolved paths in its link files).
func realDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return dir
}

// After a store's writes in a git repository, git add -A stages task files,
// the meta file and the .gitignore only.
func TestGitIgnoreAfterWrites(t *testing.T) {
	needGit(t)
	repo := realDir(t)
	runGit(t, repo, "init", "-q")
	dir := filepath.Join(repo, gitrepo.DirName)
	s, err := Open(dir)
	require.NoError(t, err)
	defer s.Close()
	_, err = gitrepo.WriteIgnore(dir)
	require.NoError(t, err)
	ctx := context.Background()
	a, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	b, err := s.Create(ctx, NewTask{Subject: "b", BlockedBy: []ID{a.ID}})
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "me", WithLease(time.Hour))
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, b.ID))

	runGit(t, repo, "add", "-A")
	status := runGit(t, repo, "status", "--porcelain", "--ignored")
	var staged, ignored []string
	for l := range strings.Lines(status) {
		l = strings.TrimRight(l, "\n")
		switch {
		case strings.HasPrefix(l, "A  "):
			staged = append(staged, l[3:])
		case strings.HasPrefix(l, "!! "):
			ignored = append(ignored, l[3:])
		default:
			t.Errorf("unexpected status line %q", l)
		}
	}
	assert.Equal(t, []string{".tasks/.gitignore", ".tasks/.taskgraph.meta", ".tasks/task_1.json"}, staged)
	assert.Contains(t, ignored, ".tasks/.taskgraph.lock")
	assert.Contains(t, ignored, ".tasks/.taskgraph.log")
	assert.Contains(t, ignored, ".tasks/.taskgraph.ids")
}

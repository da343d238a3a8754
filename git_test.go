package taskgraph

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
	"github.com/taskgraph-dev/taskgraph/internal/gittest"
)

// The git helpers the tests share (internal/gittest).
var (
	needGit = gittest.Need
	runGit  = gittest.Run
	realDir = gittest.RealDir
)

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

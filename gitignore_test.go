package taskgraph

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
)

// Every file a FileStore keeps beside the tasks that is this machine's is
// ignored by git, and nothing of the graph is.
func TestGitIgnoreCoversEveryMachineFile(t *testing.T) {
	needGit(t)
	repo := realDir(t)
	runGit(t, repo, "init", "-q")
	dir := filepath.Join(repo, DirName)
	mkdirs(t, dir)
	changed, err := WriteGitIgnore(dir)
	require.NoError(t, err)
	assert.True(t, changed)

	machine := []string{
		lockFileName, logFileName, syncFileName, journalFileName, TokensFileName,
		setAsideLogPrefix + "20260101T000000.000000000Z",
		filepath.Join(lostDirName, "task_3.json.20260101T000000.000000000Z"),
		atomicfile.TempName(metaFileName), atomicfile.TempName(journalFileName),
		atomicfile.TempName("task_12.json"),
	}
	graph := []string{"task_1.json", "task_12.json", metaFileName, GitIgnoreName}
	for _, name := range append(slices.Clone(machine), graph...) {
		mkdirs(t, filepath.Dir(filepath.Join(dir, name)))
		if name != GitIgnoreName {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("x\n"), 0o644))
		}
	}
	runGit(t, repo, "add", "-A")
	var staged []string
	for l := range strings.Lines(runGit(t, repo, "diff", "--cached", "--name-only")) {
		staged = append(staged, strings.TrimSpace(l))
	}
	var want []string
	for _, name := range graph {
		want = append(want, DirName+"/"+name)
	}
	slices.Sort(want)
	assert.Equal(t, want, staged, "git add -A stages the graph's files and no machine's")
}

// After a store's writes in a git repository, git add -A stages task files,
// the meta file and the .gitignore only.
func TestGitIgnoreAfterWrites(t *testing.T) {
	needGit(t)
	repo := realDir(t)
	runGit(t, repo, "init", "-q")
	dir := filepath.Join(repo, DirName)
	s, err := Open(dir)
	require.NoError(t, err)
	defer s.Close()
	_, err = WriteGitIgnore(dir)
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

func TestWriteGitIgnoreKeepsWhatIsThereAndIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, GitIgnoreName)
	// A file of the user's, without a final newline, that already has
	// one of the lines.
	require.NoError(t, os.WriteFile(name, []byte("*.swp\n.taskgraph.lock"), 0o644))
	missing, err := GitIgnoreMissing(dir)
	require.NoError(t, err)
	assert.Len(t, missing, len(gitIgnorePatterns)-1)

	changed, err := WriteGitIgnore(dir)
	require.NoError(t, err)
	assert.True(t, changed)
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "*.swp\n.taskgraph.lock\n"+gitIgnoreHeader+"\n"), "%s", data)
	assert.Equal(t, 1, strings.Count(string(data), ".taskgraph.lock\n"))
	missing, err = GitIgnoreMissing(dir)
	require.NoError(t, err)
	assert.Empty(t, missing)

	changed, err = WriteGitIgnore(dir)
	require.NoError(t, err)
	assert.False(t, changed)
	again, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again))

	// One line gone: only it comes back, under the header already there.
	require.NoError(t, os.WriteFile(name, []byte(strings.Replace(string(data), syncFileName+"\n", "", 1)), 0o644))
	changed, err = WriteGitIgnore(dir)
	require.NoError(t, err)
	assert.True(t, changed)
	fixed, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(fixed), gitIgnoreHeader))
	assert.True(t, strings.HasSuffix(string(fixed), "\n"+syncFileName+"\n"))

	missing, err = GitIgnoreMissing(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, gitIgnorePatterns, missing, "no file: everything is missing")
}

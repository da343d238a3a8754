package gitrepo

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// Every file a FileStore keeps beside the tasks that is this machine's is
// ignored by git, and nothing of the graph is.
func TestGitIgnoreCoversEveryMachineFile(t *testing.T) {
	needGit(t)
	repo := realDir(t)
	runGit(t, repo, "init", "-q")
	dir := filepath.Join(repo, DirName)
	mkdirs(t, dir)
	changed, err := WriteIgnore(dir)
	require.NoError(t, err)
	assert.True(t, changed)

	machine := []string{
		filenames.Lock, filenames.Log, filenames.Sync, filenames.Journal, filenames.Tokens,
		filenames.SetAsideLogPrefix + "20260101T000000.000000000Z",
		filepath.Join(filenames.LostDir, "task_3.json.20260101T000000.000000000Z"),
		atomicfile.TempName(filenames.Meta), atomicfile.TempName(filenames.Journal),
		atomicfile.TempName("task_12.json"),
	}
	graph := []string{"task_1.json", "task_12.json", filenames.Meta, IgnoreName}
	for _, name := range append(slices.Clone(machine), graph...) {
		mkdirs(t, filepath.Dir(filepath.Join(dir, name)))
		if name != IgnoreName {
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

func TestWriteGitIgnoreKeepsWhatIsThereAndIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, IgnoreName)
	// A file of the user's, without a final newline, that already has
	// one of the lines.
	require.NoError(t, os.WriteFile(name, []byte("*.swp\n.taskgraph.lock"), 0o644))
	missing, err := IgnoreMissing(dir)
	require.NoError(t, err)
	assert.Len(t, missing, len(gitIgnorePatterns)-1)

	changed, err := WriteIgnore(dir)
	require.NoError(t, err)
	assert.True(t, changed)
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "*.swp\n.taskgraph.lock\n"+gitIgnoreHeader+"\n"), "%s", data)
	assert.Equal(t, 1, strings.Count(string(data), ".taskgraph.lock\n"))
	missing, err = IgnoreMissing(dir)
	require.NoError(t, err)
	assert.Empty(t, missing)

	changed, err = WriteIgnore(dir)
	require.NoError(t, err)
	assert.False(t, changed)
	again, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(again))

	// One line gone: only it comes back, under the header already there.
	require.NoError(t, os.WriteFile(name, []byte(strings.Replace(string(data), filenames.Sync+"\n", "", 1)), 0o644))
	changed, err = WriteIgnore(dir)
	require.NoError(t, err)
	assert.True(t, changed)
	fixed, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, 1, strings.Count(string(fixed), gitIgnoreHeader))
	assert.True(t, strings.HasSuffix(string(fixed), "\n"+filenames.Sync+"\n"))

	missing, err = IgnoreMissing(t.TempDir())
	require.NoError(t, err)
	assert.Equal(t, gitIgnorePatterns, missing, "no file: everything is missing")
}

package gitrepo

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/internal/gittest"
)

// The git helpers the tests share (internal/gittest).
var (
	needGit = gittest.Need
	runGit  = gittest.Run
	realDir = gittest.RealDir
)

// mkdirs makes each directory, with its parents.
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
}

func findDir(t *testing.T, start string) string {
	t.Helper()
	dir, err := FindDir(start)
	require.NoError(t, err)
	return dir
}

func TestFindDirUpwardToTheRepository(t *testing.T) {
	root := realDir(t)
	repo := filepath.Join(root, "repo")
	deep := filepath.Join(repo, "src", "pkg")
	mkdirs(t, filepath.Join(repo, ".git"), filepath.Join(repo, DirName), deep)

	assert.Equal(t, filepath.Join(repo, DirName), findDir(t, deep))
	assert.Equal(t, filepath.Join(repo, DirName), findDir(t, repo))

	// A nested repository is a boundary: the graph above is not its own,
	// though one above every repository is found.
	inner := filepath.Join(repo, "vendor", "lib")
	mkdirs(t, filepath.Join(inner, ".git"))
	assert.Equal(t, "", findDir(t, inner))
	mkdirs(t, filepath.Join(root, "plain", DirName), filepath.Join(root, "plain", "a", "b"))
	assert.Equal(t, filepath.Join(root, "plain", DirName), findDir(t, filepath.Join(root, "plain", "a", "b")))

	// A file named .tasks is not a task directory.
	other := filepath.Join(root, "other")
	mkdirs(t, filepath.Join(other, ".git"))
	require.NoError(t, os.WriteFile(filepath.Join(other, DirName), nil, 0o644))
	assert.Equal(t, "", findDir(t, other))
}

// A linked worktree uses the main worktree's graph — from its top and from
// below it, and although it has a checked-out copy of its own.
func TestFindDirLinkedWorktreeUsesTheMainOne(t *testing.T) {
	needGit(t)
	root := realDir(t)
	main := filepath.Join(root, "main")
	runGit(t, root, "init", "-q", "main")
	mkdirs(t, filepath.Join(main, DirName), filepath.Join(main, "sub", DirName))
	require.NoError(t, os.WriteFile(filepath.Join(main, DirName, "task_1.json"), []byte(`{"id":1,"subject":"a","status":"pending","blockedBy":[]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(main, "sub", DirName, "task_1.json"), []byte(`{"id":1,"subject":"b","status":"pending","blockedBy":[]}`), 0o644))
	runGit(t, main, "add", "-A")
	runGit(t, main, "commit", "-q", "-m", "tasks")
	wt := filepath.Join(root, "wt")
	runGit(t, main, "worktree", "add", "-q", wt, "-b", "feature")
	require.DirExists(t, filepath.Join(wt, DirName), "the worktree has its own checked-out copy")
	deep := filepath.Join(wt, "src", "deep")
	mkdirs(t, deep)

	for _, start := range []string{wt, deep, filepath.Join(wt, DirName)} {
		assert.Equal(t, filepath.Join(main, DirName), findDir(t, start), "from %s", start)
	}
	// The same place relative to the top: a nested graph maps to the
	// main worktree's nested graph.
	assert.Equal(t, filepath.Join(main, "sub", DirName), findDir(t, filepath.Join(wt, "sub")))

	// A worktree inside the main worktree (a common agent setup) stops at
	// its own top, and uses the main graph too.
	inside := filepath.Join(main, ".worktrees", "agent1")
	runGit(t, main, "worktree", "add", "-q", inside, "-b", "agent1")
	assert.Equal(t, filepath.Join(main, DirName), findDir(t, inside))

	// Without a graph in the main worktree there is none: the worktree's
	// copy is not used instead.
	require.NoError(t, os.RemoveAll(filepath.Join(main, DirName)))
	assert.Equal(t, "", findDir(t, deep))
}

// A bare repository has no main worktree: its worktrees share the graph
// inside the bare repository's directory.
func TestFindDirBareRepositoryWorktrees(t *testing.T) {
	needGit(t)
	root := realDir(t)
	src := filepath.Join(root, "src")
	runGit(t, root, "init", "-q", "src")
	runGit(t, src, "commit", "-q", "--allow-empty", "-m", "first")

	// git clone --bare, then worktrees beside it.
	bare := filepath.Join(root, "repo.git")
	runGit(t, root, "clone", "-q", "--bare", src, bare)
	wt1, wt2 := filepath.Join(root, "wt1"), filepath.Join(root, "wt2")
	runGit(t, bare, "worktree", "add", "-q", wt1, "-b", "one")
	runGit(t, bare, "worktree", "add", "-q", wt2, "-b", "two")
	assert.Equal(t, "", findDir(t, wt1), "no graph yet, and none beside the bare repository is taken")
	mkdirs(t, filepath.Join(root, DirName))
	assert.Equal(t, "", findDir(t, wt1), "a .tasks beside the bare repository is not the graph")
	mkdirs(t, filepath.Join(bare, DirName))
	assert.Equal(t, filepath.Join(bare, DirName), findDir(t, wt1))
	assert.Equal(t, filepath.Join(bare, DirName), findDir(t, wt2))

	// The layout of a project directory holding the bare repository as
	// .bare, a .git file naming it, and the worktrees.
	proj := filepath.Join(root, "proj")
	runGit(t, root, "clone", "-q", "--bare", src, filepath.Join(proj, ".bare"))
	require.NoError(t, os.WriteFile(filepath.Join(proj, ".git"), []byte("gitdir: ./.bare\n"), 0o644))
	runGit(t, proj, "worktree", "add", "-q", "feat", "-b", "feat")
	mkdirs(t, filepath.Join(proj, ".bare", DirName))
	assert.Equal(t, filepath.Join(proj, ".bare", DirName), findDir(t, proj))
	assert.Equal(t, filepath.Join(proj, ".bare", DirName), findDir(t, filepath.Join(proj, "feat")))
}

// A .git file that cannot be followed is an error naming it, not a guess.
func TestFindDirBrokenGitFile(t *testing.T) {
	root := realDir(t)
	mkdirs(t, filepath.Join(root, DirName))
	wt := filepath.Join(root, "wt")
	mkdirs(t, filepath.Join(wt, DirName))
	for content, want := range map[string]string{
		"gitdir: " + filepath.Join(root, "moved", ".git", "worktrees", "wt") + "\n": "git worktree repair",
		"gitdir: C:/Users/someone/repo/.git/worktrees/wt\r\n":                       "git worktree repair",
		"not a link\n": `does not start with "gitdir: PATH"`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(wt, ".git"), []byte(content), 0o644))
		_, err := FindDir(wt)
		require.Error(t, err, "%q", content)
		assert.Contains(t, err.Error(), filepath.Join(wt, ".git"))
		assert.Contains(t, err.Error(), want)
		assert.Contains(t, err.Error(), "$TASKGRAPH_DIR")
	}
}

//go:build unix

package taskgraph

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
)

// gitGraph makes a git repository with an empty .tasks, made as taskgraph
// init makes it (Open creates it, then the .gitignore is written), and
// returns the repository and the task directory.
func gitGraph(t *testing.T) (repo, dir string) {
	t.Helper()
	needGit(t)
	repo = realDir(t)
	runGit(t, repo, "init", "-q")
	dir = filepath.Join(repo, gitrepo.DirName)
	s, err := Open(dir, WithoutSync())
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = WriteGitIgnore(dir)
	require.NoError(t, err)
	return repo, dir
}

// committedGraph is gitGraph with one task, committed, and its store.
func committedGraph(t *testing.T) (repo, dir string, s *FileStore) {
	t.Helper()
	repo, dir = gitGraph(t)
	s = openTest(t, dir)
	_, err := s.Create(context.Background(), NewTask{Subject: "a"})
	require.NoError(t, err)
	runGit(t, repo, "add", "-A")
	runGit(t, repo, "commit", "-qm", "a")
	return repo, dir, s
}

func lastID(t *testing.T, dir string) ID {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, idsFileName))
	require.NoError(t, err)
	var f struct{ Last ID }
	require.NoError(t, json.Unmarshal(data, &f))
	return f.Last
}

func openTest(t *testing.T, dir string) *FileStore {
	t.Helper()
	s, err := Open(dir, WithoutSync())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestIDsWhereTheGraphBegan: the Open that creates the task directory in
// a git checkout writes the id file {"last": 0} at once, before any task:
// the graph began here, and its ids are sequential (block 0), the last
// one recorded outside git.
func TestIDsWhereTheGraphBegan(t *testing.T) {
	_, dir := gitGraph(t)
	assert.Equal(t, ID(0), lastID(t, dir), "written by the Open that made the directory")
	s := openTest(t, dir)
	ctx := context.Background()
	a, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	plan, err := s.CreatePlan(ctx, []NewTask{{Subject: "b", Key: "b"}, {Subject: "c", Key: "c"}})
	require.NoError(t, err)
	assert.Equal(t, []ID{1, 2, 3}, []ID{a.ID, plan[0].ID, plan[1].ID})
	assert.Equal(t, ID(3), lastID(t, dir))
}

// TestIDsWithoutAnIDFile: in a git checkout, a task directory a store did
// not create — a clone made before any id was drawn, holding no task and
// no meta file — has no id file, and Open writes none: its first id
// comes from a block of its own, not block 0, which is its origin's.
func TestIDsWithoutAnIDFile(t *testing.T) {
	needGit(t)
	repo := realDir(t)
	runGit(t, repo, "init", "-q")
	dir := filepath.Join(repo, gitrepo.DirName)
	require.NoError(t, os.Mkdir(dir, 0o755)) // as git checks it out
	_, err := WriteGitIgnore(dir)
	require.NoError(t, err)
	s := openTest(t, dir)
	_, err = os.Lstat(filepath.Join(dir, idsFileName))
	require.ErrorIs(t, err, os.ErrNotExist, "Open did not make the directory: no claim")
	a, err := s.Create(context.Background(), NewTask{Subject: "a"})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, a.ID, ID(firstBlock*blockSize+1))
	assert.Equal(t, a.ID, lastID(t, dir))
}

// TestIDsWhenALimitComesFirst: a limit set before the first task writes
// the meta file; the graph still began here, and its ids are 1, 2, 3.
func TestIDsWhenALimitComesFirst(t *testing.T) {
	_, dir := gitGraph(t)
	s := openTest(t, dir)
	ctx := context.Background()
	require.NoError(t, s.SetLimit(ctx, "gpu", 2))
	a, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	assert.Equal(t, ID(1), a.ID)
	limits, err := openTest(t, dir).Limits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"gpu": 2}, limits, "another store reads the limit from the meta file")
}

// TestIDsOutsideGitAreUnchanged: outside git no id file is written and
// ids follow the highest ever allocated, as always.
func TestIDsOutsideGitAreUnchanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), gitrepo.DirName)
	s := openTest(t, dir)
	ctx := context.Background()
	for want := ID(1); want <= 3; want++ {
		task, err := s.Create(ctx, NewTask{Subject: "x"})
		require.NoError(t, err)
		assert.Equal(t, want, task.ID)
	}
	_, err := os.Lstat(filepath.Join(dir, idsFileName))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestIDsOfAClone: a checkout that received the graph (a clone: the task
// files, no id file) draws its ids from a block of its own, consecutive
// within it; two clones draw different blocks.
func TestIDsOfAClone(t *testing.T) {
	origin, _, _ := committedGraph(t)
	ctx := context.Background()

	var blocks []ID
	for range 2 {
		clone := realDir(t)
		runGit(t, clone, "clone", "-q", origin, ".")
		cdir := filepath.Join(clone, gitrepo.DirName)
		_, err := os.Lstat(filepath.Join(cdir, idsFileName))
		require.ErrorIs(t, err, os.ErrNotExist, "the id file is not committed")
		c := openTest(t, cdir)
		_, err = os.Lstat(filepath.Join(cdir, idsFileName))
		require.ErrorIs(t, err, os.ErrNotExist, "nor written by an Open that did not make the directory")
		x, err := c.Create(ctx, NewTask{Subject: "x", BlockedBy: []ID{1}})
		require.NoError(t, err)
		y, err := c.Create(ctx, NewTask{Subject: "y"})
		require.NoError(t, err)
		assert.GreaterOrEqual(t, x.ID, ID(firstBlock*blockSize+1))
		assert.Less(t, x.ID, ID((lastBlock+1)*blockSize))
		assert.Equal(t, x.ID%blockSize, ID(1), "a block starts at its first id")
		assert.Equal(t, x.ID+1, y.ID)
		assert.Equal(t, y.ID, lastID(t, cdir))
		blocks = append(blocks, x.ID/blockSize)
	}
	assert.NotEqual(t, blocks[0], blocks[1], "1 in 900,000 that this fails by chance")
}

// TestIDsAcrossBranches: switching branches removes the files of tasks
// created on the other branch, but not the id file: their ids are never
// drawn again in this checkout.
func TestIDsAcrossBranches(t *testing.T) {
	repo, dir, s := committedGraph(t)
	ctx := context.Background()
	runGit(t, repo, "checkout", "-qb", "one")
	b, err := s.Create(ctx, NewTask{Subject: "b"})
	require.NoError(t, err)
	runGit(t, repo, "add", "-A")
	runGit(t, repo, "commit", "-qm", "b")
	runGit(t, repo, "checkout", "-q", "main")
	_, err = os.Stat(filepath.Join(dir, taskFileName(b.ID)))
	require.ErrorIs(t, err, os.ErrNotExist, "the checkout removed b's file")
	c, err := s.Create(ctx, NewTask{Subject: "c"})
	require.NoError(t, err)
	assert.Equal(t, b.ID+1, c.ID, "b's id is not drawn again on another branch")

	// Losing the id file (git clean -x) is safe: the next id comes from a
	// fresh block.
	require.NoError(t, os.Remove(filepath.Join(dir, idsFileName)))
	d, err := s.Create(ctx, NewTask{Subject: "d"})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, d.ID, ID(firstBlock*blockSize+1))
}

// TestIDsWhenABlockIsFull: a checkout whose block cannot hold the next
// write's ids moves to a fresh block; a block never spills into another.
func TestIDsWhenABlockIsFull(t *testing.T) {
	_, dir := gitGraph(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, idsFileName), []byte(`{"last": 999998}`), 0o644))
	s := openTest(t, dir)
	ctx := context.Background()
	a, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	assert.Equal(t, ID(999999), a.ID)
	plan, err := s.CreatePlan(ctx, []NewTask{{Subject: "b", Key: "b"}, {Subject: "c", Key: "c"}})
	require.NoError(t, err)
	ids := []ID{plan[0].ID, plan[1].ID}
	assert.Equal(t, ids[0]+1, ids[1])
	assert.Equal(t, ID(1), ids[0]%blockSize)
	assert.GreaterOrEqual(t, ids[0], ID(firstBlock*blockSize))
	assert.Equal(t, ids[1], lastID(t, dir))
}

// TestIDsFileHostile: an id file that cannot be used refuses creates with
// a CorruptError that says what to do; reads and every other write go on,
// and nothing is changed.
func TestIDsFileHostile(t *testing.T) {
	for name, make := range map[string]func(string) error{
		"garbage":   func(p string) error { return os.WriteFile(p, []byte("{not json"), 0o644) },
		"negative":  func(p string) error { return os.WriteFile(p, []byte(`{"last": -1}`), 0o644) },
		"huge":      func(p string) error { return os.WriteFile(p, []byte(`{"last": 9007199254740993}`), 0o644) },
		"no last":   func(p string) error { return os.WriteFile(p, []byte(`{}`), 0o644) },
		"directory": func(p string) error { return os.Mkdir(p, 0o755) },
		"fifo":      func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"symlink":   func(p string) error { return os.Symlink("/etc/passwd", p) },
	} {
		t.Run(name, func(t *testing.T) {
			_, dir := gitGraph(t)
			ctx := context.Background()
			s := openTest(t, dir)
			a, err := s.Create(ctx, NewTask{Subject: "a"})
			require.NoError(t, err)
			idsPath := filepath.Join(dir, idsFileName)
			require.NoError(t, os.Remove(idsPath))
			require.NoError(t, make(idsPath))

			_, err = s.Create(ctx, NewTask{Subject: "b"})
			var ce *CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, idsPath, ce.Path)
			assert.Contains(t, err.Error(), "removing it is safe")
			problems, err := Check(ctx, dir)
			require.NoError(t, err)
			assert.True(t, slices.ContainsFunc(problems, func(p Problem) bool { return p.Path == idsPath && p.Kind == ProblemCorrupt }),
				"check reports the id file: %v", problems)
			_, err = s.Claim(ctx, a.ID, "me")
			assert.NoError(t, err, "writes that create nothing go on")
			list, err := s.List(ctx)
			require.NoError(t, err)
			assert.Len(t, list, 1)

			require.NoError(t, os.RemoveAll(idsPath))
			b, err := s.Create(ctx, NewTask{Subject: "b"})
			require.NoError(t, err, "removing the file is the fix")
			assert.GreaterOrEqual(t, b.ID, ID(firstBlock*blockSize+1))
		})
	}
}

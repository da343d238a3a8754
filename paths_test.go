//go:build !windows

package taskgraph_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// holdLockOf starts a process that holds the lock of dir (by its path, as
// any other process would) until the test ends.
func holdLockOf(t *testing.T, dir string) {
	t.Helper()
	cmd := worker(t, "holdlock", dir, "")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
}

// excluded reports whether a write through s waits for the lock that
// holdLockOf holds.
func excluded(t *testing.T, s *tg.FileStore) bool {
	t.Helper()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err := s.Create(short, tg.NewTask{Subject: "waits for the lock"})
	if err == nil {
		return false
	}
	require.ErrorIs(t, err, context.DeadlineExceeded)
	return true
}

func subjects(t *testing.T, s *tg.FileStore) []string {
	t.Helper()
	all, err := s.List(ctx)
	require.NoError(t, err)
	var out []string
	for _, task := range all {
		out = append(out, fmt.Sprintf("%d %s", task.ID, task.Subject))
	}
	return out
}

// TestChdirAfterRelativeOpen: a store opened by a relative path keeps
// reading, writing and locking the directory it opened after the process
// changes its working directory (agents do), even where the same relative
// path names another task directory. (It used to read and lock the other
// directory's files while writing the original.)
func TestChdirAfterRelativeOpen(t *testing.T) {
	base, elsewhere := t.TempDir(), t.TempDir()
	decoy := filepath.Join(elsewhere, ".tasks")
	require.NoError(t, os.Mkdir(decoy, 0o755))
	writeFile(t, decoy, "task_7.json", `{"id": 7, "subject": "decoy", "status": "pending"}`)
	decoyBefore := snapshot(t, decoy)

	t.Chdir(base)
	s := openStore(t, ".tasks")
	_, err := s.Create(ctx, tg.NewTask{Subject: "one"})
	require.NoError(t, err)
	require.NoError(t, os.Chdir(elsewhere)) // t.Chdir restores the first directory

	n, err := s.Create(ctx, tg.NewTask{Subject: "two"})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(2), n.ID, "ids continue in the original directory, not after the decoy's 7")
	assert.Equal(t, []string{"1 one", "2 two"}, subjects(t, s))
	writeFile(t, filepath.Join(base, ".tasks"), "task_3.json", `{"id": 3, "subject": "by hand", "status": "pending"}`)
	assert.Equal(t, []string{"1 one", "2 two", "3 by hand"}, subjects(t, s), "reads are of the original directory")
	assert.Equal(t, decoyBefore, snapshot(t, decoy), "the other directory is untouched")

	holdLockOf(t, decoy)
	assert.False(t, excluded(t, s), "the other directory's lock is not the store's")
	holdLockOf(t, filepath.Join(base, ".tasks"))
	assert.True(t, excluded(t, s), "the store locks the directory it opened")
}

// TestRenamedDirectory: a store follows its directory when it is renamed
// while open — files, lock and watch — so it and a store opened on the new
// path still exclude each other and see each other's writes. (The lock
// used to be taken by path: two writers no longer excluded each other.)
func TestRenamedDirectory(t *testing.T) {
	parent := t.TempDir()
	oldPath, newPath := filepath.Join(parent, "a"), filepath.Join(parent, "b")
	s := openStore(t, oldPath)
	_, err := s.Create(ctx, tg.NewTask{Subject: "before"})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := s.Watch(wctx)
	require.NoError(t, err)

	require.NoError(t, os.Rename(oldPath, newPath))
	require.NoError(t, os.Mkdir(oldPath, 0o755)) // a new directory at the old path is another one
	_, err = s.Create(ctx, tg.NewTask{Subject: "after"})
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(newPath, "task_2.json"))
	entries, err := os.ReadDir(oldPath)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing is written at the old path")

	other := openStore(t, newPath)
	n, err := other.Create(ctx, tg.NewTask{Subject: "by a store on the new path"})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(3), n.ID)
	assert.Equal(t, []string{"1 before", "2 after", "3 by a store on the new path"}, subjects(t, s))

	for _, want := range []string{"created 2", "unblocked 2", "created 3", "unblocked 3"} {
		select {
		case e := <-events:
			require.Equal(t, want, fmt.Sprint(e.Kind, " ", e.Task.ID))
		case <-wctx.Done():
			t.Fatalf("the watch saw nothing after the rename; wanted %s", want)
		}
	}

	holdLockOf(t, newPath)
	assert.True(t, excluded(t, s), "the renamed store and a process on the new path exclude each other")
}

// TestLeftoverTempFilesRemoved: temporary files left by writers that died
// are reported by Check and removed by the next write (which holds the
// exclusive lock, so none can be a live writer's); reads remove nothing,
// and files that merely look alike (an editor's) are kept.
func TestLeftoverTempFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	_, err := s.Create(ctx, tg.NewTask{Subject: "one"})
	require.NoError(t, err)
	leftovers := []string{".task_1.jsonlq3k2x1", ".task_77.json0", "..taskgraph.meta3f9a", "..taskgraph.journalz9", "..taskgraph.log1"}
	alike := []string{".task_1.json.swp", ".task_1.jsonX1", ".task_abc.json12", ".task_01.json12", "..taskgraph.meta", "notes.txt"}
	for _, n := range append(append([]string{}, leftovers...), alike...) {
		writeFile(t, dir, n, `{"id": 1`)
	}
	problems, err := tg.Check(ctx, dir)
	require.NoError(t, err)
	var temps []string
	for _, p := range problems {
		if p.Kind == tg.ProblemTempFile {
			temps = append(temps, filepath.Base(p.Path))
			assert.Contains(t, p.Message, "the next write removes it")
		}
	}
	assert.ElementsMatch(t, leftovers, temps)

	reader := openStore(t, dir)
	_, err = reader.List(ctx)
	require.NoError(t, err)
	for _, n := range leftovers {
		assert.FileExists(t, filepath.Join(dir, n), "a read removes nothing")
	}
	_, err = s.Create(ctx, tg.NewTask{Subject: "two"})
	require.NoError(t, err)
	for _, n := range leftovers {
		assert.NoFileExists(t, filepath.Join(dir, n), "the write removed it")
	}
	for _, n := range alike {
		assert.FileExists(t, filepath.Join(dir, n), "not a temporary file of taskgraph's")
	}
	assert.Equal(t, []string{"1 one", "2 two"}, subjects(t, reader), "the removal does not confuse other stores")
}

// TestOpenWithoutCreate: WithoutCreate never creates the directory; a
// missing one is an error matching ErrNotFound that names it.
func TestOpenWithoutCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing", ".tasks")
	_, err := tg.Open(dir, tg.WithoutCreate())
	require.ErrorIs(t, err, tg.ErrNotFound)
	assert.Contains(t, err.Error(), dir)
	assert.NoDirExists(t, filepath.Dir(dir))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	s, err := tg.Open(dir, tg.WithoutCreate())
	require.NoError(t, err)
	defer s.Close()
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, all)
}

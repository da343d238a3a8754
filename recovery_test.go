//go:build linux

package taskgraph

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/internal/changelog"
)

// What a store does with a directory that others changed: git, a person,
// something that cut the change log short. The real power losses are in
// powerloss/.

func openStore(t *testing.T, dir string) *FileStore {
	t.Helper()
	s, err := Open(dir, WithClock(fixedClock))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestHardLinkedChangeLog: a change log that is a hard link to another
// file is never written: writes refuse until it is removed, and Check
// names it.
func TestHardLinkedChangeLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "precious")
	require.NoError(t, os.WriteFile(outside, []byte("precious\n"), 0o644))
	require.NoError(t, os.Link(outside, filepath.Join(dir, logFileName)))
	s := openStore(t, dir)
	_, err := s.Create(ctx, NewTask{Subject: "x"})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "hard links")
	data, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "precious\n", string(data), "nothing written through the link")
	problems, err := Check(ctx, dir)
	require.NoError(t, err)
	require.Len(t, problems, 1, fmt.Sprint(problems))
	assert.Equal(t, ProblemCorrupt, problems[0].Kind)
	assert.Contains(t, problems[0].Message, "2 hard links")
}

// TestLogCutShortInPlace: a change log truncated in place by something
// other than taskgraph is a new log: nothing read of the old one is
// trusted, so every store rescans the directory, and sees the writes made
// since.
func TestLogCutShortInPlace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openPair(t, dir)
	task, err := a.Create(ctx, NewTask{Subject: "x"})
	require.NoError(t, err)
	for range 5 {
		_, err = a.Update(ctx, task.ID, Patch{Description: ptr("padding padding padding padding padding padding")})
		require.NoError(t, err)
	}
	_, err = b.Get(ctx, task.ID)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(filepath.Join(dir, logFileName), 0))
	_, err = a.Update(ctx, task.ID, Patch{Description: ptr("after the cut")})
	require.NoError(t, err)
	scans := b.Stats().Scans
	got, err := b.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, "after the cut", got.Description)
	assert.Greater(t, b.Stats().Scans, scans, "b rescanned")
}

// TestFilesWrittenOutsideWin: after git or a person changed the task
// files — a file rewritten without the rev (as git's clean filter commits
// it), the very bytes a store once wrote checked out again as a new file,
// a file deleted by hand, a branch's task removed by a checkout — and the
// machine restarted, the store reads what they wrote, and writes nothing
// back. (Before group commit was removed, its replay after a restart
// rewrote four of these: issue 38.)
func TestFilesWrittenOutsideWin(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	mk := func(subject string) Task {
		task, err := s.Create(ctx, NewTask{Subject: subject})
		require.NoError(t, err)
		return task
	}
	pulled, restored, handDeleted, branch := mk("pulled"), mk("restored"), mk("deleted by hand"), mk("branch")
	file := func(task Task) string { return filepath.Join(dir, taskFileName(task.ID)) }
	oldRestored := readPath(t, file(restored))
	for _, task := range []Task{pulled, restored, handDeleted, branch} {
		_, err := s.Update(ctx, task.ID, Patch{Description: ptr("written by the store")})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())

	// A pull: the other clone's completion, committed without the rev.
	gitVersion := pulled
	gitVersion.Status, gitVersion.Owner, gitVersion.Result, gitVersion.Rev = Completed, "other", "done there", 0
	data, err := encodeTask(&gitVersion)
	require.NoError(t, err)
	replaceAsGit(t, file(pulled), data)
	// A checkout of the bytes the store wrote first (a clone without the
	// clean filter commits the rev): a new file, at another time.
	time.Sleep(10 * time.Millisecond) // past the filesystem's clock tick
	replaceAsGit(t, file(restored), oldRestored)
	require.NoError(t, os.Remove(file(handDeleted)))
	require.NoError(t, os.Remove(file(branch)))
	before := map[string][]byte{}
	for _, task := range []Task{pulled, restored} {
		before[file(task)] = readPath(t, file(task))
	}

	after := openStore(t, dir)
	got, err := after.Get(ctx, pulled.ID)
	require.NoError(t, err)
	assert.Equal(t, Completed, got.Status, "the pulled completion is read")
	for path, data := range before {
		assert.Equal(t, string(data), string(readPath(t, path)), "%s: what git wrote stays", filepath.Base(path))
	}
	for _, task := range []Task{handDeleted, branch} {
		_, err := os.Stat(file(task))
		assert.True(t, errors.Is(err, fs.ErrNotExist), "%s stays deleted", task.Subject)
		_, err = after.Get(ctx, task.ID)
		assert.ErrorIs(t, err, ErrNotFound, task.Subject)
	}
	problems, err := Check(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// replaceAsGit replaces the file at path with data as git does: a new
// file (a new inode, the time now) in its place.
func replaceAsGit(t *testing.T, path string, data []byte) {
	t.Helper()
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

func readPath(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

// syncCountFS counts the fsyncs a store makes.
type syncCountFS struct {
	fileSystem
	n *atomic.Int64
}

func (c syncCountFS) Sync(f *os.File) error {
	c.n.Add(1)
	return c.fileSystem.Sync(f)
}

// TestReadsMakeNoFsync: every write is durable before its lock is let
// go, so a read — a cold one that scans the directory, or one that follows
// the change log — fsyncs nothing; only a change log that ends in a write
// that did not finish (its writer killed after the announcement, perhaps
// before the directory's fsync) makes a reader fsync the directory, once,
// before it returns what it read. (Before, every cold command re-fsynced
// the files written since the last snapshot: issue 39.)
func TestReadsMakeNoFsync(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w := openStore(t, dir)
	for i := range 20 {
		_, err := w.Create(ctx, NewTask{Subject: fmt.Sprint("t", i)})
		require.NoError(t, err)
	}
	reader := func() (*FileStore, *atomic.Int64) {
		r := openStore(t, dir)
		n := &atomic.Int64{}
		r.useFS(syncCountFS{r.fs, n})
		return r, n
	}
	r, n := reader()
	_, err := r.List(ctx) // cold: a scan
	require.NoError(t, err)
	assert.Zero(t, n.Load(), "a cold read")
	_, err = w.Update(ctx, 3, Patch{Description: ptr("followed from the log")})
	require.NoError(t, err)
	got, err := r.Get(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, "followed from the log", got.Description)
	assert.Zero(t, n.Load(), "a read that follows the log")

	// A writer killed after its announcement and its rename.
	appendToLog(t, dir, changelog.AppendIntent(nil, 1, []int64{4}))
	r2, n2 := reader()
	_, err = r2.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n2.Load(), "a cold read after an unfinished write fsyncs the directory")
	_, err = r.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n.Load(), "so does a read that follows the log to it")
}

// appendToLog appends lines to dir's change log as a writer would.
func appendToLog(t *testing.T, dir string, rec []byte) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, logFileName), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(rec)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

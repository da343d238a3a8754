//go:build !windows

package taskgraph

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// filesOf returns the content of every task file of dir, by name.
func filesOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), taskFilePrefix) {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			out[e.Name()] = string(data)
		}
	}
	return out
}

// TestTransientReadErrorIsNotCached: a permission, descriptor or I/O error
// while reading a task file is returned as that error, never as ErrCorrupt;
// no write decides while it lasts; and the first read after it clears
// succeeds. (It was cached as corruption until the file changed, and a
// Delete with Detach then skipped the unreadable dependent, leaving it
// blocked by a task that no longer existed.)
func TestTransientReadErrorIsNotCached(t *testing.T) {
	ctx := context.Background()
	template := faultTemplate(t) // 2 blocked by 1, 3 blocked by 2
	for _, errno := range []syscall.Errno{syscall.EACCES, syscall.EMFILE, syscall.EIO} {
		t.Run(errno.Error(), func(t *testing.T) {
			dir := copyTree(t, template)
			before := filesOf(t, dir)
			s := openDir(t, dir)
			rf := &readFault{fileSystem: s.fs}
			s.fs = rf

			// A cold store: the scan meets the error.
			rf.set("task_3.json", errno)
			_, err := s.List(ctx)
			require.ErrorIs(t, err, errno)
			assert.NotErrorIs(t, err, ErrCorrupt)
			err = s.Delete(ctx, 2, Detach())
			require.ErrorIs(t, err, errno, "no write decides while a dependent cannot be read")
			_, err = s.Create(ctx, NewTask{Subject: "x", Blocks: []ID{3}})
			require.ErrorIs(t, err, errno)
			assert.Equal(t, before, filesOf(t, dir), "nothing was written")

			rf.set("", nil)
			all, err := s.List(ctx)
			require.NoError(t, err, "the next read after the error clears succeeds")
			require.Len(t, all, 4)
			assert.Equal(t, []ID{2}, all[2].BlockedBy)

			// A warm store: a file changed behind the lock is re-read by
			// the operation that names it.
			edited := strings.Replace(before["task_3.json"], `"description": ""`, `"description": "edited by hand"`, 1)
			require.NotEqual(t, before["task_3.json"], edited)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "task_3.json"), []byte(edited), 0o644))
			rf.set("task_3.json", errno)
			_, err = s.Get(ctx, 3)
			require.ErrorIs(t, err, errno)
			assert.NotErrorIs(t, err, ErrCorrupt)
			rf.set("", nil)
			got, err := s.Get(ctx, 3)
			require.NoError(t, err)
			assert.Equal(t, "edited by hand", got.Description)

			require.NoError(t, s.Delete(ctx, 2, Detach()))
			for _, st := range []Store{s, openDir(t, dir)} {
				three, err := st.Get(ctx, 3)
				require.NoError(t, err)
				assert.Empty(t, three.BlockedBy, "%T: detached from the deleted task", st)
				b, err := st.Board(ctx)
				require.NoError(t, err)
				assert.Empty(t, b.Missing, "%T: no task is blocked by a deleted one", st)
			}
		})
	}
}

// TestDeleteRefusedWhileAFileIsCorrupt: a corrupt task file may depend on
// any task, so no Delete (with or without Detach) decides from a
// dependents index that lacks its edges.
func TestDeleteRefusedWhileAFileIsCorrupt(t *testing.T) {
	ctx := context.Background()
	dir := copyTree(t, faultTemplate(t))
	good := filesOf(t, dir)["task_3.json"]
	writeFiles(t, dir, map[string]string{"task_3.json": `{"id": 3, "subject": "torn`})
	s := openDir(t, dir)
	for _, del := range []func() error{
		func() error { return s.Delete(ctx, 2, Detach()) },
		func() error { return s.Delete(ctx, 4) },
	} {
		err := del()
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "may depend on it")
		assert.Contains(t, err.Error(), "task_3.json")
	}
	assert.FileExists(t, filepath.Join(dir, "task_2.json"))
	assert.FileExists(t, filepath.Join(dir, "task_4.json"))
	writeFiles(t, dir, map[string]string{"task_3.json": good})
	require.NoError(t, s.Delete(ctx, 2, Detach()))
	got, err := s.Get(ctx, 3)
	require.NoError(t, err)
	assert.Empty(t, got.BlockedBy)
}

// TestDroppedLogRecordIsSeen: a write whose change-log record is lost (the
// writer died after its commit point, or the append vanished) is seen by a
// long-lived store — also after another writer has written since, whose
// record accounts for the directory's new mtime. (Before the announcement
// record, such a store kept showing the old state indefinitely.)
func TestDroppedLogRecordIsSeen(t *testing.T) {
	ctx := context.Background()
	template := faultTemplate(t)
	for _, m := range faultMutations {
		t.Run(m.name, func(t *testing.T) {
			dir := copyTree(t, template)
			readers := []*FileStore{openDir(t, dir), openDir(t, dir)}
			for _, r := range readers {
				_, err := r.List(ctx) // warm: from now on it follows the log
				require.NoError(t, err)
			}
			w := openDir(t, dir)
			df := &dropFS{fileSystem: w.fs, at: 2} // the record after the commit point
			w.fs = df
			require.NoError(t, m.do(w))
			require.Equal(t, 2, df.n, "one announcement, one record")

			assert.Equal(t, listDir(t, dir), must(readers[0].List(ctx)), "read right after the write")
			_, err := openDir(t, dir).Create(ctx, NewTask{Subject: "a later write by another store"})
			require.NoError(t, err)
			want := listDir(t, dir)
			assert.Equal(t, want, must(readers[1].List(ctx)), "read after a later write")
			b := must(readers[1].Board(ctx))
			fresh := must(openDir(t, dir).Board(ctx))
			assert.Equal(t, idsOf(fresh.Ready), idsOf(b.Ready), "no phantom ready task")
		})
	}
}

func idsOf(ts []Task) []ID {
	out := []ID{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// TestWatchEndsWithItsReason: a FileStore watch that cannot read the
// directory any more ends, and its last event says why.
func TestWatchEndsWithItsReason(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	s := openDir(t, dir)
	rf := &readFault{fileSystem: s.fs}
	s.fs = rf
	events, err := s.Watch(ctx)
	require.NoError(t, err)
	rf.set("task_9.json", syscall.EIO)
	// Made behind the lock, so the watch must read the file itself.
	writeFiles(t, dir, map[string]string{"task_9.json": `{"id": 9, "subject": "x", "status": "pending"}`})
	var last Event
	for e := range events {
		last = e
	}
	require.NoError(t, ctx.Err(), "the watch ended by itself")
	assert.Equal(t, Ended, last.Kind)
	assert.ErrorIs(t, last.Err, syscall.EIO)
	assert.NotErrorIs(t, last.Err, ErrClosed)

	// Cancelling the context ends a watch without an Ended event.
	wctx, stop := context.WithCancel(ctx)
	rf.set("", nil)
	events, err = s.Watch(wctx)
	require.NoError(t, err)
	stop()
	for e := range events {
		assert.NotEqual(t, Ended, e.Kind)
	}
}

// TestOpenSyncsNewDirectories: Open makes the directories it creates
// durable by fsyncing the parent of each; it syncs nothing for one that
// exists, and creates nothing with WithoutCreate.
func TestOpenSyncsNewDirectories(t *testing.T) {
	var synced []string
	defer func(old func(string) error) { syncDirAt = old }(syncDirAt)
	syncDirAt = func(p string) error {
		synced = append(synced, p)
		return syncPath(p)
	}
	base := t.TempDir()
	dir := filepath.Join(base, "a", "b", ".tasks")
	_, err := Open(dir, WithoutCreate())
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), dir)
	assert.NoDirExists(t, filepath.Join(base, "a"), "WithoutCreate creates nothing")
	assert.Empty(t, synced)

	s, err := Open(dir)
	require.NoError(t, err)
	s.Close()
	assert.Equal(t, []string{filepath.Join(base, "a", "b"), filepath.Join(base, "a"), base}, synced, "the parent of each new directory")
	synced = nil
	s, err = Open(dir)
	require.NoError(t, err)
	s.Close()
	assert.Empty(t, synced, "an existing directory needs no sync")
	s, err = Open(dir, WithoutCreate())
	require.NoError(t, err, "WithoutCreate opens a directory that exists")
	s.Close()

	file := filepath.Join(base, "file")
	writeFiles(t, base, map[string]string{"file": ""})
	_, err = Open(file)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "not a directory")
	_, err = Open(file, WithoutCreate())
	assert.False(t, errors.Is(err, ErrNotFound))
}

//go:build !windows

package taskgraph

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
			s.useFS(rf)

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

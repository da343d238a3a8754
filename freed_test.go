//go:build linux

package taskgraph

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/cachedir"
)

// heldDeleted lists this process's descriptors of files since deleted or
// replaced whose name ends with suffix.
func heldDeleted(t *testing.T, suffix string) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	var held []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasSuffix(target, suffix+" (deleted)") {
			held = append(held, target)
		}
	}
	return held
}

// renameWatchFS calls after once each rename has been made.
type renameWatchFS struct {
	fileSystem
	after func(newname string)
}

func (f renameWatchFS) Rename(oldname, newname string) error {
	err := f.fileSystem.Rename(oldname, newname)
	if err == nil {
		f.after(newname)
	}
	return err
}

// TestOldVersionFreedAfterLock: a write that replaces a task file under
// the full protocol frees nothing under the lock. The old version is
// either kept as a spare — linked into the cache directory before the
// rename, pooled once the write is durable, filled by a later write
// (recycle.go) — or, where there is no cache directory yet, held open
// across the rename and closed before the write returns.
func TestOldVersionFreedAfterLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	task, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	name := taskFileName(task.ID)
	inode := func(path string) uint64 {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		return atomicfile.FileID(fi)
	}
	for i, write := range []func() error{
		func() error { _, err := s.Update(ctx, task.ID, Patch{Subject: ptr("b")}); return err }, // the first: under the lock
		func() error { _, err := s.Claim(ctx, task.ID, "alice"); return err },
		func() error { _, err := s.Complete(ctx, task.ID, "alice"); return err }, // decided ahead
		func() error { _, err := s.Update(ctx, task.ID, Patch{Subject: ptr("c")}); return err },
	} {
		old := inode(filepath.Join(dir, name))
		var held, spare []string
		s.useFS(renameWatchFS{s.fs, func(newname string) {
			if newname == name {
				held, spare = heldDeleted(t, name), nil
				entries, _ := os.ReadDir(filepath.Join(dir, cachedir.Name))
				for _, e := range entries {
					if inode(filepath.Join(dir, cachedir.Name, e.Name())) == old {
						spare = append(spare, e.Name())
					}
				}
			}
		}})
		recycled := s.Stats().Recycled
		require.NoError(t, write())
		s.useFS(s.fs.(renameWatchFS).fileSystem)
		assert.Len(t, append(held, spare...), 1, "write %d: the old version is held open or linked as a spare across the rename", i)
		assert.Empty(t, heldDeleted(t, name), "and closed when the write returns")
		if i > 0 {
			assert.Len(t, spare, 1, "write %d: once the cache directory exists, the old version is a spare", i)
			s.inflight.Wait() // a top-up may be adding spares (Spares.TopUp)
			free := s.spares.Pooled()
			assert.Contains(t, free, spare[0], "pooled once the write is durable")
		}
		if i > 1 {
			assert.Equal(t, recycled+1, s.Stats().Recycled, "write %d filled the spare of the write before it", i)
		}
	}
	assert.Positive(t, s.Stats().Ahead)
	require.NoError(t, s.Close())
	assert.Empty(t, cacheEntries(t, dir), "Close removes the spares")
}

//go:build linux

package taskgraph

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
)

// TestDirSyncAfterLock: under the full protocol a write fsyncs the
// directory after the lock, once; a reader in another store finds, in the
// sync file, that the directory is durable up to what it read and syncs
// nothing; with that record gone (a writer killed before its fsync), the
// reader fsyncs the directory itself before returning what it read.
func TestDirSyncAfterLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openAhead(t, dir, newFakeClock())
	require.True(t, a.dirSyncAfter(), "the full protocol on Linux syncs the directory after the lock")
	task, err := a.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)

	before := a.Stats()
	_, err = a.Update(ctx, task.ID, Patch{Subject: ptr("a, renamed")})
	require.NoError(t, err)
	after := a.Stats()
	assert.Equal(t, before.Writes+1, after.Writes)
	assert.Equal(t, before.DirSyncs+1, after.DirSyncs, "one fsync of the directory after the lock")

	b := openAhead(t, dir, newFakeClock())
	_, err = b.Get(ctx, task.ID) // the scan syncs what it read (syncSeen)
	require.NoError(t, err)
	_, err = a.Update(ctx, task.ID, Patch{Subject: ptr("a, renamed again")})
	require.NoError(t, err)
	got, err := b.Get(ctx, task.ID) // reads a's record: a's fsync covers it
	require.NoError(t, err)
	assert.Equal(t, "a, renamed again", got.Subject)
	assert.Zero(t, b.Stats().DirSyncs, "the sync file says the directory is durable up to what b read")

	_, err = a.Update(ctx, task.ID, Patch{Subject: ptr("a, unsynced")})
	require.NoError(t, err)
	// As if a had been killed between its record and its fsync.
	require.NoError(t, os.Truncate(filepath.Join(dir, syncFileName), dirSyncRecordAt))
	got, err = b.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, "a, unsynced", got.Subject)
	assert.EqualValues(t, 1, b.Stats().DirSyncs, "nothing says the directory is durable up to what b read: b syncs it")
}

// slowDirSyncFS makes every fsync of the directory take a while, as a busy
// disk does: writers arrive while it is in flight.
type slowDirSyncFS struct {
	fileSystem
	dirf *os.File
}

func (f slowDirSyncFS) Sync(file *os.File) error {
	if file == f.dirf {
		time.Sleep(5 * time.Millisecond)
	}
	return f.fileSystem.Sync(file)
}

// TestDirSyncShared: writers of one store that arrive while the
// directory's fsync is in flight share the next one.
func TestDirSyncShared(t *testing.T) {
	ctx := context.Background()
	s := openAhead(t, t.TempDir(), newFakeClock())
	s.fs = slowDirSyncFS{s.fs, s.dirf}
	const writers, each = 8, 25
	ids := make([]ID, writers)
	for i := range ids {
		task, err := s.Create(ctx, NewTask{Subject: fmt.Sprint("task ", i)})
		require.NoError(t, err)
		ids[i] = task.ID
	}
	before := s.Stats()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for k := range each {
				_, err := s.Update(ctx, id, Patch{Subject: ptr(fmt.Sprint("edit ", k))})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	after := s.Stats()
	writes, syncs := after.Writes-before.Writes, after.DirSyncs-before.DirSyncs
	t.Logf("%d writes, %d fsyncs of the directory after the lock", writes, syncs)
	assert.EqualValues(t, writers*each, writes)
	assert.Positive(t, syncs)
	assert.LessOrEqual(t, syncs, writes/2, "writers queued behind an fsync of the directory share the next")
	for i, id := range ids {
		got, err := s.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("edit ", each-1), got.Subject, "task %d", i)
	}
}

// gateDirSyncFS fails the first fsync of the directory (after blocking
// until released) and every syncfs: a directory whose writeback failed,
// where a second fsync on the same descriptor reports nothing (errseq).
type gateDirSyncFS struct {
	fileSystem
	dirf              *os.File
	entered, released chan struct{}
	first             bool
	mu                sync.Mutex
}

func (g *gateDirSyncFS) Sync(f *os.File) error {
	if f == g.dirf {
		g.mu.Lock()
		first := !g.first
		g.first = true
		g.mu.Unlock()
		if first {
			close(g.entered)
			<-g.released
			return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
		}
	}
	return g.fileSystem.Sync(f)
}

func (g *gateDirSyncFS) SyncFS(d *os.File) error {
	return &os.PathError{Op: "syncfs", Path: d.Name(), Err: syscall.EIO}
}

// TestFollowersOfAFailedDirSync: the leader's fsync of the directory
// after the lock fails and so does its syncfs: the write is reported
// ErrUnknownOutcome. A reader of that write queued behind the leader must
// not take over and fsync again on the same descriptor, which would
// succeed (the kernel reports the error once) and return the write as
// durable: it gets the error too.
func TestFollowersOfAFailedDirSync(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	require.True(t, s.dirSyncAfter())
	task, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	other, err := s.Create(ctx, NewTask{Subject: "other"})
	require.NoError(t, err)
	_, err = s.Update(ctx, task.ID, Patch{Subject: ptr("b")})
	require.NoError(t, err)

	g := &gateDirSyncFS{fileSystem: s.fs, dirf: s.dirf, entered: make(chan struct{}), released: make(chan struct{})}
	s.fs = g
	var werr, rerr, w2err error
	var got Task
	var wg sync.WaitGroup
	wg.Go(func() { _, werr = s.Update(ctx, task.ID, Patch{Subject: ptr("c")}) })
	<-g.entered // the writer leads the directory's fsync, after the lock
	// A reader of its write, and a second writer whose record comes
	// after what the leader's fsync was asked for, queue behind it.
	wg.Go(func() { got, rerr = s.Get(ctx, task.ID) })
	wg.Go(func() { _, w2err = s.Update(ctx, other.ID, Patch{Subject: ptr("other, edited")}) })
	for queued := false; !queued; time.Sleep(time.Millisecond) {
		s.log.sync.mu.Lock()
		queued = s.log.sync.waiting == 2
		s.log.sync.mu.Unlock()
	}
	close(g.released)
	wg.Wait()
	require.ErrorIs(t, werr, ErrUnknownOutcome, "the writer: the directory could not be made durable")
	t.Logf("writer: %v; reader: subject %q, %v; second writer: %v", werr, got.Subject, rerr, w2err)
	assert.Error(t, rerr, "the reader returned the write on a plain fsync retried after a failed one")
	assert.ErrorIs(t, w2err, ErrUnknownOutcome, "the second writer was acknowledged on a plain fsync retried after a failed one")
}

// TestDirSyncRecordsWhatItSaw: the sync file's directory record says how
// far the log reached when the fsync began, never the caller's offset: one
// past the log's end (an offset in an older log whose inode number the
// current log reuses) would cover records not yet written, and a later
// write in another store would be acknowledged without any fsync of the
// directory.
func TestDirSyncRecordsWhatItSaw(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openAhead(t, dir, newFakeClock())
	task, err := a.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	fi, err := a.root.Lstat(logFileName)
	require.NoError(t, err)
	require.NoError(t, a.sharedDirSync(atomicfile.FileID(fi), fi.Size()+1<<20))

	b := openAhead(t, dir, newFakeClock())
	_, err = b.Get(ctx, task.ID)
	require.NoError(t, err)
	before := b.Stats().DirSyncs
	_, err = b.Update(ctx, task.ID, Patch{Subject: ptr("b")})
	require.NoError(t, err)
	assert.Equal(t, before+1, b.Stats().DirSyncs, "b's rename was acknowledged without a fsync of the directory")
}

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
		s.fs = renameWatchFS{s.fs, func(newname string) {
			if newname == name {
				held, spare = heldDeleted(t, name), nil
				entries, _ := os.ReadDir(filepath.Join(dir, cacheDirName))
				for _, e := range entries {
					if inode(filepath.Join(dir, cacheDirName, e.Name())) == old {
						spare = append(spare, e.Name())
					}
				}
			}
		}}
		recycled := s.Stats().Recycled
		require.NoError(t, write())
		s.fs = s.fs.(renameWatchFS).fileSystem
		assert.Len(t, append(held, spare...), 1, "write %d: the old version is held open or linked as a spare across the rename", i)
		assert.Empty(t, heldDeleted(t, name), "and closed when the write returns")
		if i > 0 {
			assert.Len(t, spare, 1, "write %d: once the cache directory exists, the old version is a spare", i)
			s.inflight.Wait() // a top-up may be adding spares (topUpSpares)
			s.spares.mu.Lock()
			free := slices.Clone(s.spares.free)
			s.spares.mu.Unlock()
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

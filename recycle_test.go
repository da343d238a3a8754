//go:build linux

package taskgraph

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/cachedir"
)

// TestRecycledFiles: under the full protocol, writes fill the files of the
// versions earlier writes replaced (recycle.go), and every task file holds
// what the same writes give on a MemStore, as another store reads it.
func TestRecycledFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	m := NewMemStore(WithClock(newFakeClock().Now))
	rng := rand.New(rand.NewPCG(7, 21))
	const tasks = 12
	for _, st := range []Store{s, m} {
		for i := range tasks {
			_, err := st.Create(ctx, NewTask{Subject: fmt.Sprint("task ", i)})
			require.NoError(t, err)
		}
	}
	for i := range 300 {
		id := ID(1 + rng.IntN(tasks))
		var do func(Store) error
		switch rng.IntN(4) {
		case 0:
			subject := fmt.Sprint("edit ", i)
			do = func(st Store) error { _, err := st.Update(ctx, id, Patch{Subject: &subject}); return err }
		case 1:
			do = func(st Store) error { _, err := st.Claim(ctx, id, "alice"); return err }
		case 2:
			do = func(st Store) error { _, err := st.(Noter).Note(ctx, id, "alice", fmt.Sprint("note ", i)); return err }
		case 3:
			do = func(st Store) error { _, err := st.Release(ctx, id, "alice"); return err }
		}
		errS, errM := do(s), do(m)
		require.Equal(t, errM == nil, errS == nil, "write %d: %v / %v", i, errS, errM)
	}
	assert.Greater(t, s.Stats().Recycled, int64(100), "most writes filled a spare")
	want, err := m.List(ctx)
	require.NoError(t, err)
	other, err := Open(dir)
	require.NoError(t, err)
	defer other.Close()
	got, err := other.List(ctx)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].Subject, got[i].Subject)
		assert.Equal(t, want[i].Status, got[i].Status)
		assert.Equal(t, want[i].Rev, got[i].Rev)
		require.Len(t, got[i].Notes, len(want[i].Notes))
		for k := range want[i].Notes {
			assert.Equal(t, want[i].Notes[k].Text, got[i].Notes[k].Text) // the clocks differ
		}
	}
	assert.LessOrEqual(t, len(cacheEntries(t, dir)), cachedir.MaxSpares, "spares beyond the pool are removed")
	require.NoError(t, s.Close())
	assert.Empty(t, cacheEntries(t, dir), "Close removes the spares")
}

// openWithCacheDir opens a store with writes decided ahead on dir and makes
// one task, "first", and one update of it: the update opens the cache
// directory, which spares live in.
func openWithCacheDir(t *testing.T, dir string) *FileStore {
	t.Helper()
	ctx := context.Background()
	s := openAhead(t, dir, newFakeClock())
	first, err := s.Create(ctx, NewTask{Subject: "first"})
	require.NoError(t, err)
	_, err = s.Update(ctx, first.ID, Patch{Subject: ptr("opens the cache directory")})
	require.NoError(t, err)
	return s
}

// TestTopUpStopsWhereSparesFail: where a new spare is refused (here: the
// store takes the files it makes to have other permissions, as where
// leases are disabled every file is refused), the store stops making them
// instead of creating and removing four files for every write.
func TestTopUpStopsWhereSparesFail(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openWithCacheDir(t, dir)
	s.inflight.Wait()
	s.spares.SetPerm(0o600) // not what the store's files get
	for i := range 20 {
		_, err := s.Create(ctx, NewTask{Subject: fmt.Sprint("task ", i)})
		require.NoError(t, err)
		s.inflight.Wait()
	}
	_, barren := s.spares.State()
	free := len(s.spares.Pooled())
	assert.True(t, barren, "a new spare was refused")
	assert.Zero(t, free, "and no more were made")
	assert.Empty(t, cacheEntries(t, dir, s))
	got, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, got, 21, "the writes made their own files")
}

// TestSparesOfEveryLength: a spare longer than the new file is cut to it,
// one no longer is overwritten whole (fill skips the truncate): every
// version reads back exactly, on another store and byte for byte.
func TestSparesOfEveryLength(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	task, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	other, err := Open(dir)
	require.NoError(t, err)
	defer other.Close()
	before := s.Stats().Recycled
	for i, n := range []int{2000, 10, 3000, 0, 1, 2999, 50, 4000, 3} {
		desc := strings.Repeat("d", n)
		_, err := s.Update(ctx, task.ID, Patch{Description: &desc})
		require.NoError(t, err)
		got, err := other.Get(ctx, task.ID)
		require.NoError(t, err, "write %d", i)
		assert.Equal(t, desc, got.Description, "write %d", i)
		raw, err := os.ReadFile(filepath.Join(dir, taskFileName(task.ID)))
		require.NoError(t, err)
		want, err := encodeTask(&got)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(raw), "write %d: the file is the version, nothing after it", i)
	}
	assert.Greater(t, s.Stats().Recycled-before, int64(5), "the writes filled spares")
}

// TestCreatesFillSpares: a run of Creates, which replace no file and so
// give no spare back, still fills spares: the store makes new ones off the
// writes' path as the pool runs low (Spares.TopUp), every Create's file is
// the task, and Close leaves none behind.
func TestCreatesFillSpares(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openWithCacheDir(t, dir)
	const creates = 60
	before := s.Stats().Recycled
	for i := range creates {
		_, err := s.Create(ctx, NewTask{Subject: fmt.Sprint("task ", i)})
		require.NoError(t, err)
		if i%10 == 9 {
			// The top-up runs beside the writes; on a slow machine it
			// may fall behind a tight loop, so give it a moment now and
			// then.
			time.Sleep(10 * time.Millisecond)
		}
	}
	filled := s.Stats().Recycled - before
	assert.Greater(t, filled, int64(cachedir.MaxSpares), "Creates filled more spares than one pool holds: the pool was topped up")
	other, err := Open(dir)
	require.NoError(t, err)
	defer other.Close()
	got, err := other.List(ctx)
	require.NoError(t, err)
	require.Len(t, got, creates+1)
	for i, task := range got[1:] {
		assert.Equal(t, fmt.Sprint("task ", i), task.Subject)
	}
	assert.Empty(t, cacheEntries(t, dir, s), "nothing but the pool in the cache directory")
	require.NoError(t, s.Close())
	assert.Empty(t, cacheEntries(t, dir), "Close removes the spares, the new ones too")
}

// TestSpareKeptFromReaders: a version that someone still has open, or that
// has another name, is never filled: a reader that opened a task file
// before it was replaced reads the old version to its end, and a hard link
// made to a task file (a backup's) keeps its content. Nor is one whose
// permissions someone changed: no task file takes them.
func TestSpareKeptFromReaders(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	for _, subject := range []string{"read", "linked", "busy", "private"} {
		_, err := s.Create(ctx, NewTask{Subject: subject})
		require.NoError(t, err)
	}
	// A first write of each, so that the cache directory exists and
	// the versions read below are of the steady state.
	for id := ID(1); id <= 4; id++ {
		_, err := s.Update(ctx, id, Patch{Description: ptr("first")})
		require.NoError(t, err)
	}
	path := func(id ID) string { return filepath.Join(dir, taskFileName(id)) }
	reader, err := os.Open(path(1))
	require.NoError(t, err)
	defer reader.Close()
	readerWant, err := os.ReadFile(path(1))
	require.NoError(t, err)
	backup := filepath.Join(t.TempDir(), "backup.json")
	require.NoError(t, os.Link(path(2), backup))
	backupWant, err := os.ReadFile(backup)
	require.NoError(t, err)

	require.NoError(t, os.Chmod(path(4), 0o600))

	for _, id := range []ID{1, 2, 4} {
		_, err := s.Update(ctx, id, Patch{Subject: ptr("replaced")})
		require.NoError(t, err)
	}
	perm, _ := s.spares.State()
	require.NotZero(t, perm)
	recycled := s.Stats().Recycled
	for i := range 2 * cachedir.MaxSpares {
		_, err := s.Update(ctx, 3, Patch{Description: ptr(fmt.Sprint("write ", i, " of a file as long as the others or longer"))})
		require.NoError(t, err)
		fi, err := os.Stat(path(3))
		require.NoError(t, err)
		assert.Equal(t, perm, fi.Mode().Perm(), "write %d: a task file has the permissions of a new file", i)
	}
	assert.Greater(t, s.Stats().Recycled, recycled, "the other spares were filled")

	got, err := io.ReadAll(reader)
	require.NoError(t, err)
	assert.Equal(t, string(readerWant), string(got), "the reader reads the version it opened")
	got, err = os.ReadFile(backup)
	require.NoError(t, err)
	assert.Equal(t, string(backupWant), string(got), "the hard link keeps its content")
	for id := ID(1); id <= 4; id++ {
		fi, err := os.Stat(path(id))
		require.NoError(t, err)
		assert.Equal(t, perm, fi.Mode().Perm(), "task %d has the permissions of a new file", id)
		task, err := s.Get(ctx, id)
		require.NoError(t, err)
		data, err := os.ReadFile(path(id))
		require.NoError(t, err)
		onDisk, err := decodeTask(id, data)
		require.NoError(t, err)
		assert.Equal(t, task.Subject, onDisk.Subject)
		assert.Equal(t, task.Rev, onDisk.Rev)
	}
}

// TestSparesOfAFailedWrite: a write whose outcome is unknown (its
// directory fsync failed twice) pools no spare — the version it replaced
// may be what the disk holds — and removes the spare's name.
func TestSparesOfAFailedWrite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	task, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	_, err = s.Update(ctx, task.ID, Patch{Subject: ptr("b")})
	require.NoError(t, err)
	_, err = s.Update(ctx, task.ID, Patch{Subject: ptr("c")})
	require.NoError(t, err)
	s.inflight.Wait()
	s.spares.HoldTopUp() // as if topping up: no new spares join the pool below
	pooled := len(s.spares.Pooled())
	require.Positive(t, pooled)

	ffs := &faultFS{kind: "fsync", at: 2, sticky: true, err: syscall.EIO}
	injectFaults(s, ffs) // the spare's fsync passes, the directory's fails
	_, err = s.Update(ctx, task.ID, Patch{Subject: ptr("d")})
	ffs.off()
	require.ErrorIs(t, err, ErrUnknownOutcome)
	after := len(s.spares.Pooled())
	assert.Equal(t, pooled-1, after, "the filled spare left the pool, and the replaced version was not pooled")
	assert.Empty(t, cacheEntries(t, dir, s), "nor left in the cache directory")
}

// TestUnusedAheadFileRecycled: the file of a write decided ahead that the
// lock holder decides otherwise (another store edited the task in between)
// is not freed but pooled, and the write under the lock fills it.
func TestUnusedAheadFileRecycled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	other := openAhead(t, dir, newFakeClock())
	task, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, task.ID, "alice")
	require.NoError(t, err)
	_, err = s.Note(ctx, task.ID, "alice", "the cache directory exists")
	require.NoError(t, err)
	_, err = other.Get(ctx, task.ID)
	require.NoError(t, err)

	var aheadFile uint64
	withAfterAhead(t, s, func() {
		s.cfg.afterAhead = nil
		for _, n := range cacheEntries(t, dir, s) { // the file written ahead
			fi, err := os.Stat(filepath.Join(dir, cachedir.Name, n))
			require.NoError(t, err)
			aheadFile = atomicfile.FileID(fi)
		}
		_, err := other.Update(ctx, task.ID, Patch{Subject: ptr("edited in between")})
		require.NoError(t, err)
	})
	ahead := s.Stats().Ahead
	got, err := s.Note(ctx, task.ID, "alice", "decided ahead, then again under the lock")
	require.NoError(t, err)
	assert.Equal(t, "edited in between", got.Subject)
	assert.Equal(t, ahead, s.Stats().Ahead, "written under the lock")
	require.NotZero(t, aheadFile, "the write was decided ahead")
	fi, err := os.Stat(filepath.Join(dir, taskFileName(task.ID)))
	require.NoError(t, err)
	assert.Equal(t, aheadFile, atomicfile.FileID(fi), "the write under the lock filled the file written ahead")
	assert.Empty(t, cacheEntries(t, dir, s, other))
}

// TestHostileSpare: whatever takes a pooled spare's name — a FIFO, a
// directory, a symlink to a file elsewhere, a file with another link — the
// next write neither hangs nor writes through it, and stores its task.
func TestHostileSpare(t *testing.T) {
	ctx := context.Background()
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(outside, []byte("not yours"), 0o644))
	for _, c := range []struct {
		name  string
		plant func(path string) error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"symlink outside", func(p string) error { return os.Symlink(outside, p) }},
		{"hard link outside", func(p string) error { return os.Link(outside, p) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openAhead(t, dir, newFakeClock())
			task, err := s.Create(ctx, NewTask{Subject: "a"})
			require.NoError(t, err)
			for _, subject := range []string{"b", "c"} {
				_, err = s.Update(ctx, task.ID, Patch{Subject: &subject})
				require.NoError(t, err)
			}
			s.inflight.Wait() // the top-up, if any, is over
			pooled := s.spares.Pooled()
			require.NotEmpty(t, pooled)
			for _, n := range pooled { // every spare the write could fill
				spare := filepath.Join(dir, cachedir.Name, n)
				require.NoError(t, os.Remove(spare))
				require.NoError(t, c.plant(spare))
			}

			done := make(chan error, 1)
			go func() {
				_, err := s.Update(ctx, task.ID, Patch{Subject: ptr("d")})
				done <- err
			}()
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("the write hangs")
			}
			got, err := os.ReadFile(outside)
			require.NoError(t, err)
			assert.Equal(t, "not yours", string(got))
			other, err := Open(dir)
			require.NoError(t, err)
			defer other.Close()
			read, err := other.Get(ctx, task.ID)
			require.NoError(t, err)
			assert.Equal(t, "d", read.Subject)
		})
	}
}

// TestSweepKeepsAnyTaskFile: a leftover in the cache directory with a
// single link whose inode the cache has as any task's file is left alone,
// whatever task its name is for. A spare is named for the task it was
// replaced in and renamed to another's file; after a power loss without a
// journal both names may survive with one link counted, and removing the
// cache's would free that task's file.
func TestSweepKeepsAnyTaskFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	for _, subject := range []string{"a", "b"} {
		_, err := s.Create(ctx, NewTask{Subject: subject})
		require.NoError(t, err)
	}
	for range 2 {
		_, err := s.Update(ctx, 1, Patch{Description: ptr("the cache directory exists")})
		require.NoError(t, err)
	}
	require.NotNil(t, s.cacheDir.Root())
	old := time.Now().Add(-2 * cachedir.SweepAge)
	plant := func(name string) (string, uint64) {
		p := filepath.Join(dir, cachedir.Name, name)
		require.NoError(t, os.WriteFile(p, []byte("{}"), 0o644))
		require.NoError(t, os.Chtimes(p, old, old))
		fi, err := os.Stat(p)
		require.NoError(t, err)
		return p, atomicfile.FileID(fi)
	}
	spare, ino := plant(".task_1.json0spare")
	stray, _ := plant(".task_1.json0stray")

	s.sem <- struct{}{}
	kept := s.stamps[2]
	st := kept
	st.Ino = ino // as if task 2's file were that inode, one link counted
	s.stamps[2] = st
	s.cacheDir.Sweep(s.root, func() map[uint64]bool { return inodesOf(s.stamps) })
	s.stamps[2] = kept
	<-s.sem
	assert.FileExists(t, spare, "another task's file")
	assert.NoFileExists(t, stray)
}

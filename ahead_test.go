//go:build unix

package taskgraph

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/internal/cachedir"
)

// openAhead opens a store, whose writes are decided ahead of the lock, on
// a clock the test moves.
func openAhead(t *testing.T, dir string, clock *fakeClock) *FileStore {
	t.Helper()
	s, err := Open(dir, WithClock(clock.Now))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond) // every read a new time, as a real clock
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// withAfterAhead runs f between every write of s decided ahead and its
// lock until the test ends.
func withAfterAhead(t *testing.T, s *FileStore, f func()) {
	s.cfg.afterAhead = f
	t.Cleanup(func() { s.cfg.afterAhead = nil })
}

// cacheEntries lists the cache directory but for the snapshot and the
// spares that the stores keep (recycle.go).
func cacheEntries(t *testing.T, dir string, stores ...*FileStore) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, cachedir.Name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	kept := map[string]bool{snapshotName: true}
	for _, s := range stores {
		s.inflight.Wait() // a top-up may be making spares (Spares.TopUp)
		for _, n := range s.spares.Pooled() {
			kept[n] = true
		}
	}
	var names []string
	for _, e := range entries {
		if !kept[e.Name()] {
			names = append(names, e.Name())
		}
	}
	return names
}

// TestWritesDecidedAhead: under the full protocol, every single-task write
// after the first is decided ahead and its file renamed into place; what
// is stored is what the same writes give on a MemStore, and nothing is
// left in the cache directory.
func TestWritesDecidedAhead(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	m := NewMemStore(WithClock(newFakeClock().Now))
	for _, st := range []Store{s, m} {
		a, err := st.Create(ctx, NewTask{Subject: "a"})
		require.NoError(t, err)
		_, err = st.Create(ctx, NewTask{Subject: "b", BlockedBy: []ID{a.ID}})
		require.NoError(t, err)
		_, err = st.Claim(ctx, a.ID, "alice")
		require.NoError(t, err)
		_, err = st.(Noter).Note(ctx, a.ID, "alice", "half way")
		require.NoError(t, err)
		_, err = st.Complete(ctx, a.ID, "alice", WithResult("ok"))
		require.NoError(t, err)
		_, err = st.ClaimNext(ctx, "bob")
		require.NoError(t, err)
	}
	assert.EqualValues(t, 6, s.Stats().Writes)
	assert.EqualValues(t, 4, s.Stats().Ahead, "claim, note, complete and claim next were decided ahead; the creates allocate ids")
	want, err := m.List(ctx)
	require.NoError(t, err)
	got, err := s.List(ctx)
	require.NoError(t, err)
	require.Equal(t, len(want), len(got))
	for i := range want {
		w, g := want[i], got[i]
		assert.Equal(t, w.Status, g.Status)
		assert.Equal(t, w.Owner, g.Owner)
		assert.Equal(t, w.Rev, g.Rev)
		assert.Equal(t, len(w.History), len(g.History))
		assert.Equal(t, w.Result, g.Result)
	}
	assert.Empty(t, cacheEntries(t, dir, s))
	// Another store reads what the files hold.
	o := openAhead(t, dir, newFakeClock())
	again, err := o.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, got, again)
}

// TestAheadDecidedAgain: what another store changes between a write decided
// ahead and its lock is never overwritten: the write is decided again on
// what is there now.
func TestAheadDecidedAgain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	other := openAhead(t, dir, newFakeClock())
	a, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	_, err = s.Note(ctx, a.ID, "alice", "the first write creates the cache directory")
	require.NoError(t, err)
	_, err = other.Get(ctx, a.ID)
	require.NoError(t, err)
	// ran makes each case prove that its write was decided ahead.
	var ran bool
	hook := func(st *FileStore, f func()) {
		ran = false
		withAfterAhead(t, st, func() {
			st.cfg.afterAhead, ran = nil, true
			f()
		})
	}

	t.Run("edited", func(t *testing.T) {
		hook(s, func() {
			_, err := other.Update(ctx, a.ID, Patch{Subject: ptr("a, renamed")})
			require.NoError(t, err)
		})
		got, err := s.Claim(ctx, a.ID, "alice")
		require.NoError(t, err)
		require.True(t, ran)
		assert.Equal(t, "a, renamed", got.Subject, "the edit is kept")
		assert.Equal(t, "alice", got.Owner)
		read, err := other.Get(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, got, read)
	})
	t.Run("claimed by another", func(t *testing.T) {
		b, err := s.Create(ctx, NewTask{Subject: "b"})
		require.NoError(t, err)
		hook(s, func() {
			_, err := other.Claim(ctx, b.ID, "bob")
			require.NoError(t, err)
		})
		_, err = s.Claim(ctx, b.ID, "alice")
		require.ErrorIs(t, err, ErrClaimed)
		require.True(t, ran)
		read, err := s.Get(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, "bob", read.Owner, "one claim granted, once")
	})
	t.Run("file taken", func(t *testing.T) {
		c, err := s.Create(ctx, NewTask{Subject: "c"})
		require.NoError(t, err)
		before := s.Stats().Ahead
		hook(s, func() {
			for _, n := range cacheEntries(t, dir) {
				require.NoError(t, os.Remove(filepath.Join(dir, cachedir.Name, n)))
			}
		})
		got, err := s.Claim(ctx, c.ID, "alice")
		require.NoError(t, err)
		require.True(t, ran)
		assert.Equal(t, "alice", got.Owner)
		assert.Equal(t, before, s.Stats().Ahead, "written under the lock instead")
		read, err := other.Get(ctx, c.ID)
		require.NoError(t, err)
		assert.Equal(t, got, read)
	})
	t.Run("waited too long", func(t *testing.T) {
		d, err := s.Create(ctx, NewTask{Subject: "d"})
		require.NoError(t, err)
		clock := newFakeClock()
		late := openAhead(t, dir, clock)
		_, err = late.Note(ctx, d.ID, "alice", "a store's first write opens its change log")
		require.NoError(t, err)
		var waited time.Time
		hook(late, func() {
			clock.Advance(2 * aheadMaxAge)
			waited = clock.Now()
		})
		got, err := late.Claim(ctx, d.ID, "alice")
		require.NoError(t, err)
		require.True(t, ran)
		assert.True(t, got.ClaimedAt.After(waited), "a write that waited longer than aheadMaxAge takes the time it is made at: %v, waited until %v", got.ClaimedAt, waited)
		require.NoError(t, late.Close())
	})
	assert.Empty(t, cacheEntries(t, dir, s, other))
}

// TestAheadHostileCacheDirectory: whatever is in the cache directory's
// place, writes go on (under the lock), nothing is written outside the task
// directory, and nothing is lost.
func TestAheadHostileCacheDirectory(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	for name, plant := range map[string]func(path string) error{
		"file":             func(p string) error { return os.WriteFile(p, []byte("x"), 0o644) },
		"fifo":             func(p string) error { return syscall.Mkfifo(p, 0o644) },
		"symlink outside":  func(p string) error { return os.Symlink(outside, p) },
		"symlink to .":     func(p string) error { return os.Symlink(".", p) },
		"dangling symlink": func(p string) error { return os.Symlink(filepath.Join(outside, "none"), p) },
		"unwritable":       func(p string) error { return os.Mkdir(p, 0o500) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openAhead(t, dir, newFakeClock())
			a, err := s.Create(ctx, NewTask{Subject: "a"})
			require.NoError(t, err)
			require.NoError(t, os.RemoveAll(filepath.Join(dir, cachedir.Name)))
			require.NoError(t, plant(filepath.Join(dir, cachedir.Name)))
			o := openAhead(t, dir, newFakeClock())
			for _, st := range []*FileStore{s, o} {
				_, err = st.Claim(ctx, a.ID, "alice")
				require.NoError(t, err)
				_, err = st.Release(ctx, a.ID, "alice")
				require.NoError(t, err)
			}
			if name != "unwritable" { // which root can write in
				assert.Zero(t, s.Stats().Ahead+o.Stats().Ahead, "no write decided ahead: there is no cache directory to write in")
			}
			got, err := openAhead(t, dir, newFakeClock()).Get(ctx, a.ID)
			require.NoError(t, err)
			assert.EqualValues(t, 5, got.Rev)
			assert.Equal(t, Pending, got.Status)
			left, err := os.ReadDir(outside)
			require.NoError(t, err)
			assert.Empty(t, left, "nothing written outside the task directory")
			problems, err := Check(ctx, dir)
			require.NoError(t, err)
			assert.Empty(t, problems)
		})
	}
}

// TestAheadSweep: files that writers which died between deciding ahead and
// renaming left are removed once they are a minute old; younger ones (a
// live writer's) and the name of a task's own file are not.
func TestAheadSweep(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAhead(t, dir, newFakeClock())
	a, err := s.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "alice") // creates the cache directory
	require.NoError(t, err)
	cache := filepath.Join(dir, cachedir.Name)
	old := time.Now().Add(-2 * cachedir.SweepAge)
	plant := func(name string) string {
		p := filepath.Join(cache, name)
		require.NoError(t, os.WriteFile(p, []byte("{}"), 0o644))
		return p
	}
	dead := plant(".task_1.json0dead")
	require.NoError(t, os.Chtimes(dead, old, old))
	young := plant(".task_1.json0young")
	other := plant("task_1.json.notours")
	require.NoError(t, os.Chtimes(other, old, old))
	linked := filepath.Join(cache, ".task_1.json0link")
	require.NoError(t, os.Link(filepath.Join(dir, taskFileName(a.ID)), linked))
	require.NoError(t, os.Chtimes(linked, old, old))

	o := openAhead(t, dir, newFakeClock())
	_, err = o.Get(ctx, a.ID)
	require.NoError(t, err)
	_, err = o.Release(ctx, a.ID, "alice") // the store's first write decided ahead sweeps
	require.NoError(t, err)
	assert.EqualValues(t, 1, o.Stats().Ahead)
	assert.NoFileExists(t, dead)
	assert.NoFileExists(t, linked, "a second name of a task's file, counted, is removed")
	assert.FileExists(t, young)
	assert.FileExists(t, other)
	got, err := openAhead(t, dir, newFakeClock()).Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, Pending, got.Status)
}

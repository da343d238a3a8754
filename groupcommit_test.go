//go:build linux

package taskgraph

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// powerFS records, for every task file, each version renamed into place
// or removed since the last syncfs: after a power loss the file may be any
// of them — or, for a version whose content was never fsynced, empty. It
// is a worst case: a real disk keeps more. As on a real disk, a version
// comes back in its own inode (a hard link in stash keeps each), and a
// directory's fsync makes its latest entries durable.
type powerFS struct {
	fileSystem
	dir   string
	stash string // hard links to every version's inode
	links int
	mu    sync.Mutex
	// versions of each task file since the last syncfs; the first is the
	// durable one (nil: no file).
	versions map[string][]*version
	synced   map[string]bool // temporary files fsynced before their rename
}

type version struct {
	data   []byte
	synced bool   // fsynced before its rename
	link   string // a hard link to the inode that holds it
}

// keep links the file at path into the stash and returns the link.
// Called with mu held.
func (p *powerFS) keep(path string) string {
	p.links++
	link := filepath.Join(p.stash, fmt.Sprint(p.links))
	if err := os.Link(path, link); err != nil {
		panic(err)
	}
	return link
}

// before notes the durable version of name, before a first change to it
// since the last syncfs.
func (p *powerFS) before(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.versions[name]; !ok {
		var durable *version
		if data, err := os.ReadFile(filepath.Join(p.dir, name)); err == nil {
			durable = &version{data: data, synced: true, link: p.keep(filepath.Join(p.dir, name))}
		}
		p.versions[name] = []*version{durable}
	}
}

func (p *powerFS) record(name string, v *version) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.versions[name] = append(p.versions[name], v)
}

func (p *powerFS) Sync(f *os.File) error {
	if err := p.fileSystem.Sync(f); err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		// The directory's entries are durable now: every file keeps
		// only its latest version (whose content, if it was not fsynced
		// before its rename, may still be lost), or stays removed.
		p.mu.Lock()
		for name, vs := range p.versions {
			p.versions[name] = []*version{vs[len(vs)-1]}
		}
		p.mu.Unlock()
		return nil
	}
	// A temporary file fsynced before its rename: note it by name.
	p.mu.Lock()
	p.synced[filepath.Base(f.Name())] = true
	p.mu.Unlock()
	return nil
}

func (p *powerFS) Rename(oldname, newname string) error {
	_, isTask := parseTaskFileName(newname)
	isTask = isTask || newname == metaFileName
	var v *version
	if isTask {
		data, err := os.ReadFile(filepath.Join(p.dir, oldname))
		if err != nil {
			return err
		}
		p.mu.Lock()
		v = &version{data: data, synced: p.synced[oldname], link: p.keep(filepath.Join(p.dir, oldname))}
		p.mu.Unlock()
		p.before(newname)
	}
	if err := p.fileSystem.Rename(oldname, newname); err != nil {
		return err
	}
	if isTask {
		p.record(newname, v)
	}
	return nil
}

func (p *powerFS) Remove(name string) error {
	_, isTask := parseTaskFileName(name)
	if isTask {
		p.before(name)
		p.record(name, nil)
	}
	return p.fileSystem.Remove(name)
}

func (p *powerFS) SyncFS(d *os.File) error {
	if err := p.fileSystem.SyncFS(d); err != nil {
		return err
	}
	p.mu.Lock()
	p.versions = map[string][]*version{}
	p.mu.Unlock()
	return nil
}

// lose puts every task file back to a version a power loss could leave,
// and counts the files it left other than their latest version whole.
func (p *powerFS) lose(t *testing.T, rng *rand.Rand) (reverted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(p.versions)) {
		vs := p.versions[name]
		v := vs[rng.IntN(len(vs))]
		path := filepath.Join(p.dir, name)
		switch {
		case v == nil:
			if err := os.Remove(path); !os.IsNotExist(err) {
				require.NoError(t, err, name)
			}
		case !v.synced && rng.IntN(2) == 0:
			require.NoError(t, os.WriteFile(v.link, nil, 0o644), name) // renamed, content lost
			require.NoError(t, os.Rename(v.link, path), name)
			reverted++
			continue
		default: // the version whole: its inode, its bytes, its mtime
			data, err := os.ReadFile(v.link)
			require.NoError(t, err)
			require.Equal(t, v.data, data, "%s: gc writes no file in place", name)
			require.NoError(t, os.Rename(v.link, path), name)
		}
		if v != vs[len(vs)-1] {
			reverted++
		}
	}
	return reverted
}

// TestPowerLossKeepsAcknowledgedWrites: after any power loss the page
// cache could have suffered — every task file written since the last
// syncfs back at any version since then, a new file's content lost, a
// torn record at the end of the log — the first store of the next boot
// replays the log, and every acknowledged write is there, nothing else.
func TestPowerLossKeepsAcknowledgedWrites(t *testing.T) {
	restore, realBoot := checkpointInterval, bootID
	checkpointInterval = 4 << 10 // a checkpoint every few writes, so losses cross them
	t.Cleanup(func() { checkpointInterval, bootID = restore, realBoot })
	ctx := context.Background()
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	var reverted, replays int
	for round := range rounds {
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		dir := t.TempDir()
		boot := fmt.Sprintf("boot-%d-a", round)
		bootID = func() string { return boot }
		s, err := Open(dir, WithClock(fixedClock), WithGroupCommit())
		require.NoError(t, err)
		require.True(t, s.gc, "group commit is on")
		pfs := &powerFS{fileSystem: s.fs, dir: dir, stash: t.TempDir(), versions: map[string][]*version{}, synced: map[string]bool{}}
		s.fs = pfs
		for range 30 + rng.IntN(60) {
			randomWrite(ctx, s, rng)
		}
		last, err := s.Create(ctx, NewTask{Subject: "last"})
		require.NoError(t, err)
		require.NoError(t, s.Delete(ctx, last.ID)) // the highest id is deleted: only the meta file keeps it
		want, err := s.List(ctx)
		require.NoError(t, err)
		// Half the rounds end with a write of several files whose
		// record the loss takes: its files are durable (journal,
		// fsyncs), the log ends at its announcement. Either outcome is
		// right; a mix is not.
		var wantAfter []Task
		inFlight := rng.IntN(2) == 0
		if inFlight {
			// A task with a dependent, written since the last
			// checkpoint, then deleted with Detach: two files.
			x, err := s.Create(ctx, NewTask{Subject: "x"})
			require.NoError(t, err)
			_, err = s.Create(ctx, NewTask{Subject: "y", BlockedBy: []ID{x.ID}})
			require.NoError(t, err)
			_, err = s.Update(ctx, x.ID, Patch{Description: ptr("changed")})
			require.NoError(t, err)
			want, err = s.List(ctx)
			require.NoError(t, err)
			require.NoError(t, s.Delete(ctx, x.ID, Detach()))
			wantAfter, err = s.List(ctx)
			require.NoError(t, err)
		}
		require.NoError(t, s.Close())

		reverted += pfs.lose(t, rng)
		if inFlight {
			log := filepath.Join(dir, logFileName)
			data, err := os.ReadFile(log)
			require.NoError(t, err)
			i := bytes.LastIndex(data, []byte("\nI "))
			require.Positive(t, i)
			end := i + 1 + bytes.IndexByte(data[i+1:], '\n') + 1
			require.NoError(t, os.Truncate(log, int64(end)))
		}
		if rng.IntN(2) == 0 {
			// A record appended but never synced, torn by the loss.
			f, err := os.OpenFile(filepath.Join(dir, logFileName), os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.WriteString("I 1 999\nP 999 1 2 3 {\"id\":999,\"subj")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
		boot = fmt.Sprintf("boot-%d-b", round) // the machine restarted
		after, err := Open(dir, WithClock(fixedClock), WithGroupCommit())
		require.NoError(t, err)
		got, err := after.List(ctx)
		require.NoError(t, err, "round %d", round)
		if inFlight && !assert.ObjectsAreEqual(want, got) {
			assert.Equal(t, wantAfter, got, "round %d: the write in flight is all there or not at all", round)
		} else {
			assert.Equal(t, want, got, "round %d: every acknowledged write, nothing else", round)
		}
		problems, err := Check(ctx, dir)
		require.NoError(t, err)
		assert.Empty(t, problems, "round %d", round)
		// The replay checkpointed under the new boot: a store opened now
		// replays nothing.
		due, err := after.restartDueNow()
		require.NoError(t, err)
		assert.False(t, due, "round %d", round)
		next, err := after.Create(ctx, NewTask{Subject: "next boot"})
		require.NoError(t, err)
		assert.Greater(t, next.ID, last.ID, "round %d: a deleted id is never allocated again", round)
		require.NoError(t, after.Close())
		replays++
	}
	t.Logf("%d power losses, %d task files put back to an older version or emptied", replays, reverted)
	assert.Greater(t, reverted, rounds/2, "the losses did revert or empty files")
}

// randomWrite makes one write of a kind chosen by rng; refusals are fine.
func randomWrite(ctx context.Context, s *FileStore, rng *rand.Rand) {
	ts, _ := s.List(ctx)
	pick := func() ID {
		if len(ts) == 0 {
			return 1
		}
		return ts[rng.IntN(len(ts))].ID
	}
	switch rng.IntN(9) {
	case 0, 1:
		s.Create(ctx, NewTask{Subject: fmt.Sprintf("t%d", rng.IntN(1000))})
	case 2:
		s.Create(ctx, NewTask{Subject: "after", BlockedBy: []ID{pick()}})
	case 3:
		s.ClaimNext(ctx, "w")
	case 4:
		s.Complete(ctx, pick(), "w")
	case 5:
		s.Update(ctx, pick(), Patch{Description: ptr(fmt.Sprint(rng.Int()))})
	case 6:
		s.Delete(ctx, pick())
	case 7:
		s.Create(ctx, NewTask{Subject: "blocks", Blocks: []ID{pick()}}) // several files
	case 8:
		s.Fail(ctx, pick(), "w", "broken")
	}
}

// restartDueNow is whether restartDue asks for a replay, under the lock.
func (s *FileStore) restartDueNow() (bool, error) {
	if err := s.acquire(context.Background(), false); err != nil {
		return false, err
	}
	defer s.endOp()
	due, err := s.restartDue()
	return due == logReplay, err
}

// TestReplacedLogReachesEveryone: a store that learns by a scan that the
// change log was replaced appends its records to the new log, so the
// others follow its writes from the log instead of rescanning the
// directory at each of them (they did: its records went to the replaced
// file, and 2 processes at 10,000 tasks made 188 writes/s).
func TestReplacedLogReachesEveryone(t *testing.T) {
	smallLogs(t)
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openPair(t, dir)
	first, err := a.Create(ctx, NewTask{Subject: "first"})
	require.NoError(t, err)
	_, err = b.Get(ctx, first.ID)
	require.NoError(t, err)
	_, err = b.Create(ctx, NewTask{Subject: "b has the log open"})
	require.NoError(t, err)
	fillUntilReplaced(t, a, dir)
	_, err = b.List(ctx) // b sees the new log, and rescans once
	require.NoError(t, err)
	scans := a.Stats().Scans
	for i := range 20 {
		t2, err := b.Create(ctx, NewTask{Subject: fmt.Sprint("by b ", i)})
		require.NoError(t, err)
		got, err := a.Get(ctx, t2.ID)
		require.NoError(t, err)
		require.Equal(t, t2.Subject, got.Subject)
	}
	assert.Equal(t, scans, a.Stats().Scans, "a followed b's writes from the log")
}

// openPair opens two stores on dir, with group commit.
func openPair(t *testing.T, dir string) (*FileStore, *FileStore) {
	a, err := Open(dir, WithGroupCommit())
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err := Open(dir, WithGroupCommit())
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	require.True(t, a.gc && b.gc, "group commit is on")
	return a, b
}

// gateFS holds every sync of the change log until the test lets it go.
type gateFS struct {
	fileSystem
	entered chan struct{}
	gate    chan struct{}
}

func (g *gateFS) SyncData(f *os.File) error {
	g.entered <- struct{}{}
	<-g.gate
	return g.fileSystem.SyncData(f)
}

// TestNoStoreReturnsAWriteBeforeItIsDurable: while a sync of the change
// log is in flight (the writer's, or the other store's watch, which may
// get there first), the write is in the directory and in the log, yet
// neither the writer nor another store returns it, nor is a watcher told
// of it; all three happen once the sync is done.
func TestNoStoreReturnsAWriteBeforeItIsDurable(t *testing.T) {
	ctx := context.Background()
	a, b := openPair(t, t.TempDir())
	_, err := a.Create(ctx, NewTask{Subject: "before"})
	require.NoError(t, err)
	_, err = b.List(ctx)
	require.NoError(t, err)
	events, err := b.Watch(ctx)
	require.NoError(t, err)
	entered, gate := make(chan struct{}, 2), make(chan struct{})
	a.fs = &gateFS{fileSystem: a.fs, entered: entered, gate: gate}
	b.fs = &gateFS{fileSystem: b.fs, entered: entered, gate: gate}
	var open sync.Once
	letGo := func() { open.Do(func() { close(gate) }) }
	t.Cleanup(letGo) // before the stores close, should the test fail

	created := make(chan error, 1)
	go func() {
		_, err := a.Create(ctx, NewTask{Subject: "not durable yet"})
		created <- err
	}()
	select {
	case <-entered: // a has let go of the lock, and a sync is in flight
	case err := <-created:
		t.Fatalf("the write returned without a sync of the change log: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("nobody synced the change log")
	}
	listed := make(chan []Task, 1)
	go func() {
		ts, err := b.List(ctx)
		assert.NoError(t, err)
		listed <- ts
	}()
	select {
	case <-created:
		t.Fatal("the writer returned before its write was durable")
	case ts := <-listed:
		t.Fatalf("another store returned the write before it was durable: %v", ts)
	case e := <-events:
		t.Fatalf("a watcher was told of the write before it was durable: %v", e)
	case <-time.After(300 * time.Millisecond):
	}
	letGo()
	require.NoError(t, <-created)
	ts := <-listed
	require.Len(t, ts, 2)
	assert.Equal(t, "not durable yet", ts[1].Subject)
	select {
	case e := <-events:
		assert.Equal(t, Created, e.Kind)
		assert.Equal(t, ID(2), e.Task.ID)
	case <-time.After(5 * time.Second):
		t.Fatal("no event once durable")
	}
}

// slowSyncFS makes every sync of the change log take 2 ms, as a slow disk
// does, and counts them.
type slowSyncFS struct {
	fileSystem
	syncs *atomic.Int64
}

func (s slowSyncFS) SyncData(f *os.File) error {
	s.syncs.Add(1)
	time.Sleep(2 * time.Millisecond)
	return s.fileSystem.SyncData(f)
}

// TestWritersShareSyncs: writers that arrive while a sync is in flight
// share the next one — the goroutines of one store (logSync), and stores
// that each have their own descriptors, as processes do (the sync file).
func TestWritersShareSyncs(t *testing.T) {
	ctx := context.Background()
	for _, stores := range []int{1, 4} {
		t.Run(fmt.Sprint(stores, " stores"), func(t *testing.T) {
			dir := t.TempDir()
			var syncs atomic.Int64
			var all []*FileStore
			for range stores {
				s, err := Open(dir, WithGroupCommit())
				require.NoError(t, err)
				t.Cleanup(func() { s.Close() })
				require.True(t, s.gc, "group commit is on")
				_, err = s.List(ctx)
				require.NoError(t, err)
				s.fs = slowSyncFS{s.fs, &syncs}
				all = append(all, s)
			}
			const writers, each = 8, 20
			var wg sync.WaitGroup
			for w := range writers {
				s := all[w%stores]
				wg.Go(func() {
					for range each {
						_, err := s.Create(ctx, NewTask{Subject: "shared"})
						assert.NoError(t, err)
					}
				})
			}
			wg.Wait()
			ts, err := all[0].List(ctx)
			require.NoError(t, err)
			require.Len(t, ts, writers*each)
			n := syncs.Load()
			var counted int64
			for _, s := range all {
				counted += s.Stats().Syncs
			}
			assert.Equal(t, n, counted, "Stats counts every sync")
			require.NotZero(t, n)
			t.Logf("%d writes, %d syncs of the change log: %.1f writes per sync", writers*each, n, float64(writers*each)/float64(n))
			assert.Less(t, n, int64(writers*each/2), "syncs are shared")
		})
	}
}

// TestGarbageSyncFile: whatever the sync file holds — garbage, a torn
// record, a record of another log, megabytes — a write still syncs the
// change log itself and succeeds, and the next one is shared again.
func TestGarbageSyncFile(t *testing.T) {
	ctx := context.Background()
	for name, content := range map[string][]byte{
		"garbage":     []byte("not a sync record at all"),
		"torn":        {1, 2, 3},
		"other log":   append(make([]byte, 8), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
		"megabytes":   make([]byte, 4<<20),
		"empty":       {},
		"nul and ffs": {0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, syncFileName), content, 0o644))
			a, b := openPair(t, dir)
			for i := range 3 {
				before := a.Stats().Syncs
				_, err := a.Create(ctx, NewTask{Subject: fmt.Sprint("write ", i)})
				require.NoError(t, err)
				assert.Equal(t, before+1, a.Stats().Syncs, "the write synced the change log")
			}
			ts, err := b.List(ctx)
			require.NoError(t, err)
			assert.Len(t, ts, 3)
			assert.Zero(t, b.Stats().Syncs, "b found a's syncs in the sync file")
		})
	}
}

// TestLeaderSyncsForItsFollowers: a leader whose own record the sync file
// already covers (another process synced past it) still syncs for the
// followers of its store that appended after that, instead of claiming
// their records durable.
func TestLeaderSyncsForItsFollowers(t *testing.T) {
	ctx := context.Background()
	a, b := openPair(t, t.TempDir())
	_, err := a.Create(ctx, NewTask{Subject: "a has the log open"})
	require.NoError(t, err)
	_, err = b.Create(ctx, NewTask{Subject: "b syncs past it"}) // the sync file now covers b's record
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(a.dir, logFileName))
	require.NoError(t, err)
	synced := fi.Size()
	// A goroutine of a appended after that (staged), and the leader's own
	// record ends at synced.
	a.log.sync.appended(a.log.gen, synced+50)
	before := a.Stats().Syncs
	require.NoError(t, a.syncAfterLock(afterLock{sync: true, gen: a.log.gen, off: synced, first: a.log.sync.firstRound(), log: a.log.f, ino: a.log.ino}))
	assert.Equal(t, before+1, a.Stats().Syncs, "the leader synced for its follower")
	assert.True(t, a.log.sync.covers(a.log.gen, synced+50))
}

// TestNewLogForgetsSyncs: replacing the change log clears the sync file,
// whose record names the old log by its inode number — a number the new
// log may be given again.
func TestNewLogForgetsSyncs(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, _ := openPair(t, dir)
	_, err := a.Create(ctx, NewTask{Subject: "synced"})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, syncFileName))
	require.NoError(t, err)
	require.Len(t, data, 16, "a record of the old log")
	require.NoError(t, a.acquire(ctx, true))
	release := a.endOp
	require.NoError(t, a.prepareLog())
	require.NoError(t, a.replaceLog())
	data, err = os.ReadFile(filepath.Join(dir, syncFileName))
	require.NoError(t, err)
	assert.Empty(t, data, "no record says anything of the new log")
	require.NoError(t, release())
}

// failSyncFSFS fails every syncfs while fail is set, and every fdatasync
// while failData is.
type failSyncFSFS struct {
	fileSystem
	fail, failData *atomic.Bool
}

func (f failSyncFSFS) SyncFS(d *os.File) error {
	if f.fail.Load() {
		return &os.PathError{Op: "syncfs", Path: d.Name(), Err: syscall.EIO}
	}
	return f.fileSystem.SyncFS(d)
}

func (f failSyncFSFS) SyncData(file *os.File) error {
	if f.failData.Load() {
		return &os.PathError{Op: "fdatasync", Path: file.Name(), Err: syscall.EIO}
	}
	return f.fileSystem.SyncData(file)
}

// TestFailedSyncFSIsNotForgotten: once a syncfs failed (here in a
// checkpoint, which the write that made it does not report), a later
// failed sync of the change log is not covered by a syncfs that succeeds,
// since that success proves nothing after the error was reported once:
// the write is of unknown outcome.
func TestFailedSyncFSIsNotForgotten(t *testing.T) {
	restore := checkpointInterval
	checkpointInterval = 1 // every write checkpoints
	t.Cleanup(func() { checkpointInterval = restore })
	ctx := context.Background()
	a, _ := openPair(t, t.TempDir())
	var fail, failData atomic.Bool
	a.fs = failSyncFSFS{a.fs, &fail, &failData}
	_, err := a.Create(ctx, NewTask{Subject: "checkpointed"})
	require.NoError(t, err)
	fail.Store(true)
	_, err = a.Create(ctx, NewTask{Subject: "its checkpoint fails"})
	require.NoError(t, err, "a failed checkpoint does not fail the write: its record is synced")
	fail.Store(false)
	failData.Store(true)
	_, err = a.Create(ctx, NewTask{Subject: "its sync fails"})
	require.ErrorIs(t, err, ErrUnknownOutcome)
	require.ErrorIs(t, err, syscall.EIO)
}

// TestWithoutSyncForgetsSyncRecords: a store opened WithoutSync that
// replaces the change log clears the sync file's records, as a durable
// store does. A record names the log by its inode number, which a later
// log may get again: left there, it would tell a durable store that a log
// it never synced was durable up to its offset, and a read would return
// writes no sync had reached.
func TestWithoutSyncForgetsSyncRecords(t *testing.T) {
	smallLogs(t)
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openPair(t, dir)
	_, err := a.Create(ctx, NewTask{Subject: "synced, and recorded"})
	require.NoError(t, err)
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(dir, syncFileName))
		require.NoError(t, err)
		return fi.Size()
	}
	require.NotZero(t, size(), "the durable write left a record")
	require.NoError(t, b.Close())
	w, err := Open(dir, WithoutSync())
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	fillUntilReplaced(t, w, dir)
	assert.Zero(t, size(), "the replaced log's records are gone")
}

// smallLogs makes the change log be replaced at 32 KiB for the test.
func smallLogs(t *testing.T) {
	restore := maxLogSize
	maxLogSize = 32 << 10
	t.Cleanup(func() { maxLogSize = restore })
}

// fillUntilReplaced creates tasks through s until the change log of dir
// is a new file (its inode changed).
func fillUntilReplaced(t *testing.T, s *FileStore, dir string) {
	t.Helper()
	ino := func() uint64 {
		fi, err := os.Stat(filepath.Join(dir, logFileName))
		require.NoError(t, err)
		return stampOf(fi).Ino
	}
	before := ino()
	for ino() == before {
		_, err := s.Create(context.Background(), NewTask{Subject: "fill the log"})
		require.NoError(t, err)
	}
}

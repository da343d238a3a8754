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
	failDirSync atomic.Bool // the power is lost at the directory's next fsync
	dir         string
	stash       string // hard links to every version's inode
	links       int
	mu          sync.Mutex
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
	if fi, err := f.Stat(); err == nil && fi.IsDir() && p.failDirSync.Load() {
		return &os.PathError{Op: "fsync", Path: f.Name(), Err: syscall.EIO}
	}
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
		v = &version{data: data, synced: p.synced[filepath.Base(oldname)], link: p.keep(filepath.Join(p.dir, oldname))}
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
	ctx := context.Background()
	rounds := 60
	if testing.Short() {
		rounds = 15
	}
	var reverted, replays int
	for round := range rounds {
		rng := rand.New(rand.NewPCG(uint64(round), 7))
		dir := t.TempDir()
		s, err := Open(dir, WithClock(fixedClock))
		require.NoError(t, err)
		pfs := &powerFS{fileSystem: s.fs, dir: dir, stash: t.TempDir(), versions: map[string][]*version{}, synced: map[string]bool{}}
		s.useFS(pfs)
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
		} else if len(want) > 0 && rng.IntN(2) == 0 {
			// A write of one file that the loss interrupts at its
			// commit point, the directory's fsync: not acknowledged
			// (ErrUnknownOutcome), renamed but perhaps not durable.
			id := want[rng.IntN(len(want))].ID
			pfs.failDirSync.Store(true)
			_, err := s.Update(ctx, id, Patch{Description: ptr("in flight")})
			require.ErrorIs(t, err, ErrUnknownOutcome)
			// What it left visible, read by a store that syncs nothing
			// (outside the model).
			look, err := Open(dir, WithClock(fixedClock), WithoutSync())
			require.NoError(t, err)
			wantAfter, err = look.List(ctx)
			require.NoError(t, err)
			require.NoError(t, look.Close())
			require.NotEqual(t, want, wantAfter)
			inFlight = true
		}
		require.NoError(t, s.Close())

		reverted += pfs.lose(t, rng)
		if inFlight && !pfs.failDirSync.Load() {
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
		after, err := Open(dir, WithClock(fixedClock))
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
		next, err := after.Create(ctx, NewTask{Subject: "next boot"})
		require.NoError(t, err)
		assert.Greater(t, next.ID, last.ID, "round %d: a deleted id is never allocated again", round)
		require.NoError(t, after.Close())
		replays++
	}
	t.Logf("%d power losses, %d task files put back to an older version or emptied", replays, reverted)
	assert.Positive(t, reverted, "the losses did revert files")
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

// TestReplacedLogReachesEveryone: a store that learns by a scan that the
// change log was replaced appends its records to the new log, so the
// others follow its writes from the log instead of rescanning the
// directory at each of them (they did: its records went to the replaced
// file, and 2 processes at 10,000 tasks made 188 writes/s).
func TestReplacedLogReachesEveryone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := openPair(t, dir, withLogLimit(32<<10))
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

// openPair opens two stores on dir.
func openPair(t *testing.T, dir string, opts ...Option) (*FileStore, *FileStore) {
	a, err := Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { a.Close() })
	b, err := Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { b.Close() })
	return a, b
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

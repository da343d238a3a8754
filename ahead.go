// Writes decided ahead of the lock: under the full protocol, the slow half
// of a write — writing and fsyncing its task file — is done before the
// directory lock is taken, so that writers in other processes share the
// disk instead of queueing behind each other's fsyncs.

package taskgraph

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/cachedir"
	"github.com/taskgraph-dev/taskgraph/internal/journal"
)

// aheadMaxAge bounds the age of a write decided ahead. The write keeps the
// time it was decided at (as a PostgreSQL transaction keeps the time it
// began), so that the lock holder can decide it again to the same bytes;
// one that waited longer than this for the lock (by the store's clock and
// by the monotonic clock, so that a clock stepped back does not stretch
// it) is decided anew.
const aheadMaxAge = time.Second

// ahead is a single-task write decided on the cache without the directory
// lock, its new task file written and fsynced in the cache directory.
// Under the lock, the write is decided again on the cache brought up to
// date, at the same time: if that gives the same task file byte for byte,
// the file is renamed into place — what the decision read has not changed
// in any way that matters to it — and the lock is held for the rename and
// the directory's fsync only. Otherwise the file is removed and the write
// goes on as if there had been none.
type ahead struct {
	now   time.Time // the store's clock: the time of the write
	start time.Time // time.Now, with its monotonic reading
	id    ID
	data  []byte
	temp  string // the file, relative to the task directory
	used  bool   // renamed into place
}

// decideAhead decides the write mk on the cache as it is and writes its
// task file into the cache directory, durably. It returns nil where there
// is nothing to gain or nothing can be done: other protocols (group commit
// syncs no task file; without sync there is nothing to move), a store
// not read yet, writes of several files or that allocate ids, and any
// failure, which the write under the lock meets again if it matters.
func (s *FileStore) decideAhead(ctx context.Context, mk func(*graph, time.Time) (*plan, error)) *ahead {
	if !s.cfg.offTheLock() {
		return nil
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil
	}
	var p *plan
	var now time.Time
	var err error
	ready := !s.closed && s.scanned && s.journalErr == nil && s.metaErr == nil && s.cacheDir.Ready(s.root, s.dirf, func() map[uint64]bool { return inodesOf(s.stamps) })
	cache := s.cacheDir // a copy: a failed rename may close the store's (renameAhead)
	if ready {
		now = s.now()
		p, err = mk(s.g, now)
		// A task in progress is written by its owner, whom no one else
		// competes with; any other write is decided ahead only on a cache
		// that has read every record of the log, since agents that
		// compete for the same tasks (ClaimNext) would otherwise each
		// fsync a file that the lock holder finds out of date and writes
		// again under the lock.
		ready = err == nil && len(p.put) == 1 && len(p.del) == 0 && p.lastNew == 0 &&
			(s.g.inProgress(p.put[0].ID) || s.log.ReadAll())
	}
	<-s.sem
	if !ready {
		return nil
	}
	data, err := p.file(0)
	if err != nil {
		return nil
	}
	a := &ahead{now: now, start: time.Now(), id: p.put[0].ID, data: data}
	if a.temp = s.spares.Fill(&cache, data); a.temp != "" {
		return a
	}
	name := atomicfile.TempName(taskFileName(a.id))
	// O_EXCL|O_CREATE never opens a FIFO or follows a symlink.
	f, err := atomicfile.OpenIn(cache.File(), cache.Root(), name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, s.cfg.filePerm)
	if err != nil {
		return nil
	}
	a.temp = cachedir.Name + "/" + name
	err = s.fs.Write(f, data)
	if err == nil {
		err = s.fs.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.dropAhead(a)
		return nil
	}
	return a
}

// offTheLock reports whether writes do what they can off the directory
// lock — their files decided ahead, the old versions freed after it: under
// the full protocol. Not on Windows, whose renames and sharing rules
// (docs/windows.md) it has not been tested against.
func (c *config) offTheLock() bool {
	return !c.noSync && runtime.GOOS != "windows"
}

// holdReplaced opens the task file that the single-file write j is about
// to replace or remove, or returns nil. The rename or removal then drops
// its name but not its last reference, so the cost of freeing its blocks
// (a discard, where the filesystem is mounted with it: 250–330 µs on this
// project's disk) is paid by the close after the lock is let go (acquire),
// not by the writers queued for the lock. Nothing is left behind by a
// writer that dies: the kernel closes its files.
func (s *FileStore) holdReplaced(j *journal.Journal) *os.File {
	id, ok := s.replacedTask(j)
	if !ok || !s.cfg.offTheLock() {
		return nil
	}
	f, err := s.fs.OpenRead(taskFileName(id))
	if err != nil {
		return nil
	}
	return f
}

// stale reports whether a waited too long for the lock to be used at
// now, the store's clock (see aheadMaxAge).
func (a *ahead) stale(now time.Time) bool {
	return now.Before(a.now) || now.Sub(a.now) > aheadMaxAge || time.Since(a.start) > aheadMaxAge
}

// matches reports whether p, decided under the lock at a.now, writes the
// file a holds.
func (a *ahead) matches(p *plan) bool {
	if len(p.put) != 1 || len(p.del) != 0 || p.lastNew != 0 || p.put[0].ID != a.id {
		return false
	}
	data, err := p.file(0)
	return err == nil && string(data) == string(a.data)
}

// dropAhead removes the file of a write decided ahead that was not used.
func (s *FileStore) dropAhead(a *ahead) {
	if a != nil && a.temp != "" {
		_ = s.fs.Remove(a.temp)
		a.temp = ""
	}
}

// unusedAhead sets aside the file of a write decided ahead that the lock
// holder decided otherwise: written and fsynced by this store, named only
// in the cache directory, it is pooled as a spare where writes recycle
// (internal/cachedir/spares.go) — agents racing for the same task would otherwise each
// free one — and removed elsewhere.
func (s *FileStore) unusedAhead(a *ahead) {
	if a == nil || a.temp == "" {
		return
	}
	if name, ok := strings.CutPrefix(a.temp, cachedir.Name+"/"); ok && s.spares.On {
		s.spares.Pool([]string{name})
		a.temp = ""
		return
	}
	s.dropAhead(a)
}

// inodesOf returns the inodes of the task files as stamps has them.
func inodesOf(stamps map[ID]stamp) map[uint64]bool {
	inodes := make(map[uint64]bool, len(stamps))
	for _, st := range stamps {
		inodes[st.Ino] = true
	}
	return inodes
}

// errNoAhead: there is no file written ahead to rename.
var errNoAhead = errors.New("taskgraph: no file written ahead")

// renameAhead renames the file written ahead into place. An error means
// nothing was renamed (the file may be gone: a sweep or a hand took it).
func (s *FileStore) renameAhead(a *ahead) error {
	if a == nil || a.temp == "" {
		return errNoAhead
	}
	if err := s.fs.Rename(a.temp, taskFileName(a.id)); err != nil {
		s.dropAhead(a)
		// The cache directory may have been moved or replaced since
		// this store opened it: open it again at the next write.
		s.cacheDir.Forget()
		return err
	}
	a.temp, a.used = "", true
	return nil
}

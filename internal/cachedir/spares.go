// Spares, recycled task files: under the full protocol on Linux, the version a
// write replaces is kept as a spare — a hard link in the cache directory,
// made under the lock before the rename — instead of being freed, and a
// later write fills a spare with its new file instead of creating one.
//
// Why: on ext4 without a journal, creating a file walks past every inode
// freed in the last five seconds (recently_deleted in the kernel's
// ialloc.c, one buffer lookup each), which at a thousand writes a second
// was a third of a write's CPU (perf, 8 processes); and freeing a file's
// blocks costs a discard where the filesystem is mounted with it. A spare
// is overwritten in place: no inode made, no block freed.
//
// Why it is safe: a spare is filled only once no task file can be it.
//   - It is pooled only after the write that replaced it is durable (the
//     directory's fsync after its rename returned); until then the old
//     version may be what the disk holds under the task's name. A write
//     that fails leaves its spares' names removed, never filled.
//   - It is filled only if atomicfile.Reusable says it has no other name
//     (a hard link someone made to the task file, a backup's) and no one
//     has it open (a reader that opened the task file before the rename
//     and reads it still): they keep seeing the old version, as after a
//     plain rename. Otherwise its name is removed and a new file made.
//   - Its content is written and fsynced before its rename, as a new file's
//     is: the rename that moves it into place is the same step.
//
// Writes that replace nothing (Creates) give none back: when the pool runs
// low, the store makes new, empty spares off the writes' path
// (Spares.TopUp).
//
// Spares are per store, so a spare is never filled by a store that did not
// see the write that made it durable. Those left by a store that died are
// removed like its other temporary files (Dir.Sweep), and Close removes
// its own.

package cachedir

import (
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
	"github.com/taskgraph-dev/taskgraph/internal/journal"
)

// MaxSpares bounds the spares a store keeps: a write takes one and gives
// one back, so a few cover writers running at once.
const MaxSpares = 8

// Spares are a store's spare files, by name in the cache directory, and
// what it needs to fill and make them. Its unexported fields are written
// by its methods alone; the store decides when a write's old version
// becomes one (Link) and when it is pooled (Pool, once the write is
// durable).
type Spares struct {
	// Set once, before the first write.
	On       bool            // writes keep the versions they replace (atomicfile.CanReuse, and a store that syncs, off Windows)
	FS       atomicfile.FS   // a write's steps (fill, rename, remove): the fault tests count them
	TaskRoot *os.Root        // the task directory, for the removals a top-up makes
	Cache    *Dir            // the cache directory the spares live in
	FilePerm os.FileMode     // the permissions the store gives its files (WithFilePerm)
	Filled   *atomic.Int64   // counts the spares filled (Stats.Recycled)
	Inflight *sync.WaitGroup // a top-up runs in it, so that the store's Close waits for it

	mu     sync.Mutex
	free   []string        // durable writes' old versions, to fill
	linked []string        // linked by the write under the lock; pooled by its release
	perm   os.FileMode     // of the files this store makes (0: not known yet, or never): a spare must have it
	told   bool            // perm was asked for
	wanted bool            // a write nearly emptied the pool (TopUp)
	making bool            // new spares are being made
	fresh  map[string]bool // pooled spares that TopUp made
	barren bool            // a new spare was not reusable: make no more
}

// Link keeps the task file name of the directory dirf as a spare, a hard
// link in the cache directory, until the write is durable (TakeLinked).
func (sp *Spares) Link(dirf *os.File, name string) bool {
	if !sp.On || sp.Cache.file == nil {
		return false
	}
	spare := atomicfile.TempName(name)
	// Through the directories' handles: two system calls fewer under the
	// lock than through the path of the cache directory.
	if err := atomicfile.LinkIn(dirf, name, sp.Cache.file, spare); err != nil {
		return false
	}
	sp.linked = append(sp.linked, spare)
	return true
}

// DropLinked removes the names of the spares linked by a write that
// failed: the version each holds may still be the one on disk, or its
// task's file.
func (sp *Spares) DropLinked() {
	sp.remove(sp.linked)
	sp.linked = nil
}

// TakeLinked hands the spares linked under the lock to the store, which
// pools them once the write is durable.
func (sp *Spares) TakeLinked() []string {
	linked := sp.linked
	sp.linked = nil
	return linked
}

// Pool pools spares, as far as there is room, and removes the rest.
func (sp *Spares) Pool(names []string) {
	if len(names) == 0 {
		return
	}
	sp.mu.Lock()
	n := min(len(names), MaxSpares-len(sp.free))
	sp.free = append(sp.free, names[:n]...)
	sp.mu.Unlock()
	sp.remove(names[n:])
}

// remove removes the spares named from the cache directory.
func (sp *Spares) remove(names []string) {
	for _, n := range names {
		_ = sp.FS.Remove(Name + "/" + n)
	}
}

// Fill writes data into a spare of the cache directory cache and fsyncs
// it, and returns its name relative to the task directory, or "" if no
// spare could be filled (the caller makes a new file).
func (sp *Spares) Fill(cache *Dir, data []byte) string {
	if cache.file == nil || !sp.On {
		return ""
	}
	for {
		sp.mu.Lock()
		k := len(sp.free)
		if k == 0 {
			sp.wanted = true
			sp.mu.Unlock()
			return ""
		}
		if !sp.told {
			// What WithFilePerm's permissions become; a spare with
			// others (someone changed them) is not passed on.
			sp.perm, sp.told = atomicfile.CreatedPerm(sp.FilePerm), true
		}
		name, perm := sp.free[k-1], sp.perm
		sp.free = sp.free[:k-1]
		sp.wanted = sp.wanted || k <= topUpLow
		fresh := sp.fresh[name]
		delete(sp.fresh, name)
		sp.mu.Unlock()
		filled, refused := sp.fillOne(cache, name, perm, data)
		if filled {
			sp.Filled.Add(1)
			return Name + "/" + name
		}
		if fresh && refused { // no one else can have had it: reuse fails here
			sp.mu.Lock()
			sp.barren = true
			sp.mu.Unlock()
		}
		sp.remove([]string{name})
	}
}

// fillOne overwrites the spare name with data, if it may be, and fsyncs
// it. refused reports a spare that opened but that Reusable refused.
func (sp *Spares) fillOne(cache *Dir, name string, perm os.FileMode, data []byte) (filled, refused bool) {
	if perm == 0 {
		return false, true
	}
	f, err := atomicfile.OpenIn(cache.file, cache.root, name, os.O_WRONLY, 0)
	if err != nil {
		return false, false
	}
	size, ok := atomicfile.Reusable(f, perm)
	// A spare no longer than data is overwritten whole: no truncate.
	filled = ok && sp.FS.Write(f, data) == nil &&
		(size <= int64(len(data)) || f.Truncate(int64(len(data))) == nil) && sp.FS.Sync(f) == nil
	return f.Close() == nil && filled, !ok
}

// TopUp makes new, empty spares for the next writes when writes have
// nearly emptied the pool, off the path of the operation: writes that
// replace nothing (a run of Creates) would otherwise each create a file,
// the slow step spares exist to take out (see the top of this file). It
// makes topUpCount files and fsyncs each: on ext4 without a journal a new
// file's first fsync also syncs its directory, which the fill would
// otherwise pay for under the lock. A new spare was never any task's file,
// so it is pooled at once. Where a new spare turns out not to be reusable
// (leases disabled, say), the store stops making them (barren). Called by
// an operation of an open store, with its semaphore held, so that the
// store's Close waits for it (Inflight).
func (sp *Spares) TopUp() {
	sp.mu.Lock()
	start := sp.wanted && !sp.making && !sp.barren && len(sp.free) < topUpLow && sp.Cache.file != nil && sp.On
	if start {
		sp.wanted, sp.making = false, true
	}
	sp.mu.Unlock()
	if !start {
		return
	}
	// A handle that a failed rename closes meanwhile (Dir.Forget) fails
	// the calls that follow, never reaching another file. What was made
	// is pooled by name, or removed through the task directory (open
	// until Close, which waits for this) if it cannot be.
	cache := *sp.Cache
	sp.Inflight.Add(1)
	go func() {
		defer sp.Inflight.Done()
		// Not through sp.FS: these are no write's steps, which the fault
		// tests count.
		var made []string
		for range topUpCount {
			name := atomicfile.TempName(filenames.Task(1))
			f, err := atomicfile.OpenIn(cache.file, cache.root, name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, sp.FilePerm)
			if err != nil {
				break
			}
			if errors.Join(f.Sync(), f.Close()) != nil {
				_ = sp.TaskRoot.Remove(Name + "/" + name)
				break
			}
			made = append(made, name)
		}
		sp.mu.Lock()
		sp.making = false
		n := min(len(made), MaxSpares-len(sp.free))
		sp.free = append(sp.free, made[:n]...)
		if sp.fresh == nil {
			sp.fresh = make(map[string]bool)
		}
		for _, name := range made[:n] {
			sp.fresh[name] = true
		}
		sp.mu.Unlock()
		for _, name := range made[n:] {
			_ = sp.TaskRoot.Remove(Name + "/" + name)
		}
	}()
}

// topUpCount is how many spares TopUp makes at a time, once a write
// leaves fewer than topUpLow in the pool.
const topUpCount, topUpLow = 4, 2

// RenameInto writes the one task file the write j puts, under the lock,
// into a spare and renames it into place. An error means nothing was
// renamed.
func (sp *Spares) RenameInto(j *journal.Journal) error {
	if len(j.Put) != 1 || len(j.Del) != 0 || !sp.On {
		return ErrNoSpare
	}
	for id, data := range j.Put {
		name := sp.Fill(sp.Cache, []byte(data))
		if name == "" {
			return ErrNoSpare
		}
		if err := sp.FS.Rename(name, filenames.Task(id)); err != nil {
			_ = sp.FS.Remove(name)
			return err
		}
	}
	return nil
}

// ErrNoSpare: no spare could take the file.
var ErrNoSpare = errors.New("taskgraph: no spare file")

// Close removes the spares of a store that is closing.
func (sp *Spares) Close() {
	sp.mu.Lock()
	free := sp.free
	sp.free, sp.fresh = nil, nil
	sp.mu.Unlock()
	sp.remove(free)
}

// Pooled returns the names of the spares in the pool, for tests.
func (sp *Spares) Pooled() []string {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return slices.Clone(sp.free)
}

// State returns the permissions a spare must have (0: not known yet) and
// whether the store stopped making spares, for tests.
func (sp *Spares) State() (perm os.FileMode, barren bool) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.perm, sp.barren
}

// SetPerm sets the permissions a spare must have, as if the store's files
// got perm, for tests.
func (sp *Spares) SetPerm(perm os.FileMode) {
	sp.mu.Lock()
	sp.perm, sp.told = perm, true
	sp.mu.Unlock()
}

// HoldTopUp keeps TopUp from adding spares, as if one were running, for
// tests.
func (sp *Spares) HoldTopUp() {
	sp.mu.Lock()
	sp.making = true
	sp.mu.Unlock()
}

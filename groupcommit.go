// Group commit: writes of one file made durable by their change-log
// record, and writers sharing one fdatasync.

package taskgraph

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/changelog"
)

// Group commit.
//
// A write of one task file is made durable by its change-log record, not
// by fsyncing the file: under the lock the writer renames the new file into
// place (no fsync) and appends the record, which holds the file's full
// content; then, after letting go of the lock, it syncs the log
// (fdatasync). Writers that arrive while a sync is in flight append theirs
// meanwhile and share the next one — within a process by the leader and
// followers of logSync, across processes through the sync file: one
// fdatasync of the log makes durable everything any process appended to it
// before the call, so the process holding the sync file's flock syncs and
// records how far, and the ones queued on the flock find their record
// covered. So no writer waits for a disk flush while holding the lock, and
// a flush serves every writer queued behind it.
//
// The renamed files become durable at the next checkpoint: every
// checkpointInterval bytes of log a writer syncs the whole filesystem
// (syncfs) under the lock and appends a C line carrying the machine's boot
// id. After a power loss the first store to open the directory finds a
// last checkpoint of another boot and replays the records after it onto
// the files (replayAfterReboot), so no acknowledged write is lost.
//
// The visibility rule: no store returns a write that a power loss could
// still undo. Every operation, on its way out, makes sure the log is
// durable up to where this store has read or written it (release), and
// events are published only once the changes they report are durable.
//
// A write of several files keeps the full protocol (a durable journal,
// fsynced files, an fsynced directory), after a checkpoint in its
// announcement: nothing it read can be lost while it stays, and no replay
// takes its files back to a record older than it.

// redoLog reports whether this store keeps the change log a redo log:
// checkpoints, a durable replacement, the replay after a restart. Every
// store on Linux does, also one that syncs each write itself, so that it
// never undoes what group-committing stores on the same directory rely on.
func (s *FileStore) redoLog() bool { return s.boot != "" }

// bootID is atomicfile.BootID; tests replace it to stage a restart.
var bootID = atomicfile.BootID

// checkpointInterval is how much log a checkpoint covers: about a thousand
// writes, so a replay after a power loss reads at most this much, and a
// checkpoint's syncfs is spread over as many writes.
var checkpointInterval int64 = 512 << 10

// logSync is one store's group commit of its change log: it remembers how
// far the log is known durable and lets one goroutine sync at a time while
// the others wait for it. Batches of events wait here until the changes
// they report are durable.
type logSync struct {
	mu      sync.Mutex
	cond    sync.Cond
	syncing bool
	gen     uint64 // which log (a store counts the logs it opens) durable refers to
	durable int64  // the log of gen is durable up to here
	queue   []heldEvents
	publish func([]delivery)
	// How far this store has appended to the log of endGen: a sync that
	// starts now covers at least that much.
	endGen uint64
	end    int64
	// shared is the sync file (see sharedSync), opened by the first sync;
	// nil if it cannot be used. Only the syncing goroutine touches it.
	shared      *os.File
	sharedTried bool
	// rounds counts the syncs begun. The last that failed, and how far
	// the log reached when it did: the kernel reports a failed writeback
	// once per descriptor, so a sync after it on the same descriptor could
	// succeed without the data. Every operation begun before it ended
	// (firstRound) whose offset it reached gets its error instead, and
	// makeDurable falls back on syncfs. An operation begun after it syncs
	// as a store opened afresh would.
	rounds    uint64
	waiting   int // goroutines waiting for a sync in flight
	failRound uint64
	failGen   uint64
	failUpTo  int64
	failErr   error
}

// appended notes that this store appended to the log gen up to off.
func (ls *logSync) appended(gen uint64, off int64) {
	ls.mu.Lock()
	ls.endGen, ls.end = gen, off
	ls.mu.Unlock()
}

// heldEvents are the events of changes recorded in log gen before off.
type heldEvents struct {
	gen uint64
	off int64
	ds  []delivery
}

func (ls *logSync) covers(gen uint64, off int64) bool {
	return gen < ls.gen || (gen == ls.gen && off <= ls.durable)
}

// advance records that the log gen is durable up to off and publishes the
// events that waited for it, in order. Called with mu held.
func (ls *logSync) advance(gen uint64, off int64) {
	if !ls.covers(gen, off) {
		ls.gen, ls.durable = gen, off
	}
	n := 0
	for n < len(ls.queue) && ls.covers(ls.queue[n].gen, ls.queue[n].off) {
		ls.publish(ls.queue[n].ds)
		n++
	}
	ls.queue = slices.Delete(ls.queue, 0, n)
}

// durableTo records that the log gen is durable up to off (a syncfs made
// it so, or there was nothing to sync).
func (ls *logSync) durableTo(gen uint64, off int64) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.advance(gen, off)
}

// hold queues ds until the log gen is durable up to off.
func (ls *logSync) hold(gen uint64, off int64, ds []delivery) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ds) > 0 {
		ls.queue = append(ls.queue, heldEvents{gen, off, ds})
	}
	ls.advance(ls.gen, ls.durable)
}

// firstRound is the first sync an operation ending now depends on: the
// one in flight, or the next.
func (ls *logSync) firstRound() uint64 {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.syncing {
		return ls.rounds
	}
	return ls.rounds + 1
}

// wait returns once the log gen is durable up to off, syncing it with
// sync unless a sync in flight or done since covers it. The leader asks
// sync for everything this store appended so far, for the followers
// queued behind it, and claims no more than that. first is the operation's
// firstRound, taken before it let go of the lock.
func (ls *logSync) wait(gen uint64, off int64, first uint64, sync func(upTo int64) error) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for {
		if ls.failErr != nil && ls.failRound >= first && gen == ls.failGen && off <= ls.failUpTo {
			return ls.failErr
		}
		if ls.covers(gen, off) {
			return nil
		}
		if !ls.syncing {
			break
		}
		ls.waiting++
		ls.cond.Wait()
		ls.waiting--
	}
	ls.syncing = true
	ls.rounds++
	round := ls.rounds
	upTo := off
	if ls.endGen == gen {
		upTo = max(off, ls.end)
	}
	ls.mu.Unlock()
	err := sync(upTo)
	ls.mu.Lock()
	ls.syncing = false
	ls.cond.Broadcast()
	if err != nil {
		if ls.endGen == gen {
			upTo = max(upTo, ls.end) // appended meanwhile, perhaps before the call
		}
		ls.failRound, ls.failGen, ls.failUpTo, ls.failErr = round, gen, upTo, err
		return err
	}
	ls.advance(gen, upTo)
	return nil
}

// dropQueue publishes every held batch: a sync failed, and the changes are
// in the directory for every other store to see, durable or not.
func (ls *logSync) dropQueue() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, h := range ls.queue {
		ls.publish(h.ds)
	}
	ls.queue = nil
}

// syncsAfterUnlock reports whether single-file writes are made durable
// after the lock is let go, by makeDurable: with group commit, by the change
// log's sync; with the full protocol where the log is a redo log, by the
// directory's fsync (dirsync.go).
func (s *FileStore) syncsAfterUnlock() bool { return s.gc || s.dirSyncAfter() }

// dirSyncAfter reports whether the full protocol fsyncs the directory
// after the lock, shared by the writers queued behind it (dirsync.go):
// only where the change log, a redo log, tells how far that fsync reached.
func (s *FileStore) dirSyncAfter() bool { return !s.gc && !s.cfg.noSync && s.redoLog() }

// makeDurable is the last step of every operation, after unlock: it makes
// durable what the operation read or wrote, up to where it read or wrote
// the change log — with group commit by syncing the log, with the full
// protocol by fsyncing the directory (dirsync.go) — which publishes the
// operation's events (queued by unlock, in the order of the operations).
// If that sync fails, syncfs makes everything durable instead; only if
// that fails too is the error returned. The caller reports it as
// ErrUnknownOutcome for a write that committed. Meanwhile the versions
// the write replaced are freed (their last close), and its spares are
// pooled once the write is durable.
func (s *FileStore) makeDurable(a afterLock) error {
	defer s.inflight.Done()
	var freed sync.WaitGroup
	if len(a.replaced) > 0 {
		freed.Go(func() {
			for _, f := range a.replaced {
				f.Close()
			}
		})
	}
	defer freed.Wait()
	var err error
	if a.sync {
		err = s.syncAfterLock(a)
	}
	s.poolSpares(a.linked, err == nil)
	return err
}

// syncAfterLock makes the change log (group commit) or the directory (the
// full protocol) durable up to a.off, sharing the sync with every writer
// queued behind one in flight, and falls back on syncfs if that fails.
func (s *FileStore) syncAfterLock(a afterLock) error {
	gen, off, first, f, ino := a.gen, a.off, a.first, a.log, a.ino
	if f == nil {
		// No log open: nothing was recorded, nothing to sync (a write
		// whose record was lost synced under the lock: recordLog).
		s.log.sync.durableTo(gen, off)
		return nil
	}
	what, sync := "the change log", func(upTo int64) error { return s.sharedSync(s.log.sync.syncFile(s), f, ino, upTo) }
	if !s.gc {
		what, sync = "the directory", func(upTo int64) error { return s.sharedDirSync(ino, upTo) }
	}
	err := s.log.sync.wait(gen, off, first, sync)
	if err == nil {
		return nil
	}
	// After a failed fsync the kernel may have dropped the dirty pages,
	// so syncing again could succeed without them. syncfs reports the
	// error to every caller that has not seen it.
	if s.syncFSFailed.Load() {
		s.log.sync.dropQueue()
		return fmt.Errorf("taskgraph: %s could not be made durable (and a syncfs failed before): %w", what, err)
	}
	ferr := s.syncFS()
	if ferr == nil && s.syncFSFailed.Load() {
		// Another syncfs failed before this one returned: this one's
		// success proves nothing (syncFS).
		ferr = errors.New("another syncfs failed")
	}
	if ferr != nil {
		s.log.sync.dropQueue()
		return fmt.Errorf("taskgraph: %s could not be made durable: %w", what, errors.Join(err, ferr))
	}
	s.log.sync.durableTo(gen, off)
	return nil
}

// replayAfterReboot replays the records after the log's last checkpoint
// (restartDue found it, and that it is of another boot) onto the files
// (see redo), moves aside the files the power loss left empty that no
// record explains (see moveAsideLost), then syncs and checkpoints. It runs
// under the exclusive lock, after a scan has loaded every file into the
// cache; changed reports whether any file changed (the caller scans again).
func (s *FileStore) replayAfterReboot() (changed bool, err error) {
	data := make([]byte, s.log.off-s.log.ckptOff)
	if _, err := s.log.f.ReadAt(data, s.log.ckptOff); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	history := changelog.Redo(changelog.Whole(data))
	for _, id := range slices.Sorted(maps.Keys(history)) {
		c, err := s.redo(ID(id), history[id])
		if err != nil {
			return false, err
		}
		changed = changed || c
	}
	moved, err := s.moveAsideLost(history)
	if err != nil {
		return false, err
	}
	if err := s.checkpointNow(); err != nil {
		return false, fmt.Errorf("taskgraph: replay after restart: %w", err)
	}
	return changed || moved, nil
}

// redo makes the file of id what the last of its changes h says, if the
// file holds a version these records continue: one a record replaced (its
// prev: the same inode, mtime and bytes), one a record wrote (its stamp and
// bytes: a later rename the power loss undid), or one the power loss
// damaged (empty or zero-filled, or a record's bytes with zeros in
// places: a rename that reached the disk before its data). The records
// need not form one chain: a writer killed between its rename and its
// record leaves a gap, and the writes after it are still acknowledged.
//
// Anything else is left as it is: the files win. A file git or a person
// wrote is never one of those versions — git makes a new file, at another
// time — so a pull, a merge, a checkout or a hand
// edit survives the replay, whatever the revs say. A missing file is never
// restored: a create makes its entry durable before its record (commit),
// so a file missing after a restart was deleted — by a store, by git or by
// a person.
func (s *FileStore) redo(id ID, h []changelog.Change) (bool, error) {
	if len(h) == 0 {
		return false, nil
	}
	wrote := make([][]byte, len(h)) // the bytes each record wrote
	for i, c := range h {
		if c.Deleted {
			if i != len(h)-1 {
				return false, nil // ids are never reused: nothing follows a deletion
			}
			continue
		}
		t, err := decodeTask(id, c.Content)
		if err != nil {
			return false, nil // not a task this store wrote
		}
		if wrote[i], err = encodeTask(t); err != nil {
			return false, nil
		}
	}
	fi, data, err := readFile(s.fs, s.root, s.dir, taskFileName(id), maxFileSize)
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		return false, nil // not a regular file, or over the size limit: Check reports it
	case err != nil:
		return false, err
	case fi == nil:
		return false, nil // deleted (see above)
	}
	last := len(h) - 1
	if !h[last].Deleted && bytes.Equal(data, wrote[last]) {
		return false, nil // up to date
	}
	st := stampOf(fi)
	here := changelog.VersionOf(st, data)
	continued := !slices.ContainsFunc(data, func(b byte) bool { return b != 0 }) // empty or zero-filled
	for i, c := range h {
		continued = continued || c.Prev == here ||
			(wrote[i] != nil && ((c.Stamp == st && bytes.Equal(data, wrote[i])) || zeroDamaged(data, wrote[i])))
	}
	if !continued {
		return false, nil
	}
	if h[last].Deleted {
		if err := s.fs.Remove(taskFileName(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("taskgraph: replay after restart: delete task %d: %w", id, err)
		}
		return true, nil
	}
	if err := atomicfile.Replace(s.fs, taskFileName(id), wrote[last], s.cfg.filePerm, true); err != nil {
		return false, fmt.Errorf("taskgraph: replay after restart: write task %d: %w", id, err)
	}
	return true, nil
}

// zeroDamaged reports whether data is what a file written with want may
// hold after a power loss took some of its blocks: no longer than want,
// each byte either want's or zero, and at least one zero.
func zeroDamaged(data, want []byte) bool {
	if len(data) > len(want) || bytes.IndexByte(data, 0) < 0 {
		return false
	}
	for i, b := range data {
		if b != 0 && b != want[i] {
			return false
		}
	}
	return true
}

// lostDirName is where the replay after a restart moves the task files a
// power loss left empty or zero-filled that no record explains: a create
// in flight, never acknowledged, whose rename reached the disk before its
// data. The store never reads it; Check reports what is in it.
const lostDirName = ".taskgraph.lost"

// moveAsideLost moves into lostDirName every task file that is empty or
// zero-filled and that no record since the last checkpoint names (an
// acknowledged write always has one, and is replayed instead).
func (s *FileStore) moveAsideLost(history map[int64][]changelog.Change) (bool, error) {
	var lost []ID
	for _, id := range slices.Sorted(maps.Keys(s.g.broken)) {
		if _, named := history[int64(id)]; named {
			continue
		}
		fi, data, err := readFile(s.fs, s.root, s.dir, taskFileName(id), maxFileSize)
		if err == nil && fi != nil && !slices.ContainsFunc(data, func(b byte) bool { return b != 0 }) {
			lost = append(lost, id)
		}
	}
	if len(lost) == 0 {
		return false, nil
	}
	if err := s.root.Mkdir(lostDirName, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("taskgraph: replay after restart: %w", err)
	}
	if fi, err := s.root.Lstat(lostDirName); err != nil || !fi.IsDir() {
		return false, nil // something else in its place: the files stay, Check reports both
	}
	// The ids stay allocated: an unacknowledged delete of a lower id
	// may have relied on this one to keep the mark (raiseHighWater).
	if s.raiseHighWater(slices.Max(lost)) != nil {
		return false, nil // the meta file cannot be written: the files stay, Check reports them
	}
	if err := s.syncDir(); err != nil {
		return false, fmt.Errorf("taskgraph: replay after restart: %w", err)
	}
	stamp := s.cfg.now().UTC().Format("20060102T150405.000000000Z")
	for _, id := range lost {
		to := filepath.Join(lostDirName, taskFileName(id)+"."+stamp)
		if err := s.root.Rename(taskFileName(id), to); err != nil {
			return false, fmt.Errorf("taskgraph: replay after restart: move aside the empty %s: %w", taskFileName(id), err)
		}
	}
	if err := syncIn(s.root, lostDirName); err != nil {
		return false, fmt.Errorf("taskgraph: replay after restart: %w", err)
	}
	return true, s.syncDir()
}

// syncIn fsyncs the directory name inside root.
func syncIn(root *os.Root, name string) error {
	d, err := root.Open(name)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// setAsideLogPrefix begins the name a change log gets when it is set
// aside: its last checkpoint was made in another directory (the directory
// was copied or restored with its log), so its records are not this
// directory's to replay. The store never reads it; Check reports it.
const setAsideLogPrefix = ".taskgraph.log.set-aside-"

// setAsideLog renames the change log out of the way (see
// setAsideLogPrefix): the files as they are win.
func (s *FileStore) setAsideLog() error {
	to := setAsideLogPrefix + s.cfg.now().UTC().Format("20060102T150405.000000000Z")
	if err := s.root.Rename(logFileName, to); err != nil {
		return fmt.Errorf("taskgraph: set aside a change log of another directory: %w", err)
	}
	s.closeLog()
	s.log.ino, s.log.off, s.log.ckptKnown = 0, 0, false
	return s.syncDir()
}

// What the log's last checkpoint asks of a store that opens the directory.
const (
	logCurrent  = iota // made in this boot, or no checkpoint: nothing to do
	logReplay          // made in another boot: replay what follows it
	logSetAside        // made in another directory after a restart: set the log aside
)

// syncFileName is the file through which the processes sharing a
// directory share their syncs of the change log: its flock is held by the
// one syncing, and it holds the inode of the log and the offset up to
// which that log was last made durable.
const syncFileName = ".taskgraph.sync"

// sharedSync makes the log f (inode ino) durable up to off, unless a sync
// by another process since covers it (the record is cleared whenever a log
// is created or replaced, so a reused inode number never matches): it waits for the sync in flight
// (the sync file's flock), then syncs only if the offset recorded there
// falls short. So one fdatasync serves the writers of every process that
// queued behind it. sf is the sync file, opened by the caller (nil if it
// cannot be used: then it syncs on its own); two goroutines never share
// one, since a flock belongs to the open file, not to a goroutine.
func (s *FileStore) sharedSync(sf, f *os.File, ino uint64, off int64) error {
	// f is held open, so its inode number cannot come back as another
	// log's while the record stands.
	seen := func() (uint64, int64, bool) {
		fi, err := f.Stat()
		if err != nil {
			return 0, 0, false
		}
		return ino, fi.Size(), true
	}
	return syncRecorded(sf, logSyncRecordAt, ino, off, seen, func() error { return s.syncData(f) })
}

// The sync file's records, 16 bytes each: a log's inode, and an offset up
// to which a sync covers what is recorded in it.
const (
	logSyncRecordAt = 0  // the log's data, by fdatasync (sharedSync)
	dirSyncRecordAt = 16 // the renames recorded in it, by an fsync of the directory (sharedDirSync)
)

// syncRecorded runs sync unless the sync file sf's record at `at` says
// that a sync by another process since covers the log ino up to off: it
// waits for the sync in flight (the flock), then syncs only if the record
// falls short, and then records what seen, called before the sync, saw of
// the log (ok false: nothing). Without a usable sync file it syncs on its
// own.
func syncRecorded(sf *os.File, at int64, ino uint64, off int64, seen func() (recIno uint64, size int64, ok bool), sync func() error) error {
	if sf == nil || flock(sf, lockExclusive) != nil {
		return sync()
	}
	defer flock(sf, lockUnlock)
	var rec [16]byte
	if n, _ := sf.ReadAt(rec[:], at); n == len(rec) &&
		binary.LittleEndian.Uint64(rec[:8]) == ino && int64(binary.LittleEndian.Uint64(rec[8:])) >= off {
		return nil // made durable by another process meanwhile
	}
	recIno, size, ok := seen()
	if err := sync(); err != nil {
		return err
	}
	if ok {
		binary.LittleEndian.PutUint64(rec[:8], recIno)
		binary.LittleEndian.PutUint64(rec[8:], uint64(size))
		_, _ = sf.WriteAt(rec[:], at) // a hint: if lost, the next one syncs again
	}
	return nil
}

// syncFile returns the sync file of the syncing goroutine (logSync.wait's
// leader), opened the first time.
func (ls *logSync) syncFile(s *FileStore) *os.File {
	if !ls.sharedTried {
		ls.sharedTried = true
		ls.shared = s.openSyncFile(os.O_CREATE)
	}
	return ls.shared
}

// forgetSyncs clears the sync file's records, under its flock, when this
// store creates or replaces the change log — any store, one opened
// WithoutSync too: the new log may get the inode number of an old one, and
// no offset of the old says anything of it. A sync file that is missing
// or cannot be used holds no record anyone reads.
func (s *FileStore) forgetSyncs() {
	f := s.openSyncFile(0)
	if f == nil {
		return
	}
	defer f.Close()
	if flock(f, lockExclusive) != nil {
		return
	}
	defer flock(f, lockUnlock)
	_ = f.Truncate(0)
}

// syncFS syncs the directory's filesystem, and remembers a failure (see
// syncFSFailed).
func (s *FileStore) syncFS() error {
	// One at a time: syncfs reports a failure once per descriptor, so of
	// two at once on s.dirf one could succeed without the data.
	s.syncFSMu.Lock()
	defer s.syncFSMu.Unlock()
	err := s.fs.SyncFS(s.dirf)
	if err != nil {
		s.syncFSFailed.Store(true)
	}
	return err
}

// syncData syncs the change log f, and counts it.
func (s *FileStore) syncData(f *os.File) error {
	s.stats.syncs.Add(1)
	return s.fs.SyncData(f)
}

// openSyncFile opens the sync file (with flag os.O_CREATE, creating it),
// or returns nil if it is not a regular file or cannot be opened (missing,
// or a read-only directory).
func (s *FileStore) openSyncFile(flag int) *os.File {
	f, err := s.fs.OpenFile(syncFileName, os.O_RDWR|flag, 0o644)
	if err != nil {
		return nil
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || atomicfile.Links(fi) > 1 {
		f.Close()
		return nil // written in place: never through a link to another file
	}
	return f
}

// hardLinked is the problem of a sidecar written in place (the change log,
// the sync file) that has n hard links: it may be another file too, which
// a write to it would change. until says what happens meanwhile.
func hardLinked(what string, n uint64, until string) error {
	return fmt.Errorf("the %s has %d hard links, so it may be another file too, which taskgraph would change by writing it: remove it; until then %s", what, n, until)
}

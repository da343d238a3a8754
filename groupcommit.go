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

// wait returns once the log gen is durable up to off, syncing it with
// sync unless a sync in flight or done since covers it. The leader asks
// sync for everything this store appended so far, for the followers
// queued behind it, and claims no more than that.
func (ls *logSync) wait(gen uint64, off int64, sync func(upTo int64) error) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for {
		if ls.covers(gen, off) {
			return nil
		}
		if !ls.syncing {
			break
		}
		ls.cond.Wait()
	}
	ls.syncing = true
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

// makeDurable is the last step of every operation, after the lock is let
// go: it makes the change log durable up to where the operation read or
// wrote it, which publishes the operation's events (queued by hold, in
// the order of the operations, before the lock was let go). If the log cannot
// be synced, syncfs makes everything durable instead; only if that fails
// too is the error returned. The caller reports it as ErrUnknownOutcome for
// a write that committed.
func (s *FileStore) makeDurable(gen uint64, off int64, f *os.File, ino uint64) error {
	if f == nil {
		// No log open: nothing was recorded, nothing to sync.
		s.logSync.durableTo(gen, off)
		return nil
	}
	err := s.logSync.wait(gen, off, func(upTo int64) error { return s.sharedSync(f, ino, upTo) })
	if err == nil {
		return nil
	}
	// After a failed fdatasync the kernel may have dropped the dirty
	// pages, so syncing the log again could succeed without them. syncfs
	// reports the error to every caller that has not seen it.
	if s.syncFSFailed.Load() {
		s.logSync.dropQueue()
		return fmt.Errorf("taskgraph: the change log could not be made durable (and a syncfs failed before): %w", err)
	}
	if ferr := s.syncFS(); ferr != nil {
		s.logSync.dropQueue()
		return fmt.Errorf("taskgraph: the change log could not be made durable: %w", errors.Join(err, ferr))
	}
	s.logSync.durableTo(gen, off)
	return nil
}

// checkpoint makes every file renamed so far durable with one syncfs and
// says so in the log, so that a replay after a power loss starts there. It
// runs under the exclusive lock, after a commit, when the log has grown
// checkpointInterval since the last one. A failure is left for the next
// write to try again: the records since the last checkpoint still hold
// every write.
func (s *FileStore) checkpoint() {
	if s.logOff-s.ckptOff >= checkpointInterval {
		_ = s.checkpointNow()
	}
}

// syncFSFailed records that a syncfs of this store failed. syncfs reports
// a writeback error once to each descriptor, so after one failed — even in
// a checkpoint, whose failure costs nothing else — a later syncfs that
// succeeds proves nothing, and makeDurable no longer falls back on it.

// checkpointNow syncs everything with syncfs and appends a checkpoint to
// the log: every checkpointInterval, and before the first group-committed
// write to a log without one. (A write of several files checkpoints in its
// announcement; see announce.)
func (s *FileStore) checkpointNow() error {
	line, err := s.checkpointLine()
	if err != nil {
		return err
	}
	off := s.logOff
	if err := s.appendRecord(line); err != nil {
		return err
	}
	s.ckptOff, s.ckptKnown = off, true
	return nil
}

// checkpointLine makes every file renamed so far durable with one syncfs
// and returns the checkpoint line that says so, for the caller to append
// (or to start a new log with).
func (s *FileStore) checkpointLine() ([]byte, error) {
	if err := s.syncFS(); err != nil {
		return nil, fmt.Errorf("taskgraph: checkpoint: %w", err)
	}
	s.stats.checkpoints.Add(1)
	return changelog.AppendCheckpoint(nil, s.boot), nil
}

// replayAfterReboot replays the records after the log's last checkpoint
// (restartDue found it, and that it is of another boot) onto the files:
// each task a whole record names is made what the last such record says,
// unless its file is already at that rev or a later one. Then it syncs
// the files and checkpoints. It runs under the exclusive lock, after a
// scan has loaded every file into the cache; replayed reports whether any
// file changed (the caller scans again).
func (s *FileStore) replayAfterReboot() (replayed bool, err error) {
	data := make([]byte, s.logOff-s.ckptOff)
	if _, err := s.log.ReadAt(data, s.ckptOff); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	final := changelog.Redo(changelog.Whole(data))
	for _, id := range slices.Sorted(maps.Keys(final)) {
		changed, err := s.redo(ID(id), final[id])
		if err != nil {
			return false, err
		}
		replayed = replayed || changed
	}
	if err := s.checkpointNow(); err != nil {
		return false, fmt.Errorf("taskgraph: replay after restart: %w", err)
	}
	return replayed, nil
}

// redo makes the file of id what c says, if it is behind it: missing,
// unreadable (a file created just before a power loss may be empty) or
// at an earlier rev. A deleted id is never allocated again, so a file of it
// is an old version and is removed.
func (s *FileStore) redo(id ID, c changelog.Change) (bool, error) {
	cur, hasCur := s.g.tasks[id]
	_, broken := s.g.broken[id]
	if c.Deleted {
		if !hasCur && !broken {
			return false, nil
		}
		if err := s.fs.Remove(taskFileName(id)); err != nil {
			return false, fmt.Errorf("taskgraph: replay after restart: delete task %d: %w", id, err)
		}
		return true, nil
	}
	t, err := decodeTask(id, c.Content)
	if err != nil {
		return false, nil // not a task this store wrote: leave the file
	}
	if hasCur && !broken && cur.Rev >= t.Rev {
		return false, nil
	}
	data, err := encodeTask(t)
	if err != nil {
		return false, nil
	}
	if err := atomicfile.Replace(s.fs, taskFileName(id), data, s.cfg.filePerm, true); err != nil {
		return false, fmt.Errorf("taskgraph: replay after restart: write task %d: %w", id, err)
	}
	return true, nil
}

// restartDue reports whether the log's last checkpoint was made during
// another boot of the machine, so that records after it may be missing
// from the files. A log without any checkpoint was written without group
// commit, by a version whose every write synced its own files: nothing is
// due. It reads only the log's tail, where a checkpoint is found within
// checkpointInterval of the end, and learns the checkpoint's offset.
func (s *FileStore) restartDue() (bool, error) {
	if s.logIno == 0 || s.logOff == 0 {
		return false, nil
	}
	f, err := s.fs.OpenRead(logFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	defer f.Close()
	size := s.logOff
	for tail := min(size, 2*checkpointInterval); ; tail = size {
		buf := make([]byte, tail)
		if _, err := f.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
			return false, fmt.Errorf("taskgraph: read change log: %w", err)
		}
		skip := 0
		if tail < size {
			// Begin at a line: a "C " inside one is not a checkpoint.
			skip = bytes.IndexByte(buf, '\n') + 1
		}
		if off, ck, ok := changelog.LastCheckpoint(buf[skip:]); ok {
			s.ckptOff, s.ckptKnown = size-tail+int64(skip+off), true
			return ck.Boot != s.boot, nil
		}
		if tail == size {
			s.ckptKnown = false
			return false, nil
		}
	}
}

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
// queued behind it. Without a usable sync file it syncs on its own.
func (s *FileStore) sharedSync(f *os.File, ino uint64, off int64) error {
	ls := &s.logSync
	if !ls.sharedTried {
		ls.sharedTried = true
		ls.shared = s.openSyncFile()
	}
	sf := ls.shared
	if sf == nil || flock(sf, lockExclusive) != nil {
		return s.syncData(f)
	}
	defer flock(sf, lockUnlock)
	var rec [16]byte
	if n, _ := sf.ReadAt(rec[:], 0); n == len(rec) &&
		binary.LittleEndian.Uint64(rec[:8]) == ino && int64(binary.LittleEndian.Uint64(rec[8:])) >= off {
		return nil // made durable by another process meanwhile
	}
	fi, err := f.Stat()
	if err != nil {
		return s.syncData(f)
	}
	if err := s.syncData(f); err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(rec[:8], ino)
	binary.LittleEndian.PutUint64(rec[8:], uint64(fi.Size()))
	_, _ = sf.WriteAt(rec[:], 0) // a hint: if lost, the next one syncs again
	return nil
}

// forgetSyncs clears the sync file's record, under its flock, when this
// store creates or replaces the change log: the new log may get the inode
// number of the old, and no offset of the old says anything of it. A sync
// file that cannot be used holds no record anyone reads.
func (s *FileStore) forgetSyncs() {
	f := s.openSyncFile()
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

// openSyncFile opens the sync file, creating it, or returns nil if it is
// not a regular file or cannot be opened (a read-only directory).
func (s *FileStore) openSyncFile() *os.File {
	f, err := s.fs.OpenFile(syncFileName, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil
	}
	return f
}

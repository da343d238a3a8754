// The change log (.taskgraph.log): its records, checkpoints, and the
// replay after a power loss. Every decision about a write's durability
// reads the fields kept here.

package taskgraph

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/changelog"
	"github.com/taskgraph-dev/taskgraph/internal/journal"
)

// changeLog is a FileStore's hold on its directory's change log
// (.taskgraph.log; the record format is package changelog): the file open
// here, how far this store has read it, its last checkpoint, which cached
// versions a record in it can restore after a power loss, and how far it
// is known durable. Every decision about durability reads these fields:
// appending (appendRecord), reading the records of others (readLog),
// checkpoints and the replay after a restart (groupcommit.go), and whether
// a write may rename an unsynced file (replayable).
//
// Guarded by the store's semaphore, but for sync, which has its own lock.
type changeLog struct {
	f   *os.File // the log open here, or nil
	ino uint64   // the directory's log as last seen (0: none)
	off int64    // read (and appended) up to here: the end of a whole line
	gen uint64   // counts the logs this store has opened; sync's offsets are of one gen
	// checked: refresh found the log open here to be the directory's,
	// read to its end, in the current hold of the lock.
	checked bool
	// ckptOff is where the last checkpoint line begins, if ckptKnown: a
	// checkpoint of this directory (see restartDue).
	ckptOff   int64
	ckptKnown bool
	// recEnd: where the record of each cached task's version ends in this
	// log, when it is known (see replayable).
	recEnd map[ID]int64
	// syncedIno and syncedOff: the log known durable up to there by the
	// syncfs after a scan.
	syncedIno uint64
	syncedOff int64
	// syncHint: the sync file, opened to read how far other processes
	// synced the log (see syncedElsewhere).
	syncHint *os.File
	// sync is the group commit of the log: how far it is durable, the
	// syncing goroutine, the events waiting for durability.
	sync logSync
}

// openLog opens (creating if needed) the change log the directory has now.
// A log that is not a regular file is a *CorruptError: writes refuse until
// it is removed (reads go on, by the directory's mtime alone).
func (s *FileStore) openLog() error {
	if s.log.f != nil {
		if s.log.checked {
			return nil // refresh just saw it, and the lock is held
		}
		if fi, err := s.root.Lstat(logFileName); err == nil && atomicfile.FileID(fi) == s.log.ino {
			return nil
		}
		s.log.f.Close()
		s.log.f = nil
	}
	path := filepath.Join(s.dir, logFileName)
	unusable := func(m fs.FileMode) error {
		return &CorruptError{Path: path, Err: fmt.Errorf("the change log is %w: remove it; until then every write is refused (reads go on)", notRegular(m))}
	}
	// Through the handle, without following a symlink or blocking on a
	// FIFO: something put in its place gives an error, not a hang, and
	// never receives a record.
	f, err := s.fs.OpenFile(logFileName, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		if fi, lerr := s.root.Lstat(logFileName); lerr == nil && !fi.Mode().IsRegular() {
			return unusable(fi.Mode())
		}
		return fmt.Errorf("taskgraph: open change log %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("taskgraph: open change log %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return unusable(fi.Mode())
	}
	if n := atomicfile.Links(fi); n > 1 {
		f.Close()
		return &CorruptError{Path: path, Err: hardLinked("change log", n, "every write is refused (reads go on)")}
	}
	if atomicfile.FileID(fi) != s.log.ino {
		clear(s.log.recEnd) // offsets in another log
	}
	s.log.f, s.log.ino = f, atomicfile.FileID(fi)
	s.log.gen++
	return nil
}

// closeLog closes the change log this store has open.
func (s *FileStore) closeLog() {
	if s.log.f != nil {
		s.log.f.Close()
		s.log.f = nil
	}
	s.log.checked = false
}

// prepareLog opens the change log, compacting it first if it has grown
// large. It runs before a commit's files are written so that creating or
// replacing the log is part of the directory change the commit records.
// With group commit a new log starts with a checkpoint, made durable with
// its directory entry before any record relies on it.
func (s *FileStore) prepareLog() error {
	if err := s.openLog(); err != nil {
		return err
	}
	fresh := false
	if s.log.off == 0 {
		fi, err := s.log.f.Stat()
		if err != nil {
			return fmt.Errorf("taskgraph: change log: %w", err)
		}
		// Any store's new log, WithoutSync's too: see forgetSyncs.
		if fresh = fi.Size() == 0; fresh {
			s.forgetSyncs()
		}
		fresh = fresh && s.redoLog()
	}
	// A new log starts with a checkpoint (its syncfs also makes the new
	// entry durable before any record relies on it); so does a log an
	// older version or another directory wrote, before the first record
	// made durable after the lock: a group-committing store on the
	// directory may return that write once the record is durable, and a
	// record is replayed after a restart only after a checkpoint.
	if fresh || (s.syncsAfterUnlock() && !s.log.ckptKnown) {
		if err := s.checkpointNow(); err != nil {
			return err
		}
	}
	if s.log.off < maxLogSize {
		return nil
	}
	return s.replaceLog()
}

// replaceLog replaces the change log with a new file and opens it. Every
// other store sees its new inode and rescans the directory, so no record
// of the old log needs to reach them; this store is current and starts
// over. With group commit the old log's records are what makes recent
// writes durable: a syncfs first makes their files durable, and the new
// log, a checkpoint, is durable before it replaces the old.
func (s *FileStore) replaceLog() error {
	var first []byte
	if s.redoLog() {
		var err error
		if first, err = s.checkpointLine(); err != nil {
			return fmt.Errorf("taskgraph: replace change log: %w", err)
		}
	}
	s.forgetSyncs() // by every store, WithoutSync's too
	if err := atomicfile.Replace(s.fs, logFileName, first, 0o644, s.redoLog()); err != nil {
		return fmt.Errorf("taskgraph: replace change log: %w", err)
	}
	if s.redoLog() {
		if err := s.syncDir(); err != nil {
			return err
		}
	}
	s.closeLog()
	if err := s.openLog(); err != nil {
		return err
	}
	s.log.off, s.log.ckptOff, s.log.ckptKnown = int64(len(first)), 0, s.redoLog()
	return nil
}

// announce appends to the change log, before the commit point, the ids the
// write is about to change and the directory's mtime before it (see
// package changelog). A store that reads the announcement without the
// record of the write after it — the writer died in between, or that
// append failed — reloads those tasks from their files. If the append
// fails, a new log takes its place, which makes every other store rescan;
// only if that fails too is the write refused, before anything of it is
// written.
//
// With checkpoint it first makes everything durable with syncfs and puts
// a checkpoint line before the announcement, in the same append.
func (s *FileStore) announce(j *journal.Journal, checkpoint bool) error {
	ids := append(slices.Sorted(maps.Keys(j.Put)), j.Del...)
	var rec []byte
	if checkpoint {
		var err error
		if rec, err = s.checkpointLine(); err != nil {
			return err
		}
	}
	start := s.log.off
	err := s.appendRecord(changelog.AppendIntent(rec, s.dirMtime, ids))
	if err == nil {
		if checkpoint {
			s.log.ckptOff, s.log.ckptKnown = start, true
		}
		return nil
	}
	rerr := s.replaceLog()
	if rerr == nil {
		return nil
	}
	if len(j.Put) == 0 && s.syncFS() == nil && s.fs.Remove(logFileName) == nil {
		// A delete on a full disk: without a log every other store
		// rescans, and the delete frees the space the next log needs;
		// the syncfs first makes every file the log's records would
		// restore durable.
		s.closeLog()
		s.log.ino, s.log.off = 0, 0
		return nil
	}
	return fmt.Errorf("taskgraph: the change log takes no record (%w), and cannot be replaced: %w", err, rerr)
}

// recordLog appends the record of a committed write to the change log. If
// the append fails, the write still stands, and the log is replaced (or,
// failing that, removed) so that every other store sees a new log and
// rescans the directory rather than trust a log that lacks it. With group
// commit the record was also what would make the write durable: a syncfs
// does instead; with the full protocol it was what the directory's fsync
// after the lock would reach to: the directory is fsynced here. Only if
// that fails is an error returned.
func (s *FileStore) recordLog(j *journal.Journal, prev map[int64]string) error {
	if s.appendLog(j, prev) == nil {
		return nil
	}
	switch {
	case s.gc:
		if err := s.syncFS(); err != nil {
			return fmt.Errorf("taskgraph: the change log takes no record, and the write cannot be made durable: %w", err)
		}
	case s.dirSyncAfter():
		// No record tells how far the directory's fsync after the lock
		// must reach: it is done here.
		if err := s.syncDir(); err != nil {
			return err
		}
	}
	if s.replaceLog() == nil {
		return nil
	}
	s.closeLog()
	_ = s.fs.Remove(logFileName)
	s.log.ino, s.log.off = 0, 0
	return nil
}

// appendLog records which tasks j changed, with their new content and
// stamps and the versions they replaced (prev, from replacedVersions), and
// the directory mtime after it: one whole record, which tells the other
// stores what changed and, once synced after the lock is let go
// (makeDurable), makes a group-committed write durable.
func (s *FileStore) appendLog(j *journal.Journal, prev map[int64]string) error {
	var rec []byte
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		fi, err := s.root.Lstat(taskFileName(ID(id)))
		if err != nil {
			return fmt.Errorf("taskgraph: %w", err)
		}
		st := stampOf(fi)
		s.stamps[ID(id)] = st
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(j.Put[id])); err != nil {
			return fmt.Errorf("taskgraph: change log: %w", err)
		}
		rec = changelog.AppendPut(rec, id, st, prev[id], compact.Bytes())
	}
	for _, id := range j.Del {
		delete(s.stamps, ID(id))
		var rev int64 // the deleted version's, so that a replay deletes only it
		if t, ok := s.g.tasks[ID(id)]; ok {
			rev = t.Rev
		}
		rec = changelog.AppendDelete(rec, id, rev, prev[id])
	}
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	s.dirMtime = dfi.ModTime().UnixNano()
	if err := s.appendRecord(changelog.AppendMtime(rec, s.dirMtime)); err != nil {
		return err
	}
	for id := range j.Put {
		s.log.recEnd[ID(id)] = s.log.off
	}
	for _, id := range j.Del {
		delete(s.log.recEnd, ID(id))
	}
	return nil
}

// replacedVersions names the version of each task file that j is about to
// replace or remove (changelog.VersionOf, or changelog.NoFile where there
// is none), read before its commit point. Its record carries them, so that
// a replay after a restart continues only the versions the records
// themselves replaced or wrote, and never turns back a file that git or a
// person wrote since (replayAfterReboot). A store that keeps no redo log
// (redoLog) never replays, and reads nothing: its records say Unknown. An
// error means the write has not begun.
func (s *FileStore) replacedVersions(j *journal.Journal) (map[int64]string, error) {
	prev := make(map[int64]string, len(j.Put)+len(j.Del))
	for _, id := range append(slices.Collect(maps.Keys(j.Put)), j.Del...) {
		if !s.redoLog() {
			prev[id] = changelog.Unknown
			continue
		}
		fi, data, err := readFile(s.fs, s.root, s.dir, taskFileName(ID(id)), maxFileSize)
		var ce *CorruptError
		switch {
		case errors.As(err, &ce):
			// Not a regular file, or over the size limit: a version no
			// replay may continue, since no file will hold it.
			prev[id] = changelog.Unknown
		case err != nil:
			return nil, err
		case fi == nil:
			prev[id] = changelog.NoFile
		default:
			prev[id] = changelog.VersionOf(stampOf(fi), data)
		}
	}
	return prev, nil
}

// appendRecord appends rec, whole lines, to the change log.
func (s *FileStore) appendRecord(rec []byte) error {
	if s.log.f == nil {
		return errors.New("taskgraph: no change log is open")
	}
	size := s.log.off
	if !s.log.checked {
		lfi, err := s.log.f.Stat()
		if err != nil {
			return fmt.Errorf("taskgraph: change log: %w", err)
		}
		size = lfi.Size()
	}
	if size > s.log.off {
		// Every whole line has been read (refresh comes first): the rest
		// is the start of a line whose writer died in mid-append. End it,
		// so that ours stays whole.
		rec = append([]byte{'\n'}, rec...)
	}
	if err := s.fs.Append(s.log.f, rec); err != nil {
		return fmt.Errorf("taskgraph: append change log: %w", err)
	}
	s.log.off = size + int64(len(rec))
	if s.syncsAfterUnlock() {
		s.log.sync.appended(s.log.gen, s.log.off)
	}
	return nil
}

// readLog applies the log records between the last offset read and size.
// It reports whether the directory must be rescanned: a write was
// announced while the directory's mtime was not the one this store last
// accounted for, so something changed the directory in between without a
// record.
func (s *FileStore) readLog(size int64) (rescan bool, err error) {
	if err := s.openLog(); err != nil {
		return false, err
	}
	buf := make([]byte, size-s.log.off)
	n, err := s.log.f.ReadAt(buf, s.log.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	whole := changelog.Whole(buf[:n])
	start := s.log.off
	s.log.off += int64(len(whole))
	// The tasks of announced writes whose record has not followed: their
	// writer died after the announcement, or its record was lost.
	var pending map[ID]bool
	// The tasks of the record being read whose content it gave, and
	// whether a line of it was damaged: a whole record is what a replay
	// would restore (see replayable).
	var group []ID
	damaged := false
	pos := start
	for line := range strings.Lines(string(whole)) {
		at := pos
		pos += int64(len(line))
		r, ok := changelog.Parse(strings.TrimSuffix(line, "\n"))
		if !ok {
			damaged = true
			continue
		}
		switch r.Kind {
		case changelog.Checkpoint:
			s.log.ckptOff, s.log.ckptKnown = at, r.Dir == "" || s.dirID == "" || r.Dir == s.dirID
			group, damaged = nil, false
		case changelog.Intent:
			rescan = rescan || r.Mtime != s.dirMtime
			if pending == nil {
				pending = make(map[ID]bool, len(r.IDs))
			}
			for _, id := range r.IDs {
				pending[ID(id)] = true
			}
			group, damaged = nil, false
		case changelog.Put, changelog.Delete:
			// Until its M line the record is not whole: no replay would
			// restore this version, and if the M never comes the writer
			// died in mid-append (pending: reload, and make it durable).
			delete(s.log.recEnd, ID(r.ID))
			fromRecord, err := s.applyRecord(r)
			if err != nil {
				return false, err
			}
			group = append(group, ID(r.ID))
			if !fromRecord && r.Kind == changelog.Put {
				damaged = true
			}
		case changelog.Mtime:
			s.dirMtime = r.Mtime
			for _, id := range group {
				delete(pending, id)
				if !damaged {
					if _, cached := s.stamps[id]; cached {
						s.log.recEnd[id] = pos
					}
				}
			}
			group, damaged = nil, false
		}
	}
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		if err := s.reload(id); err != nil {
			return false, err
		}
	}
	if len(pending) > 0 && s.syncsAfterUnlock() {
		// No record of those files makes them durable: their writer
		// died before it. Whatever of them this store now returns must
		// survive a power loss. Under the full protocol their files are
		// synced, but not the directory: no record says how far its
		// fsync after the lock must reach.
		sync := s.syncFS
		if !s.gc {
			sync = func() error { return s.syncSeen(slices.Sorted(maps.Keys(pending))) }
		}
		if err := sync(); err != nil {
			return false, fmt.Errorf("taskgraph: make an unrecorded write durable: %w", err)
		}
	}
	return rescan, nil
}

// applyRecord applies one change-log record. A Put carries the file's new
// content and stamp, so following another process's writes costs no file
// reads; one whose content is damaged (a writer killed in mid-append) only
// costs a reload from the file, which is always safe. fromRecord reports
// whether a Put was applied from the record's content.
func (s *FileStore) applyRecord(r changelog.Record) (fromRecord bool, err error) {
	id := ID(r.ID)
	if r.Kind == changelog.Put && r.Content != nil {
		if t, err := decodeTask(id, r.Content); err == nil {
			s.g.maxID = max(s.g.maxID, id)
			s.hub.change(s.g, []ID{id}, func() { s.g.put(t) })
			s.stamps[id] = r.Stamp
			return true, nil
		}
	}
	return false, s.reload(id)
}

// wholeLines returns where the last whole line of a change log of size
// bytes ends: before a line a writer was killed in the middle of, so that
// the next append starts a line of its own instead of ending that one.
func (s *FileStore) wholeLines(size int64) int64 {
	if size == 0 {
		return 0
	}
	f, err := s.fs.OpenRead(logFileName)
	if err != nil {
		return size
	}
	defer f.Close()
	var last [1]byte
	if n, _ := f.ReadAt(last[:], size-1); n == 1 && last[0] != '\n' {
		return size - 1 // appendRecord ends the torn line first
	}
	return size
}

// restartDue reads the log's last checkpoint and says what it asks (see
// logCurrent). A log without any checkpoint was written without group
// commit, by a version whose every write synced its own files: nothing is
// due. A checkpoint of another directory (a copy, a restore) is not this
// directory's: after a restart its records are set aside, in this boot the
// next group-committed write checkpoints here first. It reads the log
// backwards to its last checkpoint, which is found within
// checkpointInterval of the end when group commit wrote the log, learns the
// checkpoint's offset and, when the checkpoint is this directory's, which
// cached versions the records after it hold (recEnd).
func (s *FileStore) restartDue() (int, error) {
	if s.log.ino == 0 || s.log.off == 0 {
		s.log.ckptKnown = false
		return logCurrent, nil
	}
	f, err := s.fs.OpenRead(logFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return logCurrent, nil
	}
	if err != nil {
		return 0, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	defer f.Close()
	size := s.log.off
	at, ck, ok, err := changelog.LastCheckpoint(f, size)
	if err != nil {
		return 0, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	if !ok {
		s.log.ckptKnown = false
		return logCurrent, nil
	}
	// A checkpoint that does not say its directory comes from an older
	// version, on this directory.
	mine := ck.Dir == "" || s.dirID == "" || ck.Dir == s.dirID
	s.log.ckptOff, s.log.ckptKnown = at, mine
	switch {
	case ck.Boot != s.boot && mine:
		return logReplay, nil
	case ck.Boot != s.boot:
		return logSetAside, nil
	case mine:
		records := make([]byte, size-at)
		if _, err := f.ReadAt(records, at); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("taskgraph: read change log: %w", err)
		}
		s.noteRecords(records, at)
	}
	return logCurrent, nil
}

// noteRecords learns, from the log after the checkpoint at offset at, the
// end of the last record of each cached task whose file is still the
// version that record wrote (its stamp): see replayable.
func (s *FileStore) noteRecords(log []byte, at int64) {
	for id, h := range changelog.Redo(changelog.Whole(log)) {
		c := h[len(h)-1]
		if !c.Deleted && s.stamps[ID(id)] == c.Stamp {
			s.log.recEnd[ID(id)] = at + int64(c.End)
		}
	}
}

// replayable reports whether the version of id's file that a write is about
// to replace can be restored from the change log after a power loss: its
// record comes after the last checkpoint and is durable. If it cannot, the
// file is that version's only durable copy, and a group-committed write
// must not rename an unsynced file over it — a power loss may keep the
// rename and lose the data (ext4's unwritten extents, noauto_da_alloc,
// XFS), leaving neither version — so it fsyncs the new file first: about
// once per task per checkpoint. A new task replaces nothing.
func (s *FileStore) replayable(id ID) bool {
	if _, exists := s.stamps[id]; !exists {
		return true
	}
	end, ok := s.log.recEnd[id]
	if !ok || !s.log.ckptKnown || end <= s.log.ckptOff {
		return false
	}
	if s.log.ino == s.log.syncedIno && end <= s.log.syncedOff {
		return true
	}
	s.log.sync.mu.Lock()
	covered := s.log.sync.covers(s.log.gen, end)
	s.log.sync.mu.Unlock()
	return covered || s.syncedElsewhere(end)
}

// syncedElsewhere reports whether the sync file says that another process
// made the log durable up to end.
func (s *FileStore) syncedElsewhere(end int64) bool {
	if s.log.syncHint == nil {
		if s.log.syncHint = s.openSyncFile(os.O_CREATE); s.log.syncHint == nil {
			return false
		}
	}
	var rec [16]byte
	n, _ := s.log.syncHint.ReadAt(rec[:], logSyncRecordAt)
	return n == len(rec) && binary.LittleEndian.Uint64(rec[:8]) == s.log.ino && int64(binary.LittleEndian.Uint64(rec[8:])) >= end
}

// checkpoint makes every file renamed so far durable with one syncfs and
// says so in the log, so that a replay after a power loss starts there. It
// runs under the exclusive lock, after a commit, when the log has grown
// checkpointInterval since the last one. A failure is left for the next
// write to try again: the records since the last checkpoint still hold
// every write.
func (s *FileStore) checkpoint() {
	if s.log.off-s.log.ckptOff >= checkpointInterval {
		_ = s.checkpointNow()
	}
}

// checkpointNow syncs everything with syncfs and appends a checkpoint to
// the log: every checkpointInterval, and before the first group-committed
// write to a log without one. (A write of several files checkpoints in its
// announcement; see announce.)
func (s *FileStore) checkpointNow() error {
	line, err := s.checkpointLine()
	if err != nil {
		return err
	}
	off := s.log.off
	if err := s.appendRecord(line); err != nil {
		return err
	}
	s.log.ckptOff, s.log.ckptKnown = off, true
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
	return changelog.AppendCheckpoint(nil, s.boot, s.dirID), nil
}

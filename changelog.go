// The change log (.taskgraph.log): how every store learns what the others
// wrote without reading their files, and what a writer that died left
// unfinished.

package taskgraph

import (
	"bytes"
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
// here and how far this store has read it. The log is never what makes a
// write durable — every write is durable in its files before its record is
// appended — so a record lost costs the other stores a rescan, never a
// write. Guarded by the store's semaphore.
type changeLog struct {
	f   *os.File // the log open here, or nil
	ino uint64   // the directory's log as last seen (0: none)
	off int64    // read (and appended) up to here: the end of a whole line
	// checked: refresh found the log open here to be the directory's,
	// read to its end, in the current hold of the lock.
	checked bool
}

// Files that earlier versions kept beside the change log, for group
// commit, which this one neither writes nor reads: Check reports them, and
// the git-ignore patterns keep them out of commits.
const (
	syncFileName      = ".taskgraph.sync"           // how far the log was synced
	setAsideLogPrefix = ".taskgraph.log.set-aside-" // a log of another directory, set aside after a restart
	lostDirName       = ".taskgraph.lost"           // files a power loss left empty, moved aside by the replay
)

// hardLinked is the problem of a sidecar written in place (the change log)
// that has n hard links: it may be another file too, which a write to it
// would change. until says what happens meanwhile.
func hardLinked(what string, n uint64, until string) error {
	return fmt.Errorf("the %s has %d hard links, so it may be another file too, which taskgraph would change by writing it: remove it; until then %s", what, n, until)
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
	s.log.f, s.log.ino = f, atomicfile.FileID(fi)
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

// prepareLog opens the change log, replacing it first if it has grown
// large. It runs before a commit's files are written so that creating or
// replacing the log is part of the directory change the commit records.
func (s *FileStore) prepareLog() error {
	if err := s.openLog(); err != nil {
		return err
	}
	if s.log.off < maxLogSize {
		return nil
	}
	return s.replaceLog()
}

// replaceLog replaces the change log with a new, empty file and opens it.
// Every other store sees its new inode and rescans the directory, so no
// record of the old log needs to reach them; this store is current and
// starts over.
func (s *FileStore) replaceLog() error {
	if err := atomicfile.Replace(s.fs, logFileName, nil, 0o644, false); err != nil {
		return fmt.Errorf("taskgraph: replace change log: %w", err)
	}
	s.closeLog()
	if err := s.openLog(); err != nil {
		return err
	}
	s.log.off = 0
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
func (s *FileStore) announce(j *journal.Journal) error {
	ids := append(slices.Sorted(maps.Keys(j.Put)), j.Del...)
	err := s.appendRecord(changelog.AppendIntent(nil, s.dirMtime, ids))
	if err == nil {
		return nil
	}
	rerr := s.replaceLog()
	if rerr == nil {
		// In the new log too, so that a scan learns of a writer that
		// dies before its directory's fsync (unfinishedWrite).
		_ = s.appendRecord(changelog.AppendIntent(nil, s.dirMtime, ids))
		return nil
	}
	if len(j.Put) == 0 && s.fs.Remove(logFileName) == nil {
		// A delete on a full disk: without a log every other store
		// rescans, and the delete frees the space the next log needs.
		s.closeLog()
		s.log.ino, s.log.off = 0, 0
		return nil
	}
	return fmt.Errorf("taskgraph: the change log takes no record (%w), and cannot be replaced: %w", err, rerr)
}

// recordLog appends the record of a committed, durable write to the
// change log. If the append fails, the write still stands, and the log is
// replaced (or, failing that, removed) so that every other store sees a
// new log and rescans the directory rather than trust a log that lacks it.
func (s *FileStore) recordLog(j *journal.Journal) {
	if s.appendLog(j) == nil {
		return
	}
	if s.replaceLog() == nil {
		return
	}
	s.closeLog()
	_ = s.fs.Remove(logFileName)
	s.log.ino, s.log.off = 0, 0
}

// appendLog records which tasks j changed, with their new content and
// stamps, and the directory mtime after it: one whole record, which tells
// the other stores what changed.
func (s *FileStore) appendLog(j *journal.Journal) error {
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
		rec = changelog.AppendPut(rec, id, st, compact.Bytes())
	}
	for _, id := range j.Del {
		delete(s.stamps, ID(id))
		rec = changelog.AppendDelete(rec, id)
	}
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	s.dirMtime = dfi.ModTime().UnixNano()
	return s.appendRecord(changelog.AppendMtime(rec, s.dirMtime))
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
	s.log.off += int64(len(whole))
	// The tasks of announced writes whose record has not followed: their
	// writer died after the announcement, or its record was lost.
	var pending map[ID]bool
	for line := range strings.Lines(string(whole)) {
		r, ok := changelog.Parse(strings.TrimSuffix(line, "\n"))
		if !ok {
			continue
		}
		switch r.Kind {
		case changelog.Intent:
			rescan = rescan || r.Mtime != s.dirMtime
			if pending == nil {
				pending = make(map[ID]bool, len(r.IDs))
			}
			for _, id := range r.IDs {
				pending[ID(id)] = true
			}
		case changelog.Put, changelog.Delete:
			if err := s.applyRecord(r); err != nil {
				return false, err
			}
			delete(pending, ID(r.ID))
		case changelog.Mtime:
			s.dirMtime = r.Mtime
		}
	}
	if len(pending) > 0 && !rescan {
		// Their writer may have died between its rename and the
		// directory's fsync: what this store now reads of them must
		// survive a power loss (their files were fsynced before the
		// rename). A rescan sees to it instead (unfinishedWrite).
		if err := s.syncDir(); err != nil {
			return false, fmt.Errorf("taskgraph: make an unrecorded write durable: %w", err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		if err := s.reload(id); err != nil {
			return false, err
		}
	}
	return rescan, nil
}

// applyRecord applies one change-log record. A Put carries the file's new
// content and stamp, so following another process's writes costs no file
// reads; one whose content is damaged (a writer killed in mid-append) only
// costs a reload from the file, which is always safe.
func (s *FileStore) applyRecord(r changelog.Record) error {
	id := ID(r.ID)
	if r.Kind == changelog.Put && r.Content != nil {
		if t, err := decodeTask(id, r.Content); err == nil {
			s.g.maxID = max(s.g.maxID, id)
			s.hub.change(s.g, []ID{id}, func() { s.g.put(t) })
			s.stamps[id] = r.Stamp
			return nil
		}
	}
	return s.reload(id)
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

// unfinishedWrite reports whether the change log, read by a scan rather
// than record by record, ends in a write that did not finish: a writer
// killed after its announcement, perhaps before the directory's fsync that
// made its rename durable. A write's record ends with its M line, and every
// write fsyncs the directory before it appends it; a write that finished
// after an unfinished one fsynced the directory too. So only the log's
// last line matters.
func (s *FileStore) unfinishedWrite() (bool, error) {
	if s.log.ino == 0 || s.log.off == 0 {
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
	// An M line is short; a line that does not fit in tail is not one.
	var tail [32]byte
	at := max(s.log.off-int64(len(tail)), 0)
	n, err := f.ReadAt(tail[:s.log.off-at], at)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	last := tail[:n]
	if i := bytes.LastIndexByte(last[:max(len(last)-1, 0)], '\n'); i >= 0 {
		last = last[i+1:]
	} else if at > 0 {
		return true, nil // a line longer than tail
	}
	r, ok := changelog.Parse(strings.TrimSuffix(string(last), "\n"))
	return !ok || r.Kind != changelog.Mtime, nil
}

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
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
	"github.com/taskgraph-dev/taskgraph/internal/journal"
)

// changeLog is a FileStore's hold on its directory's change log
// (.taskgraph.log; the record format is package changelog): the file open
// here and how far this store has read it. The log is never what makes a
// write durable — every write is durable in its files before its record is
// appended — so a record lost costs the other stores a rescan, never a
// write. It knows lines, not tasks: the store decides what a record says.
// Guarded by the store's semaphore; nothing else writes its fields.
type changeLog struct {
	fs   fileSystem // the directory's, through which the log is written
	root *os.Root   // the directory, for Lstat
	path string     // the log's path, for messages
	max  int64      // the size at which prepare replaces it
	f    *os.File   // the log open here, or nil
	ino  uint64     // the directory's log as last seen (0: none)
	off  int64      // read (and appended) up to here: the end of a whole line
	// checked: refresh found the log open here to be the directory's,
	// read to its end, in the current hold of the lock.
	checked bool
}

func newChangeLog(fsys fileSystem, root *os.Root, dir string, max int64) changeLog {
	return changeLog{fs: fsys, root: root, path: filepath.Join(dir, logFileName), max: max}
}

// Files that earlier versions kept beside the change log, for group
// commit, which this one neither writes nor reads: Check reports them, and
// the git-ignore patterns keep them out of commits.
const (
	syncFileName      = filenames.Sync              // how far the log was synced
	setAsideLogPrefix = filenames.SetAsideLogPrefix // a log of another directory, set aside after a restart
	lostDirName       = filenames.LostDir           // files a power loss left empty, moved aside by the replay
)

// hardLinked is the problem of a sidecar written in place (the change log)
// that has n hard links: it may be another file too, which a write to it
// would change. until says what happens meanwhile.
func hardLinked(what string, n uint64, until string) error {
	return fmt.Errorf("the %s has %d hard links, so it may be another file too, which taskgraph would change by writing it: remove it; until then %s", what, n, until)
}

// open opens (creating if needed) the change log the directory has now.
// A log that is not a regular file is a *CorruptError: writes refuse until
// it is removed (reads go on, by the directory's mtime alone).
func (l *changeLog) open() error {
	if l.f != nil {
		if l.checked {
			return nil // refresh just saw it, and the lock is held
		}
		if fi, err := l.root.Lstat(logFileName); err == nil && atomicfile.FileID(fi) == l.ino {
			return nil
		}
		l.f.Close()
		l.f = nil
	}
	unusable := func(m fs.FileMode) error {
		return &CorruptError{Path: l.path, Err: fmt.Errorf("the change log is %w: remove it; until then every write is refused (reads go on)", notRegular(m))}
	}
	// Through the handle, without following a symlink or blocking on a
	// FIFO: something put in its place gives an error, not a hang, and
	// never receives a record.
	f, err := l.fs.OpenFile(logFileName, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		if fi, lerr := l.root.Lstat(logFileName); lerr == nil && !fi.Mode().IsRegular() {
			return unusable(fi.Mode())
		}
		return fmt.Errorf("taskgraph: open change log %s: %w", l.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("taskgraph: open change log %s: %w", l.path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return unusable(fi.Mode())
	}
	if n := atomicfile.Links(fi); n > 1 {
		f.Close()
		return &CorruptError{Path: l.path, Err: hardLinked("change log", n, "every write is refused (reads go on)")}
	}
	l.f, l.ino = f, atomicfile.FileID(fi)
	return nil
}

// close closes the change log open here.
func (l *changeLog) close() error {
	l.checked = false
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// prepare opens the change log, replacing it first if it has grown large.
// A write prepares it before its files are written, so that creating or
// replacing the log is part of the directory change the write commits.
func (l *changeLog) prepare() error {
	if err := l.open(); err != nil {
		return err
	}
	if l.off < l.max {
		return nil
	}
	return l.replace()
}

// replace replaces the change log with a new, empty file and opens it.
// Every other store sees its new inode and rescans the directory, so no
// record of the old log needs to reach them; this store is current and
// starts over.
func (l *changeLog) replace() error {
	if err := atomicfile.Replace(l.fs, logFileName, nil, 0o644, false); err != nil {
		return fmt.Errorf("taskgraph: replace change log: %w", err)
	}
	l.close()
	if err := l.open(); err != nil {
		return err
	}
	l.off = 0
	return nil
}

// restart cuts the change log open here short, to nothing, in place: its
// blocks are freed even while other stores hold it open, which see it cut
// short and rescan.
func (l *changeLog) restart() error {
	if l.f == nil {
		return errors.New("taskgraph: no change log is open")
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("taskgraph: cut the change log short: %w", err)
	}
	l.off, l.checked = 0, false
	return nil
}

// remove removes the change log: without one, every other store rescans
// the directory. It reports whether the log is gone; either way this
// store forgets it, and rescans at its next refresh.
func (l *changeLog) remove() bool {
	l.close()
	err := l.fs.Remove(logFileName)
	l.ino, l.off = 0, 0
	return err == nil || errors.Is(err, fs.ErrNotExist)
}

// append appends rec, whole lines, to the change log.
func (l *changeLog) append(rec []byte) error {
	if l.f == nil {
		return errors.New("taskgraph: no change log is open")
	}
	size := l.off
	if !l.checked {
		lfi, err := l.f.Stat()
		if err != nil {
			return fmt.Errorf("taskgraph: change log: %w", err)
		}
		size = lfi.Size()
	}
	if size > l.off {
		// Every whole line has been read (refresh comes first): the rest
		// is the start of a line whose writer died in mid-append. End it,
		// so that ours stays whole.
		rec = append([]byte{'\n'}, rec...)
	}
	if err := l.fs.Append(l.f, rec); err != nil {
		return fmt.Errorf("taskgraph: append change log: %w", err)
	}
	l.off = size + int64(len(rec))
	return nil
}

// logNews is what the directory's change log holds that this store has not
// read.
type logNews int

const (
	logSame  logNews = iota // nothing: the log ends where this store stopped reading
	logGrown                // records appended since: read them (readNew)
	logLost                 // removed, replaced or cut short: records may be lost, so rescan
)

// news compares the directory's change log with what this store has read
// of it, and returns its size.
func (l *changeLog) news() (logNews, int64, error) {
	fi, err := l.root.Lstat(logFileName)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()):
		if l.ino != 0 {
			// Removed (by a writer that could not append to it) or
			// replaced by something unusable.
			return logLost, 0, nil
		}
		return logSame, 0, nil
	case err != nil:
		return logSame, 0, fmt.Errorf("taskgraph: %w", err)
	case atomicfile.FileID(fi) != l.ino:
		return logLost, fi.Size(), nil // a new log, created or compacted
	case fi.Size() < l.off:
		return logLost, fi.Size(), nil // cut short in place, by something other than taskgraph
	case fi.Size() > l.off:
		return logGrown, fi.Size(), nil
	}
	return logSame, fi.Size(), nil
}

// caughtUp records that this store has read the log to size, as news
// found it, in the current hold of the lock: while it is held nobody else
// appends, so the next append need not look at the log again.
func (l *changeLog) caughtUp(size int64) {
	l.checked = l.f != nil && l.ino != 0 && size == l.off
}

// readNew returns the whole lines appended between what this store has
// read and size, and counts them read. A line not yet whole (its writer
// is appending, or died in mid-append) is left for later.
func (l *changeLog) readNew(size int64) ([]byte, error) {
	if err := l.open(); err != nil {
		return nil, err
	}
	buf := make([]byte, size-l.off)
	n, err := l.f.ReadAt(buf, l.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	whole := changelog.Whole(buf[:n])
	l.off += int64(len(whole))
	return whole, nil
}

// readAll reports, by one fstat, whether this store has read every record
// of the log open here.
func (l *changeLog) readAll() bool {
	if l.f == nil {
		return false
	}
	fi, err := l.f.Stat()
	return err == nil && fi.Size() == l.off
}

// skipToEnd takes the directory's log as read to its last whole line: a
// scan, which reads the files themselves, needs none of its records. If
// the log open here is not the directory's any more (appending to it would
// reach no one), or was cut short in place by something other than
// taskgraph, it is closed: nothing known of it holds.
func (l *changeLog) skipToEnd() {
	prevIno, prevOff := l.ino, l.off
	l.ino, l.off = 0, 0
	if fi, err := l.root.Lstat(logFileName); err == nil && fi.Mode().IsRegular() {
		l.ino, l.off = atomicfile.FileID(fi), l.wholeLines(fi.Size())
	}
	if l.ino != prevIno || l.off < prevOff {
		l.close()
	}
}

// wholeLines returns where the last whole line of a change log of size
// bytes ends: before a line a writer was killed in the middle of, so that
// the next append starts a line of its own instead of ending that one.
func (l *changeLog) wholeLines(size int64) int64 {
	if size == 0 {
		return 0
	}
	f, err := l.fs.OpenRead(logFileName)
	if err != nil {
		return size
	}
	defer f.Close()
	var last [1]byte
	if n, _ := f.ReadAt(last[:], size-1); n == 1 && last[0] != '\n' {
		return size - 1 // append ends the torn line first
	}
	return size
}

// endsUnfinished reports whether the change log, read by a scan rather
// than record by record, ends in a write that did not finish: a writer
// killed after its announcement, perhaps before the directory's fsync that
// made its rename durable. A write's record ends with its M line, and every
// write fsyncs the directory before it appends it; a write that finished
// after an unfinished one fsynced the directory too. So only the log's
// last line matters.
func (l *changeLog) endsUnfinished() (bool, error) {
	if l.ino == 0 || l.off == 0 {
		return false, nil
	}
	f, err := l.fs.OpenRead(logFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	defer f.Close()
	// An M line is short; a line that does not fit in tail is not one.
	var tail [32]byte
	at := max(l.off-int64(len(tail)), 0)
	n, err := f.ReadAt(tail[:l.off-at], at)
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

// announce appends to the change log, before the commit point, the ids
// the write is about to change (none for the meta file alone) and the
// directory's mtime before it (see package changelog). A store that reads
// the announcement without the record of the write after it — the writer
// died in between, or that append failed — fsyncs the directory and
// reloads those tasks from their files, so that it never shows what a
// power loss could undo. A write that cannot be announced is refused,
// before anything of it is written. On a full disk the log is first cut
// short in place, which frees its blocks even while other stores hold it
// open (they see it cut short, and rescan): so a delete, which is how a
// full disk gets space back, can still be announced.
func (s *FileStore) announce(ids []int64) error {
	intent := changelog.AppendIntent(nil, s.dirMtime, ids)
	err := s.log.append(intent)
	if err == nil {
		return nil
	}
	if rerr := s.log.restart(); rerr != nil {
		return fmt.Errorf("taskgraph: the change log takes no announcement of this write (%w), and cannot be cut short (%w): nothing was written; see that the disk has space and %s is writable", err, rerr, s.log.path)
	}
	if err := s.log.append(intent); err != nil {
		return fmt.Errorf("taskgraph: the change log takes no announcement of this write (%w): nothing was written; see that the disk has space and %s is writable", err, s.log.path)
	}
	return nil
}

// journalIDs are the ids a write of j changes, for its announcement.
func journalIDs(j *journal.Journal) []int64 {
	return append(slices.Sorted(maps.Keys(j.Put)), j.Del...)
}

// recordLog appends the record of a committed, durable write to the
// change log. If the append fails, the write still stands, and the log is
// replaced (or, failing that, removed) so that every other store sees a
// new log and rescans the directory rather than trust a log that lacks it.
func (s *FileStore) recordLog(j *journal.Journal) {
	rec, err := s.record(j)
	if err == nil && s.log.append(rec) == nil {
		return
	}
	if s.log.replace() != nil {
		s.log.remove()
	}
}

// record is the change-log record of j: which tasks it changed, with their
// new content and stamps, and the directory mtime after it, which tells
// the other stores what changed.
func (s *FileStore) record(j *journal.Journal) ([]byte, error) {
	var rec []byte
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		fi, err := s.root.Lstat(taskFileName(ID(id)))
		if err != nil {
			return nil, fmt.Errorf("taskgraph: %w", err)
		}
		st := stampOf(fi)
		s.stamps[ID(id)] = st
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(j.Put[id])); err != nil {
			return nil, fmt.Errorf("taskgraph: change log: %w", err)
		}
		rec = changelog.AppendPut(rec, id, st, compact.Bytes())
	}
	for _, id := range j.Del {
		delete(s.stamps, ID(id))
		rec = changelog.AppendDelete(rec, id)
	}
	dfi, err := s.dirf.Stat()
	if err != nil {
		return nil, fmt.Errorf("taskgraph: %w", err)
	}
	s.dirMtime = dfi.ModTime().UnixNano()
	return changelog.AppendMtime(rec, s.dirMtime), nil
}

// readLog applies the log records between the last offset read and size.
// It reports whether the directory must be rescanned: a write was
// announced while the directory's mtime was not the one this store last
// accounted for, so something changed the directory in between without a
// record.
func (s *FileStore) readLog(size int64) (rescan bool, err error) {
	whole, err := s.log.readNew(size)
	if err != nil {
		return false, err
	}
	// The tasks of announced writes whose record has not followed: their
	// writer died after the announcement, or its record was lost; open:
	// the last write announced has not ended (its M line).
	var pending map[ID]bool
	open := false
	for line := range strings.Lines(string(whole)) {
		r, ok := changelog.Parse(strings.TrimSuffix(line, "\n"))
		if !ok {
			continue
		}
		switch r.Kind {
		case changelog.Intent:
			open = true
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
			open = false
			s.dirMtime = r.Mtime
		}
	}
	if rescan {
		return true, nil // the scan fsyncs first if it must, then reads every file
	}
	if open || len(pending) > 0 {
		// A writer may have died between its rename and the directory's
		// fsync: what this store reads of it, and tells its watchers,
		// must survive a power loss (its files were fsynced before the
		// rename). So first the fsync.
		if err := s.syncDir(); err != nil {
			return false, fmt.Errorf("taskgraph: make an unrecorded write durable: %w", err)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		if err := s.reload(id); err != nil {
			return false, err
		}
	}
	return false, nil
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

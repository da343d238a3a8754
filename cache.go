package taskgraph

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/changelog"
)

// refresh brings the cache up to date with the directory.
func (s *FileStore) refresh() error {
	s.logChecked = false
	if !s.scanned {
		return s.scan()
	}
	fi, err := s.root.Lstat(logFileName)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()):
		if s.logIno != 0 {
			// The log was removed (by a writer that could not append
			// to it) or replaced by something unusable: records may
			// have been lost.
			return s.scan()
		}
	case err != nil:
		return fmt.Errorf("taskgraph: %w", err)
	case atomicfile.FileID(fi) != s.logIno:
		// A new log (created or compacted): records may have been lost
		// in between.
		return s.scan()
	case fi.Size() < s.logOff:
		// Cut short in place, by something other than taskgraph.
		return s.scan()
	case fi.Size() > s.logOff:
		rescan, err := s.readLog(fi.Size())
		if err != nil {
			return err
		}
		if rescan {
			return s.scan()
		}
	}
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	if dfi.ModTime().UnixNano() != s.dirMtime {
		return s.scan()
	}
	// The log is the one this store has open and ends where this store
	// stopped reading, at a whole line: while the lock is held, nobody
	// else appends, so the next append need not look at it again.
	s.logChecked = s.log != nil && err == nil && fi != nil && atomicfile.FileID(fi) == s.logIno && fi.Size() == s.logOff
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
	buf := make([]byte, size-s.logOff)
	n, err := s.log.ReadAt(buf, s.logOff)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	whole := changelog.Whole(buf[:n])
	start := s.logOff
	s.logOff += int64(len(whole))
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
			s.ckptOff, s.ckptKnown = at, r.Dir == "" || s.dirID == "" || r.Dir == s.dirID
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
			delete(pending, ID(r.ID))
			fromRecord, err := s.applyRecord(r)
			if err != nil {
				return false, err
			}
			if fromRecord {
				group = append(group, ID(r.ID))
			} else if r.Kind == changelog.Put {
				damaged = true
			}
		case changelog.Mtime:
			s.dirMtime = r.Mtime
			if !damaged {
				for _, id := range group {
					s.recEnd[id] = pos
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
	if len(pending) > 0 && s.gc {
		// No record of those files makes them durable: their writer
		// died before it. Whatever of them this store now returns must
		// survive a power loss.
		if err := s.syncFS(); err != nil {
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

// openLog opens (creating if needed) the change log the directory has now.
// A log that is not a regular file is a *CorruptError: writes refuse until
// it is removed (reads go on, by the directory's mtime alone).
func (s *FileStore) openLog() error {
	if s.log != nil {
		if s.logChecked {
			return nil // refresh just saw it, and the lock is held
		}
		if fi, err := s.root.Lstat(logFileName); err == nil && atomicfile.FileID(fi) == s.logIno {
			return nil
		}
		s.log.Close()
		s.log = nil
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
	if atomicfile.FileID(fi) != s.logIno {
		clear(s.recEnd) // offsets in another log
	}
	s.log, s.logIno = f, atomicfile.FileID(fi)
	s.logGen++
	return nil
}

// scan reads the whole directory: it loads every task file whose stamp
// differs from the cache and drops the ones that are gone.
func (s *FileStore) scan() error {
	s.stats.scans.Add(1)
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	prevIno := s.logIno
	s.logIno, s.logOff = 0, 0
	if fi, err := s.root.Lstat(logFileName); err == nil && fi.Mode().IsRegular() {
		s.logIno, s.logOff = atomicfile.FileID(fi), s.wholeLines(fi.Size())
	}
	if s.logIno != prevIno {
		// The log open here is not the directory's any more: appending
		// to it would reach no one.
		s.closeLog()
		clear(s.recEnd)
	}
	d, err := s.root.Open(".")
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("taskgraph: read %s: %w", s.dir, err)
	}
	present := make(map[ID]bool, len(names))
	var ids []ID
	s.temps = nil
	for _, name := range names {
		if id, ok := parseTaskFileName(name); ok {
			present[id] = true
			ids = append(ids, id)
		} else if isTempName(name) {
			s.temps = append(s.temps, name)
		}
	}
	slices.Sort(ids)
	for _, id := range slices.Collect(maps.Keys(s.stamps)) {
		if !present[id] {
			s.hub.change(s.g, []ID{id}, func() { s.g.remove(id) })
			delete(s.stamps, id)
		}
	}
	type loaded struct {
		fi  os.FileInfo
		t   *Task
		err error
	}
	results := make([]loaded, len(ids))
	skip := make([]bool, len(ids))
	// Loading is parallel; installing into the graph is sequential and in
	// id order, which keeps the sorted index appends cheap.
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), 8)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(ids); i += workers {
				id := ids[i]
				if old, cached := s.stamps[id]; cached {
					fi, err := s.root.Lstat(taskFileName(id))
					if err == nil && stampOf(fi) == old {
						skip[i] = true
						continue
					}
				}
				r := &results[i]
				r.fi, r.t, r.err = s.load(id)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		if skip[i] {
			continue
		}
		r := results[i]
		if r.err != nil && !errors.Is(r.err, ErrCorrupt) {
			// A failure to read, not a verdict on the file: cache
			// nothing, so that the next scan reads it again.
			s.scanned = false
			return r.err
		}
		s.install(id, r.fi, r.t, r.err)
	}
	if err := s.readMeta(); err != nil {
		return err
	}
	s.dirMtime = dfi.ModTime().UnixNano()
	if s.redoLog() {
		if err := s.afterScan(); err != nil {
			return err
		}
	}
	s.scanned = true
	return nil
}

// afterScan finishes a scan with group commit: after a restart of the
// machine it replays the log onto the files (which needs the exclusive
// lock), and it makes what the scan read durable, since files renamed
// since the last checkpoint may not be yet.
func (s *FileStore) afterScan() error {
	due, err := s.restartDue()
	if err != nil {
		return err
	}
	if due != logCurrent && !s.exclusive {
		return errNeedExclusive
	}
	switch due {
	case logSetAside:
		if err := s.setAsideLog(); err != nil {
			return err
		}
		return s.scan()
	case logReplay:
		if err := s.openLog(); err != nil {
			return err
		}
		replayed, err := s.replayAfterReboot()
		if err != nil {
			return err
		}
		if replayed {
			return s.scan()
		}
	}
	if err := s.syncFS(); err != nil {
		return fmt.Errorf("taskgraph: sync %s: %w", s.dir, err)
	}
	s.syncedIno, s.syncedOff = s.logIno, s.logOff
	s.logSync.durableTo(s.logGen, s.logOff)
	return nil
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

// isTempName reports whether name is a temporary file of a replacement of
// a task file, the meta file, the journal or the change log (see
// atomicfile.TempName), and nothing else.
func isTempName(name string) bool {
	for _, n := range []string{metaFileName, journalFileName, logFileName} {
		if atomicfile.IsTempOf(name, n) {
			return true
		}
	}
	rest, ok := strings.CutPrefix(name, atomicfile.TempPrefix(taskFilePrefix))
	if !ok {
		return false
	}
	i := strings.Index(rest, taskFileSuffix)
	if i < 0 {
		return false
	}
	target := taskFilePrefix + rest[:i+len(taskFileSuffix)]
	_, ok = parseTaskFileName(target)
	return ok && atomicfile.IsTempOf(name, target)
}

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
	"syscall"

	"github.com/taskgraph/taskgraph/internal/atomicfile"
	"github.com/taskgraph/taskgraph/internal/changelog"
)

// refresh brings the cache up to date with the directory.
func (s *FileStore) refresh() error {
	if !s.scanned {
		return s.scan()
	}
	fi, err := s.root.Lstat(logFileName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if s.logIno != 0 {
			// The log was removed (by a writer that could not append
			// to it): records may have been lost.
			return s.scan()
		}
	case err != nil:
		return fmt.Errorf("taskgraph: %w", err)
	case atomicfile.FileID(fi) != s.logIno:
		// A new log (created or compacted): records may have been lost
		// in between.
		return s.scan()
	case fi.Size() > s.logOff:
		if err := s.readLog(fi.Size()); err != nil {
			return err
		}
	}
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	if dfi.ModTime().UnixNano() != s.dirMtime {
		return s.scan()
	}
	return nil
}

// readLog applies the log records between the last offset read and size.
func (s *FileStore) readLog(size int64) error {
	if err := s.openLog(); err != nil {
		return err
	}
	buf := make([]byte, size-s.logOff)
	n, err := s.log.ReadAt(buf, s.logOff)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("taskgraph: read change log: %w", err)
	}
	whole := changelog.Whole(buf[:n])
	s.logOff += int64(len(whole))
	for line := range strings.Lines(string(whole)) {
		if r, ok := changelog.Parse(strings.TrimSuffix(line, "\n")); ok {
			if err := s.applyRecord(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyRecord applies one change-log record. A Put carries the file's new
// content and stamp, so following another process's writes costs no file
// reads; one whose content is damaged (a writer killed in mid-append) only
// costs a reload from the file, which is always safe.
func (s *FileStore) applyRecord(r changelog.Record) error {
	switch r.Kind {
	case changelog.Mtime:
		s.dirMtime = r.Mtime
	case changelog.Delete:
		return s.reload(ID(r.ID))
	case changelog.Put:
		id := ID(r.ID)
		if r.Content != nil {
			if t, err := decodeTask(id, r.Content); err == nil {
				s.g.maxID = max(s.g.maxID, id)
				s.g.put(t)
				s.stamps[id] = r.Stamp
				return nil
			}
		}
		return s.reload(id)
	}
	return nil
}

// openLog opens (creating if needed) the change log the directory has now.
func (s *FileStore) openLog() error {
	if s.log != nil {
		if fi, err := s.root.Lstat(logFileName); err == nil && atomicfile.FileID(fi) == s.logIno {
			return nil
		}
		s.log.Close()
		s.log = nil
	}
	// Non-blocking, and refused unless a regular file: a FIFO or a
	// directory in its place must give an error, not a hang.
	f, err := s.fs.OpenFile(logFileName, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		if fi, lerr := s.root.Lstat(logFileName); lerr == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("not a regular file (%s): remove it", fi.Mode().Type())
		}
		return fmt.Errorf("taskgraph: open change log %s: %w", filepath.Join(s.dir, logFileName), err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("not a regular file (%s): remove it", fi.Mode().Type())
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("taskgraph: open change log %s: %w", filepath.Join(s.dir, logFileName), err)
	}
	s.log, s.logIno = f, atomicfile.FileID(fi)
	return nil
}

// scan reads the whole directory: it loads every task file whose stamp
// differs from the cache and drops the ones that are gone.
func (s *FileStore) scan() error {
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	s.logIno, s.logOff = 0, 0
	if fi, err := s.root.Lstat(logFileName); err == nil {
		s.logIno, s.logOff = atomicfile.FileID(fi), fi.Size()
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
	for _, name := range names {
		if id, ok := parseTaskFileName(name); ok {
			present[id] = true
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range slices.Collect(maps.Keys(s.stamps)) {
		if !present[id] {
			s.g.remove(id)
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
	s.scanned = true
	return nil
}

package taskgraph

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

func (s *FileStore) refresh() error {
	if !s.scanned {
		return s.scan()
	}
	fi, err := s.root.Lstat(logFileName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("taskgraph: %w", err)
	case fileID(fi) != s.logIno:
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
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return nil
	}
	s.logOff += int64(end + 1)
	for line := range strings.Lines(string(buf[:end+1])) {
		s.applyRecord(strings.TrimSuffix(line, "\n"))
	}
	return nil
}

// applyRecord applies one change-log line:
//
//	P <id> <ino> <size> <mtime> <task JSON>   task id was written, as this
//	D <id>                                    task id was deleted
//	M <mtime>                                 the directory's mtime after a write
//
// A P record carries the file's new content and stamp, so following another
// process's writes costs no file reads. A garbled line (a writer killed in
// mid-append) only costs a reload from the file, which is always safe.
func (s *FileStore) applyRecord(line string) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "M":
		if m, err := strconv.ParseInt(rest, 10, 64); err == nil {
			s.dirMtime = m
		}
	case "D":
		if n, err := strconv.ParseInt(rest, 10, 64); err == nil && n > 0 {
			s.reload(ID(n))
		}
	case "P":
		f := strings.SplitN(rest, " ", 5)
		if len(f) < 1 {
			return
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 {
			return
		}
		id := ID(n)
		if len(f) == 5 {
			ino, e1 := strconv.ParseUint(f[1], 10, 64)
			size, e2 := strconv.ParseInt(f[2], 10, 64)
			mtime, e3 := strconv.ParseInt(f[3], 10, 64)
			if t, err := decodeTask(id, []byte(f[4])); e1 == nil && e2 == nil && e3 == nil && err == nil {
				s.g.maxID = max(s.g.maxID, id)
				s.g.put(t)
				s.stamps[id] = stamp{ino: ino, size: size, mtime: mtime}
				return
			}
		}
		s.reload(id)
	}
}

// openLog opens (creating if needed) the change log the directory has now.
func (s *FileStore) openLog() error {
	if s.log != nil {
		if fi, err := s.root.Lstat(logFileName); err == nil && fileID(fi) == s.logIno {
			return nil
		}
		s.log.Close()
		s.log = nil
	}
	f, err := s.root.OpenFile(logFileName, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("taskgraph: open change log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("taskgraph: open change log: %w", err)
	}
	s.log, s.logIno = f, fileID(fi)
	return nil
}

// scan reads the whole directory: it loads every task file whose stamp
// differs from the cache and drops the ones that are gone.
func (s *FileStore) scan() error {
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	if fi, err := s.root.Lstat(logFileName); err == nil {
		s.logIno, s.logOff = fileID(fi), fi.Size()
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
		if r.err != nil && r.fi == nil {
			return fmt.Errorf("taskgraph: %w", r.err)
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

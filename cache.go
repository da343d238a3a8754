// The FileStore's in-memory copy of its directory: how a store learns
// what other processes wrote (a change-log read, or a scan of every file).

package taskgraph

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/changelog"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// refresh brings the cache up to date with the directory.
func (s *FileStore) refresh() error {
	s.log.Recheck()
	if !s.scanned {
		return s.scan()
	}
	news, size, err := s.log.News()
	if err != nil {
		return err
	}
	switch news {
	case changelog.Lost:
		return s.scan()
	case changelog.Grown:
		rescan, err := s.readLog(size)
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
	s.log.CaughtUp(size)
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
	s.log.SkipToEnd()
	// A log that ends in a write that did not finish: its writer may
	// have died between its rename and the directory's fsync. Nothing
	// this scan reads, or tells its watchers, may be what a power loss
	// undoes, so the fsync comes first (no write runs while the lock is
	// held).
	if unfinished, err := s.log.EndsUnfinished(); err != nil || unfinished {
		if err == nil {
			err = s.syncDir()
		}
		if err != nil {
			return fmt.Errorf("taskgraph: make what a writer that died left durable: %w", err)
		}
	}
	// An empty cache is filled from the snapshot while the directory is
	// listed and every task file stat'ed, in parallel (mostly waiting on
	// the filesystem: more workers than processors); then only the files
	// whose stamp differs from the cache's are read. Nothing else touches
	// the cache until the snapshot is in.
	var snap, wg sync.WaitGroup
	cold := len(s.stamps) == 0 && !s.scanned
	if cold {
		snap.Go(func() { s.loadSnapshot() })
	}
	ids, temps, err := s.readDir()
	if err != nil {
		snap.Wait()
		return err
	}
	s.temps = temps
	slices.Sort(ids)
	workers := max(runtime.GOMAXPROCS(0), 8)
	stamps, statted := statAll(s.dirf, s.root, ids, workers)
	snap.Wait()
	for id := range s.stamps {
		if _, present := searchIDs(ids, id); !present {
			s.hub.change(s.g, []ID{id}, func() { s.g.remove(id) })
			delete(s.stamps, id)
		}
	}
	fis, tasks, errs := make([]os.FileInfo, len(ids)), make([]*Task, len(ids)), make([]error, len(ids))
	skip := make([]bool, len(ids))
	// Loading is parallel; installing into the graph is sequential and in
	// id order, which keeps the sorted index appends cheap.
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(ids); i += workers {
				if old, cached := s.stamps[ids[i]]; cached && statted[i] && stamps[i] == old {
					skip[i] = true
					continue
				}
				fis[i], tasks[i], errs[i] = s.load(ids[i])
			}
		})
	}
	wg.Wait()
	if cold {
		intoSlab(tasks)
	}
	for i, id := range ids {
		if skip[i] {
			continue
		}
		if errs[i] != nil && !errors.Is(errs[i], ErrCorrupt) {
			// A failure to read, not a verdict on the file: cache
			// nothing, so that the next scan reads it again.
			s.scanned = false
			return errs[i]
		}
		s.install(id, fis[i], tasks[i], errs[i])
		s.snapshotLoads++
	}
	if err := s.readMeta(); err != nil {
		return err
	}
	s.dirMtime = dfi.ModTime().UnixNano()
	s.scanned = true
	return nil
}

// statAll stats the task files of ids through the directory's handle,
// workers at a time (mostly waiting on the filesystem): statted[i] says
// whether stamps[i] is the stamp of ids[i]'s file.
func statAll(dirf *os.File, root *os.Root, ids []ID, workers int) (stamps []stamp, statted []bool) {
	stamps, statted = make([]stamp, len(ids)), make([]bool, len(ids))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(ids); i += workers {
				if ino, size, mtime, err := atomicfile.StatIn(dirf, root, taskFileName(ids[i])); err == nil {
					stamps[i], statted[i] = stamp{Ino: ino, Size: size, Mtime: mtime}, true
				}
			}
		})
	}
	wg.Wait()
	return stamps, statted
}

// intoSlab moves the tasks of a cold scan, which arrive together, side by
// side into one slab, as a snapshot's are (graph.go, "slabs"), sized to
// the files read: after a snapshot, few or none (a slab of every task,
// unused, was 44 MB at 100,000 tasks).
func intoSlab(tasks []*Task) {
	n := 0
	for _, t := range tasks {
		if t != nil {
			n++
		}
	}
	slab := make([]Task, 0, n)
	for i, t := range tasks {
		if t != nil {
			slab = append(slab, *t)
			tasks[i] = &slab[len(slab)-1]
		}
	}
}

// readDir lists the task directory: the ids of its task files, and its
// temporary files. It reads the names a few thousand at a time, so that a
// hundred thousand of them are never all held at once.
func (s *FileStore) readDir() (ids []ID, temps []string, err error) {
	d, err := s.root.Open(".")
	if err != nil {
		return nil, nil, fmt.Errorf("taskgraph: %w", err)
	}
	defer d.Close()
	for {
		names, err := d.Readdirnames(4096)
		for _, name := range names {
			if id, ok := parseTaskFileName(name); ok {
				ids = append(ids, id)
			} else if isTempName(name) {
				temps = append(temps, name)
			}
		}
		if errors.Is(err, io.EOF) {
			return ids, temps, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("taskgraph: read %s: %w", s.dir, err)
		}
	}
}

// isTempName reports whether name is a temporary file of a replacement of
// a task file, the meta file, the journal or the change log (see
// atomicfile.TempName), and nothing else.
func isTempName(name string) bool {
	for _, n := range []string{metaFileName, journalFileName, logFileName, idsFileName} {
		if atomicfile.IsTempOf(name, n) {
			return true
		}
	}
	_, ok := filenames.TempTarget(name)
	return ok
}

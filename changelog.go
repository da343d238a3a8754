// The change log (.taskgraph.log): how every store learns what the others
// wrote without reading their files, and what a writer that died left
// unfinished.

package taskgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/taskgraph-dev/taskgraph/internal/changelog"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
	"github.com/taskgraph-dev/taskgraph/internal/journal"
)

// Files that earlier versions kept beside the change log, for group
// commit, which this one neither writes nor reads: Check reports them, and
// the git-ignore patterns keep them out of commits.
const (
	syncFileName      = filenames.Sync              // how far the log was synced
	setAsideLogPrefix = filenames.SetAsideLogPrefix // a log of another directory, set aside after a restart
	lostDirName       = filenames.LostDir           // files a power loss left empty, moved aside by the replay
)

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
	err := s.log.Append(intent)
	if err == nil {
		return nil
	}
	if rerr := s.log.Restart(); rerr != nil {
		return fmt.Errorf("taskgraph: the change log takes no announcement of this write (%w), and cannot be cut short (%w): nothing was written; see that the disk has space and %s is writable", err, rerr, s.log.Path())
	}
	if err := s.log.Append(intent); err != nil {
		return fmt.Errorf("taskgraph: the change log takes no announcement of this write (%w): nothing was written; see that the disk has space and %s is writable", err, s.log.Path())
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
	if err == nil && s.log.Append(rec) == nil {
		return
	}
	if s.log.Replace() != nil {
		s.log.Remove()
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
	whole, err := s.log.ReadNew(size)
	if err != nil {
		return false, logFailed(err)
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

// logFailed is err, an error of the change log, as the store reports it:
// a log it must not write is a *CorruptError, which says what to do.
func logFailed(err error) error {
	var u *changelog.UnusableError
	if errors.As(err, &u) {
		return &CorruptError{Path: u.Path, Err: u.Err}
	}
	return err
}

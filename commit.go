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

	"github.com/taskgraph/taskgraph/internal/atomicfile"
	"github.com/taskgraph/taskgraph/internal/changelog"
	"github.com/taskgraph/taskgraph/internal/journal"
)

// fileSystem is every step a FileStore takes on its directory that can
// fail: the steps of replacing a file (atomicfile.FS), appending to the
// change log, and opening a file to read it. Tests replace it to fail any
// one step as a full, failing or exhausted system would (faults_test.go);
// dirFS is the real one.
type fileSystem interface {
	atomicfile.FS
	// Append appends data to the change log f.
	Append(f *os.File, data []byte) error
	// OpenRead opens name for reading without following a symlink and
	// without blocking (a FIFO in place of a file must not hang a reader).
	OpenRead(name string) (*os.File, error)
}

// dirFS is the fileSystem of a real directory.
type dirFS struct {
	atomicfile.FS
	dir string
}

func newDirFS(root *os.Root, dir string) dirFS { return dirFS{atomicfile.Root(root), dir} }

func (dirFS) Append(f *os.File, data []byte) error { _, err := f.Write(data); return err }
func (d dirFS) OpenRead(name string) (*os.File, error) {
	return atomicfile.OpenNoFollow(filepath.Join(d.dir, name))
}

// readFile reads name with one open, fstat and read. A file that is not a
// regular file or is over limit is a *CorruptError; fi is nil if it does
// not exist. Any other failure (permissions, descriptors, I/O) is returned
// as it is: it says nothing about the file, and the next read tries again.
func readFile(fsys fileSystem, root *os.Root, dir, name string, limit int64) (os.FileInfo, []byte, error) {
	path := filepath.Join(dir, name)
	f, err := fsys.OpenRead(name)
	if err != nil {
		fi, lerr := root.Lstat(name)
		switch {
		case errors.Is(lerr, fs.ErrNotExist):
			return nil, nil, nil
		case lerr != nil:
			return nil, nil, fmt.Errorf("taskgraph: %w", lerr)
		case !fi.Mode().IsRegular():
			return fi, nil, &CorruptError{Path: path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
		}
		return nil, nil, fmt.Errorf("taskgraph: read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("taskgraph: read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fi, nil, &CorruptError{Path: path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	if fi.Size() > limit {
		return fi, nil, &CorruptError{Path: path, Err: fmt.Errorf("file is %d bytes, over the %d-byte limit", fi.Size(), limit)}
	}
	data := make([]byte, fi.Size()+1) // +1 sees a file that grew since the stat
	n, err := io.ReadFull(f, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil, fmt.Errorf("taskgraph: read %s: %w", path, err)
	}
	return fi, data[:n], nil
}

type meta struct {
	HighWater ID `json:"highWater"`
}

// readMeta reads the id high-water mark. A meta file that cannot be used
// does not stop reads; s.metaErr makes every write refuse until it is fixed,
// since without it a deleted id could be allocated again.
func (s *FileStore) readMeta() error {
	fi, data, err := readFile(s.fs, s.root, s.dir, metaFileName, maxFileSize)
	if fi == nil && err == nil {
		s.metaErr = nil
		return nil
	}
	var ce *CorruptError
	if err == nil {
		var m meta
		if err = json.Unmarshal(data, &m); err == nil && m.HighWater < 0 {
			err = fmt.Errorf("highWater is %d, not a task id", m.HighWater)
		}
		if err != nil {
			err = &CorruptError{Path: filepath.Join(s.dir, metaFileName), Err: err}
		} else {
			s.hwm = m.HighWater
			s.g.maxID = max(s.g.maxID, m.HighWater)
		}
	}
	if errors.As(err, &ce) {
		s.metaErr = fmt.Errorf("%w: it records the highest task id ever used, so taskgraph refuses to write until it holds {\"highWater\": N} with N at least the highest id ever allocated", ce)
		return nil
	}
	s.metaErr = nil
	return err
}

// raiseHighWater durably records that ids up to id have been used, before
// the file of id is deleted, so that id is never allocated again. The meta
// file is read first: another process may have raised it further.
func (s *FileStore) raiseHighWater(id ID) error {
	if err := s.readMeta(); err != nil {
		return err
	}
	if s.metaErr != nil {
		return s.metaErr
	}
	if id <= s.hwm {
		return nil
	}
	data, _ := json.Marshal(meta{HighWater: id})
	if err := s.writeFile(metaFileName, append(data, '\n')); err != nil {
		return err
	}
	s.hwm = id
	return nil
}

// writeFile replaces name atomically; an error means it was not replaced.
func (s *FileStore) writeFile(name string, data []byte) error {
	if err := atomicfile.Replace(s.fs, name, data, s.cfg.filePerm, !s.cfg.noSync); err != nil {
		return fmt.Errorf("taskgraph: write %s: %w", filepath.Join(s.dir, name), err)
	}
	return nil
}

func (s *FileStore) syncDir() error {
	if s.cfg.noSync {
		return nil
	}
	if err := s.fs.Sync(s.dirf); err != nil {
		return fmt.Errorf("taskgraph: fsync %s: %w", s.dir, err)
	}
	return nil
}

// commit persists a plan: one file directly, several through the journal.
//
// The commit point is the rename (or removal) of the one file, or the
// rename of the journal: before it, an error means nothing changed; from
// it on, other processes see the write (they replay a journal), so commit
// finishes the remaining steps, retrying them once, and returns nil if it
// got through or an error matching ErrUnknownOutcome if not. Recording the
// write in the change log comes after and never fails the write.
func (s *FileStore) commit(p *plan) error {
	if len(p.put)+len(p.del) == 0 {
		return nil
	}
	if err := s.prepareLog(); err != nil {
		return err
	}
	j := &journal.Journal{Put: make(map[int64]string, len(p.put))}
	for _, t := range p.put {
		data, err := encodeTask(t)
		if err != nil {
			return &InvalidError{Field: "metadata", Reason: err.Error()}
		}
		j.Put[int64(t.ID)] = string(data)
	}
	for _, id := range p.del {
		j.Del = append(j.Del, int64(id))
		j.HighWater = max(j.HighWater, int64(id))
	}
	var finish func() error
	if len(p.put)+len(p.del) == 1 {
		if err := s.raiseHighWater(ID(j.HighWater)); err != nil {
			return err
		}
		if err := s.applyFiles(j); err != nil {
			return err
		}
		finish = s.syncDir
	} else {
		data, err := journal.Encode(j)
		if err != nil {
			return fmt.Errorf("taskgraph: encode journal: %w", err)
		}
		if err := s.writeFile(journalFileName, data); err != nil {
			return err
		}
		finish = func() error { return s.finishJournal(j) }
	}
	if err := s.finish(j, finish); err != nil {
		return err
	}
	s.recordLog(j)
	return nil
}

// finish runs the steps of a write after its commit point, retrying them
// once. If they fail twice the write is visible but perhaps not durable (or
// its journal not yet replayed): the outcome is unknown. The cache is then
// dropped, so that it is rebuilt from what the directory holds.
func (s *FileStore) finish(j *journal.Journal, steps func() error) error {
	err := steps()
	if err == nil {
		return nil
	}
	if err = steps(); err == nil {
		return nil
	}
	s.scanned = false
	return &unknownOutcomeError{err: err}
}

// applyFiles writes and removes the task files of j, in id order. With one
// file, an error means it was not changed.
func (s *FileStore) applyFiles(j *journal.Journal) error {
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		if err := s.writeFile(taskFileName(ID(id)), []byte(j.Put[id])); err != nil {
			return err
		}
	}
	for _, id := range j.Del {
		if err := s.fs.Remove(taskFileName(ID(id))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("taskgraph: delete task %d: %w", id, err)
		}
	}
	return nil
}

// finishJournal makes a journal that is in the directory durable, applies
// it, and removes it. If the process dies before the removal is durable,
// the next writer replays j, which rewrites the same contents: replay is
// idempotent, and so is finishJournal.
func (s *FileStore) finishJournal(j *journal.Journal) error {
	if err := s.syncDir(); err != nil {
		return err
	}
	if err := s.raiseHighWater(ID(j.HighWater)); err != nil {
		return err
	}
	if err := s.applyFiles(j); err != nil {
		return err
	}
	if err := s.fs.Remove(journalFileName); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("taskgraph: remove journal: %w", err)
	}
	return s.syncDir()
}

// readJournal reads and validates the journal, or returns nil if there is
// none. A journal is validated entirely before any of it is replayed:
// every entry must be a task file for its id. One that is not is a
// *CorruptError and is never replayed.
func (s *FileStore) readJournal() (*journal.Journal, error) {
	return loadJournal(s.fs, s.root, s.dir)
}

func loadJournal(fsys fileSystem, root *os.Root, dir string) (*journal.Journal, error) {
	path := filepath.Join(dir, journalFileName)
	fi, data, err := readFile(fsys, root, dir, journalFileName, maxJournalSize)
	if fi == nil || err != nil {
		return nil, err
	}
	j, err := journal.Decode(data)
	if err == nil {
		err = validateJournal(j)
	}
	if err != nil {
		return nil, &CorruptError{Path: path, Err: fmt.Errorf("an interrupted multi-file write that cannot be replayed: %w; taskgraph refuses to write until it is removed (check the tasks it names first)", err)}
	}
	return j, nil
}

// maxJournalSize bounds the journal: every task of one write, each within
// the task file limit, is far below it in practice.
const maxJournalSize = 256 << 20

func validateJournal(j *journal.Journal) error {
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		if _, err := decodeTask(ID(id), []byte(j.Put[id])); err != nil {
			return fmt.Errorf("entry for task %d: %w", id, err)
		}
	}
	if j.HighWater < 0 {
		return fmt.Errorf("highWater is %d", j.HighWater)
	}
	return nil
}

// replayJournal finishes the multi-file write of a writer that died.
func (s *FileStore) replayJournal(j *journal.Journal) error {
	if err := s.prepareLog(); err != nil {
		return err
	}
	if err := s.finish(j, func() error { return s.finishJournal(j) }); err != nil {
		return err
	}
	s.recordLog(j)
	// The cache predates the replay.
	for id := range j.Put {
		if err := s.reload(ID(id)); err != nil {
			return err
		}
	}
	for _, id := range j.Del {
		if err := s.reload(ID(id)); err != nil {
			return err
		}
	}
	return nil
}

// prepareLog opens the change log, compacting it first if it has grown
// large. It runs before a commit's files are written so that creating or
// replacing the log is part of the directory change the commit records.
func (s *FileStore) prepareLog() error {
	if err := s.openLog(); err != nil {
		return err
	}
	if s.logOff < maxLogSize {
		return nil
	}
	// Replace the log with an empty one. Other stores see its new inode
	// and rescan; this store is current, so it only starts over at 0.
	if err := s.replaceLog(); err != nil {
		return err
	}
	s.logOff = 0
	return nil
}

// replaceLog replaces the change log with an empty file and opens it.
func (s *FileStore) replaceLog() error {
	if err := atomicfile.Replace(s.fs, logFileName, nil, 0o644, false); err != nil {
		return fmt.Errorf("taskgraph: replace change log: %w", err)
	}
	return s.openLog()
}

// recordLog appends the record of a committed write to the change log. The
// log is a hint; if the append fails, the write still stands, and the log
// is replaced (or, failing that, removed) so that every other store sees a
// new log and rescans the directory rather than trust a log that lacks it.
func (s *FileStore) recordLog(j *journal.Journal) {
	if s.appendLog(j) == nil {
		return
	}
	s.logOff = 0
	if s.replaceLog() == nil {
		return
	}
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
	_ = s.fs.Remove(logFileName)
	s.logIno = 0
}

// appendLog records which tasks j changed and the directory mtime after it.
// The log is a cache hint, not a source of truth, so it is not fsynced.
func (s *FileStore) appendLog(j *journal.Journal) error {
	var rec []byte
	lfi, err := s.log.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: change log: %w", err)
	}
	if lfi.Size() > s.logOff {
		// A writer died in mid-append: end its line so ours stays whole.
		rec = append(rec, '\n')
	}
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
	rec = changelog.AppendMtime(rec, s.dirMtime)
	if err := s.fs.Append(s.log, rec); err != nil {
		return fmt.Errorf("taskgraph: append change log: %w", err)
	}
	s.logOff = lfi.Size() + int64(len(rec))
	return nil
}

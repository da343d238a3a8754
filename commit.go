// How a FileStore writes a plan: the file-system steps a write may take
// (fileSystem, which tests fail one by one) and the commit of one or
// several files.

package taskgraph

import (
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
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/cachedir"
	"github.com/taskgraph-dev/taskgraph/internal/changelog"
	"github.com/taskgraph-dev/taskgraph/internal/journal"
)

// fileSystem is every step a FileStore takes on its directory that can
// fail: the steps of replacing a file (atomicfile.FS), appending to the
// change log, and opening a file to read it. Tests replace it to fail any
// one step as a full, failing or exhausted system would (faults_test.go);
// dirFS is the real one. It is the change log's seam too, defined there
// (changelog.FS), since the log is written through it.
type fileSystem = changelog.FS

// dirFS is the fileSystem of a real directory: every step goes through
// the directory's handle, never through its path.
type dirFS struct {
	atomicfile.FS // temporary files (O_EXCL), renames and removals, in root
	root          *os.Root
	dirf          *os.File
	// cache is the store's cache directory as writes decided ahead use
	// it, for the renames of their files into place (nil: renames go
	// through root). Such renames are made under the lock, and it is
	// written with the store's semaphore held, which the lock holder has.
	cache *cachedir.Dir
}

func newDirFS(root *os.Root, dirf *os.File) dirFS {
	return dirFS{FS: atomicfile.Root(root), root: root, dirf: dirf}
}

// Rename renames oldname to newname. A file of the cache directory moved
// into the task directory (a file decided ahead, a spare: the renames under
// the lock) goes through both directories' handles, one system call;
// anything else through root.
func (d dirFS) Rename(oldname, newname string) error {
	if base, ok := strings.CutPrefix(oldname, cachedir.Name+"/"); ok && d.cache != nil &&
		!strings.ContainsRune(base, '/') && !strings.ContainsRune(newname, '/') && d.cache.File() != nil {
		return atomicfile.RenameIn(d.cache.File(), base, d.dirf, newname)
	}
	return d.FS.Rename(oldname, newname)
}

// OpenFile opens name without following a symlink or blocking on a FIFO.
func (d dirFS) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	return atomicfile.OpenIn(d.dirf, d.root, name, flag, perm)
}

func (dirFS) Append(f *os.File, data []byte) error { _, err := f.Write(data); return err }
func (d dirFS) OpenRead(name string) (*os.File, error) {
	return atomicfile.OpenIn(d.dirf, d.root, name, os.O_RDONLY, 0)
}

// readFile reads name with one open, fstat and read. A file that is not a
// regular file or is over limit is a *CorruptError; fi is nil if it does
// not exist. Any other failure (permissions, descriptors, I/O) is returned
// as it is: it says nothing about the file, and the next read tries again.
func readFile(fsys fileSystem, root *os.Root, dir, name string, limit int64) (os.FileInfo, []byte, error) {
	path := filepath.Join(dir, name)
	f, err := fsys.OpenRead(name)
	if errors.Is(err, fs.ErrNotExist) {
		// The open does not follow symlinks, so ENOENT means no entry
		// at all: no need to look again.
		return nil, nil, nil
	}
	if err != nil {
		fi, lerr := root.Lstat(name)
		switch {
		case errors.Is(lerr, fs.ErrNotExist):
			return nil, nil, nil
		case lerr != nil:
			return nil, nil, fmt.Errorf("taskgraph: %w", lerr)
		case !fi.Mode().IsRegular():
			return fi, nil, &CorruptError{Path: path, Err: atomicfile.NotRegular(fi.Mode())}
		}
		return nil, nil, fmt.Errorf("taskgraph: read %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("taskgraph: read %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fi, nil, &CorruptError{Path: path, Err: atomicfile.NotRegular(fi.Mode())}
	}
	if fi.Size() > limit {
		return fi, nil, &CorruptError{Path: path, Err: fmt.Errorf("file is %d bytes, over the %d-byte limit", fi.Size(), limit)}
	}
	data := make([]byte, fi.Size()+1) // +1 sees a file that grew since the stat
	n, err := io.ReadFull(f, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("taskgraph: read %s: %w", path, err)
	}
	return fi, data[:n], nil
}

// meta is the meta file: the id high-water mark, and the graph's
// concurrency limits (Limiter), which git commits with the graph.
type meta struct {
	HighWater ID             `json:"highWater"`
	Limits    map[string]int `json:"limits,omitempty"`
	// Liveness holds the labels' default liveness (LivenessDefaulter).
	Liveness map[string]metaLiveness `json:"liveness,omitempty"`
	// Approval is the ApprovalPolicy (ApprovalPolicer).
	Approval *ApprovalPolicy `json:"approval,omitempty"`
}

// metaLiveness is a label's LivenessDefault in the meta file: durations
// as Go writes them ("30m"), as a task file holds its own.
type metaLiveness struct {
	MaxRuntime     string `json:"maxRuntime,omitempty"`
	ProgressWindow string `json:"progressWindow,omitempty"`
}

// livenessOf returns the defaults of the meta file, validated.
func livenessOf(m map[string]metaLiveness) (map[string]LivenessDefault, error) {
	var out map[string]LivenessDefault
	for l, ml := range m {
		var d LivenessDefault
		for _, f := range []struct {
			s string
			p *time.Duration
		}{{ml.MaxRuntime, &d.MaxRuntime}, {ml.ProgressWindow, &d.ProgressWindow}} {
			if f.s == "" {
				continue
			}
			v, err := time.ParseDuration(f.s)
			if err != nil {
				return nil, fmt.Errorf("liveness: %q: %q is not a duration such as \"30m\"", l, f.s)
			}
			*f.p = v
		}
		if err := Rules.LivenessDefaultArgs(l, d); err != nil || d == (LivenessDefault{}) {
			return nil, fmt.Errorf("liveness: %q: not a label with a max runtime or a progress window from 0 to %v", l, MaxLiveness)
		}
		if out == nil {
			out = map[string]LivenessDefault{}
		}
		out[l] = d
	}
	return out, nil
}

// metaLivenessOf is m as the meta file holds it; nil if empty.
func metaLivenessOf(m map[string]LivenessDefault) map[string]metaLiveness {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]metaLiveness, len(m))
	for l, d := range m {
		var ml metaLiveness
		if d.MaxRuntime != 0 {
			ml.MaxRuntime = d.MaxRuntime.String()
		}
		if d.ProgressWindow != 0 {
			ml.ProgressWindow = d.ProgressWindow.String()
		}
		out[l] = ml
	}
	return out
}

// parseMetaFile decodes and validates the content of the meta file.
func parseMetaFile(data []byte) (meta, error) {
	var m meta
	if err := json.Unmarshal(data, &m); err != nil {
		return meta{}, err
	}
	if m.HighWater < 0 {
		return meta{}, fmt.Errorf("highWater is %d, not a task id", m.HighWater)
	}
	for l, n := range m.Limits {
		if err := Rules.LimitArgs(l, n); err != nil || n == 0 {
			return meta{}, fmt.Errorf("limits: %q: %d is not a label with a limit from 1 to %d", l, n, MaxLimit)
		}
	}
	if len(m.Limits) == 0 {
		m.Limits = nil
	}
	if _, err := livenessOf(m.Liveness); err != nil {
		return meta{}, err
	}
	if m.Approval != nil {
		p, err := Rules.ApprovalPolicyArgs(*m.Approval)
		if err != nil {
			return meta{}, fmt.Errorf("approval: %w", err)
		}
		m.Approval = &p
	}
	return m, nil
}

// parseMeta decodes the id high-water mark of the meta file.
func parseMeta(data []byte) (ID, error) {
	m, err := parseMetaFile(data)
	return m.HighWater, err
}

// metaProblem says what to do about a meta file that cannot be used.
const metaProblem = `it records the highest task id ever allocated and the label limits, so every write is refused (reads go on) until it is a regular file holding {"highWater": N}, N at least the highest id ever allocated (and the limits, if any, as "limits": {"label": n})`

// readMeta reads the id high-water mark. A meta file that cannot be used
// does not stop reads; s.metaErr makes every write refuse until it is fixed,
// since without it a deleted id could be allocated again.
func (s *FileStore) readMeta() error {
	fi, data, err := readFile(s.fs, s.root, s.dir, metaFileName, maxFileSize)
	if fi == nil && err == nil {
		s.metaErr, s.g.limits, s.g.liveness, s.g.approval = nil, nil, nil, ApprovalPolicy{}
		return nil
	}
	if err == nil {
		var m meta
		if m, err = parseMetaFile(data); err != nil {
			err = &CorruptError{Path: filepath.Join(s.dir, metaFileName), Err: err}
		} else {
			s.hwm, s.g.limits = m.HighWater, m.Limits
			s.g.liveness, _ = livenessOf(m.Liveness) // valid: parseMetaFile
			s.g.approval = ApprovalPolicy{}
			if m.Approval != nil {
				s.g.approval = *m.Approval // normal: parseMetaFile
			}
			s.g.maxID = max(s.g.maxID, m.HighWater)
		}
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		s.metaErr = fmt.Errorf("%w: %s", ce, metaProblem)
		return nil
	}
	s.metaErr = nil
	return err
}

// refreshMeta rereads the meta file if its stamp (file id, size, mtime)
// is not the one last read: one stat for a read that finds it unchanged.
// A rewrite of the same size within one tick of the filesystem's clock
// keeps its stamp only if the file id is reused, which a replace does not
// do while the old file is open elsewhere.
func (s *FileStore) refreshMeta() error {
	ino, size, mtime, err := atomicfile.StatIn(s.dirf, s.root, metaFileName)
	st := stamp{Ino: ino, Size: size, Mtime: mtime}
	if err == nil && s.metaStamp == st {
		return nil
	}
	if err := s.readMeta(); err != nil {
		return err
	}
	s.metaStamp = stamp{}
	if err == nil {
		s.metaStamp = st
	}
	return nil
}

// raiseHighWater durably records that ids up to id have been used, before
// the file of id is deleted, so that id is never allocated again. The meta
// file is read first: another process may have raised it further.
func (s *FileStore) raiseHighWater(id ID) error {
	if id <= s.hwm {
		// Already recorded: hwm only grows, so the file holds at
		// least this much (a write reads it under the lock first).
		return nil
	}
	if n := len(s.g.ids); n > 0 && s.g.ids[n-1] > id {
		// A task with a higher id is still there: no id up to it can
		// be allocated, and its own deletion will raise the mark. So a
		// delete frees space on a full disk without writing a file.
		return nil
	}
	if err := s.readMeta(); err != nil {
		return err
	}
	if s.metaErr != nil {
		return s.metaErr
	}
	if id <= s.hwm {
		return nil
	}
	return s.writeMeta(id)
}

// writeMeta durably writes the meta file with high-water mark id and the
// graph's limits.
func (s *FileStore) writeMeta(id ID) error {
	data, _ := json.Marshal(meta{HighWater: id, Limits: s.g.limits, Liveness: metaLivenessOf(s.g.liveness), Approval: metaApprovalOf(s.g.approval)})
	if err := s.writeFile(metaFileName, append(data, '\n')); err != nil {
		return err
	}
	s.hwm = id
	return nil
}

// writeFile replaces name atomically and durably (but for the directory
// entry: see syncDir); an error means it was not replaced.
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
// Every write has one commit point (see "The commit point" in store.go):
// before it, an error means nothing changed; the step itself, if it
// fails, leaves the outcome unknowable (ErrUnknownOutcome, through
// commitPoint); after it the write has happened, and what is left —
// applying a journal's files, removing the journal, the change-log record
// — is never reported as a failure: the next operation finishes it
// (prepare), or the other stores rescan (recordLog). The commit point is
// the directory's fsync, under the lock: for a single-file write the one
// that makes its rename durable (its file was fsynced before the rename),
// for a write of several files the one that makes its journal durable. So
// a write is durable before any other operation can see it.
//
// If a holds the file of p's one task, written ahead, it is renamed into
// place. The announcement before the commit point (see announce) is what
// makes every other store see the write even if its record is lost.
func (s *FileStore) commit(p *plan, a *ahead) (err error) {
	defer func() {
		if err != nil {
			s.spares.DropLinked()
		}
	}()
	if len(p.put)+len(p.del) == 0 {
		return nil
	}
	if err := logFailed(s.log.Prepare()); err != nil {
		return err
	}
	s.cacheDir.MakeIfWanted(s.root)
	j := &journal.Journal{Put: make(map[int64]string, len(p.put))}
	for i, t := range p.put {
		if a != nil && t.ID == a.id {
			j.Put[int64(t.ID)] = string(a.data) // what p encodes to (writeLocked compared)
			continue
		}
		data, err := p.file(i)
		if err != nil {
			return err
		}
		j.Put[int64(t.ID)] = string(data)
	}
	for _, id := range p.del {
		j.Del = append(j.Del, int64(id))
		j.HighWater = max(j.HighWater, int64(id))
	}
	if err := s.announce(journalIDs(j)); err != nil {
		return err
	}
	if len(p.put)+len(p.del) == 1 {
		if err := s.raiseHighWater(ID(j.HighWater)); err != nil {
			return err
		}
		if !s.linkReplaced(j) {
			if old := s.holdReplaced(j); old != nil {
				s.replaced = append(s.replaced, old) // closed after the lock
			}
		}
		if err := s.renameAhead(a); err != nil && s.spares.RenameInto(j) != nil {
			// Nothing was renamed: write the file here.
			if err := s.applyFiles(j); err != nil {
				return err
			}
		}
		if err := s.commitPoint(s.syncDir); err != nil {
			return err
		}
		s.removeTemps()
		s.recordLog(j)
		return nil
	}
	data, err := journal.Encode(j)
	if err != nil {
		return fmt.Errorf("taskgraph: encode journal: %w", err)
	}
	if err := s.writeFile(journalFileName, data); err != nil {
		return err
	}
	if err := s.commitPoint(s.syncDir); err != nil {
		return err
	}
	// The write has happened: its journal is durable, and the next
	// operation replays it.
	if s.applyJournal(j) != nil {
		// Every store reads through the journal until one applies it
		// (prepare); the announcement makes the others reload.
		s.scanned = false
		return nil
	}
	s.removeTemps()
	s.recordLog(j)
	return nil
}

// commitPoint runs the step of a write whose failure leaves its outcome
// unknowable — the write is visible, but perhaps not durable. It is not
// retried: after a failed fsync the kernel may have marked the pages it
// could not write clean, and reports the error once, so a second fsync
// could succeed without them. The outcome is unknown, and the cache is
// dropped, so that it is rebuilt from what the directory holds.
func (s *FileStore) commitPoint(step func() error) error {
	err := step()
	if err == nil {
		return nil
	}
	s.scanned = false
	return &unknownOutcomeError{err: err}
}

// applyFiles writes and removes the task files of j, in id order, each
// fsynced before its rename. With one file, an error means it was not
// changed.
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

// applyJournal applies a journal that is durable in the directory and
// removes it. If the process dies before the removal is durable, the next
// writer replays j, which rewrites the same contents: replay is
// idempotent, and so is applyJournal.
func (s *FileStore) applyJournal(j *journal.Journal) error {
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
// none. See loadJournal.
func (s *FileStore) readJournal() (*journal.Journal, error) {
	return loadJournal(s.fs, s.root, s.dir)
}

// journalProblem says what a journal that cannot be replayed means and what
// to do about it.
const journalProblem = "it is never replayed, and every write is refused (reads go on) until it is removed: check the tasks it names, then remove it"

// loadJournal reads and validates the journal of dir, or returns nil if
// there is none. A journal is validated entirely before any of it is
// replayed (see validateJournal); one that fails, or that is not a regular
// file, is a *CorruptError and is never replayed. Any other error is a
// failure to read, which says nothing about the journal.
func loadJournal(fsys fileSystem, root *os.Root, dir string) (*journal.Journal, error) {
	path := filepath.Join(dir, journalFileName)
	corrupt := func(why error) error {
		return &CorruptError{Path: path, Err: fmt.Errorf("an interrupted multi-file write that cannot be replayed: %w; %s", why, journalProblem)}
	}
	fi, data, err := readFile(fsys, root, dir, journalFileName, maxJournalSize)
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		return nil, corrupt(ce.Err)
	case fi == nil || err != nil:
		return nil, err
	}
	j, err := journal.Decode(data)
	if err != nil {
		return nil, corrupt(err)
	}
	bad, err := validateJournal(fsys, root, dir, j)
	switch {
	case err != nil:
		return nil, err
	case bad != nil:
		return nil, corrupt(bad)
	}
	return j, nil
}

// maxJournalSize bounds the journal: every task of one write, each within
// the task file limit, is far below it in practice.
const maxJournalSize = 256 << 20

// validateJournal checks that replaying j can only finish a write that a
// taskgraph writer began on the directory as it is: every entry decodes as
// the task file of its id, ids are within MaxID, and every file an entry
// replaces is either already what the entry holds or a healthy task file
// one rev before it (and a file it deletes is a healthy task file). bad
// says why a journal fails: it is garbage, belongs to another directory,
// or was overtaken by later edits, and replaying it could overwrite a
// healthy task with unrelated content. err is a failure to read a task
// file.
func validateJournal(fsys fileSystem, root *os.Root, dir string, j *journal.Journal) (bad, err error) {
	// current returns the task in the file of id, nil if there is none,
	// or why it cannot be replaced.
	current := func(id int64) (cur *Task, data []byte, bad, err error) {
		name := taskFileName(ID(id))
		fi, data, err := readFile(fsys, root, dir, name, maxFileSize)
		var ce *CorruptError
		switch {
		case errors.As(err, &ce):
			return nil, nil, fmt.Errorf("%s is corrupt (%v)", name, ce.Err), nil
		case err != nil || fi == nil:
			return nil, nil, nil, err
		}
		if cur, err = decodeTask(ID(id), data); err != nil {
			return nil, nil, fmt.Errorf("%s is corrupt (%v)", name, err), nil
		}
		return cur, data, nil, nil
	}
	if j.HighWater < 0 || ID(j.HighWater) > MaxID {
		return fmt.Errorf("highWater is %d, not between 0 and %d (MaxID)", j.HighWater, MaxID), nil
	}
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		if ID(id) > MaxID {
			return fmt.Errorf("entry for task %d: the id is above %d (MaxID)", id, MaxID), nil
		}
		entry, derr := decodeTask(ID(id), []byte(j.Put[id]))
		if derr != nil {
			return fmt.Errorf("entry for task %d: %v", id, derr), nil
		}
		cur, data, why, err := current(id)
		switch {
		case err != nil:
			return nil, err
		case why != nil:
			return fmt.Errorf("entry for task %d would replace a file that taskgraph never rewrites: %v", id, why), nil
		case cur == nil || string(data) == j.Put[id]:
			continue // not written yet (a new task), or already replayed
		case entry.Rev != cur.Rev+1:
			return fmt.Errorf("entry for task %d is rev %d, but %s is at rev %d: the journal does not continue that file, and replaying it would overwrite what is there", id, entry.Rev, taskFileName(ID(id)), cur.Rev), nil
		}
	}
	for _, id := range j.Del {
		if ID(id) > MaxID {
			return fmt.Errorf("deletion of task %d: the id is above %d (MaxID)", id, MaxID), nil
		}
		if _, ok := j.Put[id]; ok {
			return fmt.Errorf("task %d is both written and deleted", id), nil
		}
		if _, _, why, err := current(id); err != nil || why != nil {
			if err != nil {
				return nil, err
			}
			return fmt.Errorf("deletion of task %d would remove a file that taskgraph never deletes: %v", id, why), nil
		}
	}
	return nil, nil
}

// replayJournal finishes the multi-file write of a writer that died. It is
// a write like any other: announced, then recorded in the change log.
func (s *FileStore) replayJournal(j *journal.Journal) error {
	if err := logFailed(s.log.Prepare()); err != nil {
		return err
	}
	if err := s.announce(journalIDs(j)); err != nil {
		return err
	}
	// The journal is another writer's, perhaps not yet durable: its
	// directory's fsync comes first, as in commit.
	if err := s.syncDir(); err != nil {
		return err
	}
	if err := s.applyJournal(j); err != nil {
		return err
	}
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
	s.recordLog(j)
	return nil
}

// removeTemps removes the temporary files that the last scan found. Each
// was left by a writer that died or failed: every writer makes and removes
// its own under the exclusive lock, which this store holds now, so none of
// them belongs to a live writer. It runs after a commit, so that the
// commit's record accounts for the change to the directory. A failure is
// ignored: the next scan finds the file again.
func (s *FileStore) removeTemps() {
	for _, name := range s.temps {
		_ = s.fs.Remove(name)
	}
	s.temps = nil
}

package taskgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"

	"github.com/taskgraph/taskgraph/internal/atomicfile"
	"github.com/taskgraph/taskgraph/internal/changelog"
	"github.com/taskgraph/taskgraph/internal/journal"
)

type meta struct {
	HighWater ID `json:"highWater"`
}

func (s *FileStore) readMeta() error {
	data, err := s.root.ReadFile(metaFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var m meta
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		return &CorruptError{Path: filepath.Join(s.dir, metaFileName), Err: err}
	}
	s.hwm = m.HighWater
	s.g.maxID = max(s.g.maxID, m.HighWater)
	return nil
}

// raiseHighWater durably records that ids up to id have been used, before
// the file of id is deleted, so that id is never allocated again.
func (s *FileStore) raiseHighWater(id ID) error {
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

func (s *FileStore) writeFile(name string, data []byte) error {
	perm := s.cfg.filePerm
	var err error
	if s.fault != nil {
		err = s.fault(name)
	}
	if err != nil {
	} else if s.cfg.noSync {
		err = atomicfile.WriteNoSync(s.root, name, data, perm)
	} else {
		err = atomicfile.WriteDurable(s.root, name, data, perm)
	}
	if err != nil {
		return fmt.Errorf("taskgraph: write %s: %w", filepath.Join(s.dir, name), err)
	}
	return nil
}

func (s *FileStore) syncDir() error {
	if s.cfg.noSync {
		return nil
	}
	if err := atomicfile.SyncDir(s.dirf); err != nil {
		return fmt.Errorf("taskgraph: fsync %s: %w", s.dir, err)
	}
	return nil
}

// commit persists a plan: one file directly, several through the journal.
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
	var err error
	if len(p.put)+len(p.del) == 1 {
		err = s.apply(j)
	} else {
		err = s.writeJournal(j)
	}
	if err != nil {
		return err
	}
	return s.appendLog(j)
}

// apply performs the writes of j and fsyncs the directory once.
func (s *FileStore) apply(j *journal.Journal) error {
	if err := s.raiseHighWater(ID(j.HighWater)); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		if err := s.writeFile(taskFileName(ID(id)), []byte(j.Put[id])); err != nil {
			return err
		}
	}
	for _, id := range j.Del {
		if err := s.root.Remove(taskFileName(ID(id))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("taskgraph: delete task %d: %w", id, err)
		}
	}
	return s.syncDir()
}

// writeJournal stores j durably, applies it, and removes it. If the process
// dies before the removal is durable, the next writer replays j, which
// rewrites the same contents: replay is idempotent.
func (s *FileStore) writeJournal(j *journal.Journal) error {
	data, err := journal.Encode(j)
	if err != nil {
		return fmt.Errorf("taskgraph: encode journal: %w", err)
	}
	if err := s.writeFile(journalFileName, data); err != nil {
		return err
	}
	if err := s.syncDir(); err != nil {
		return err
	}
	if err := s.apply(j); err != nil {
		return err
	}
	if err := s.root.Remove(journalFileName); err != nil {
		return fmt.Errorf("taskgraph: remove journal: %w", err)
	}
	return s.syncDir()
}

// replayJournal finishes the multi-file write of a writer that died.
func (s *FileStore) replayJournal() error {
	data, err := s.root.ReadFile(journalFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var j *journal.Journal
	if err == nil {
		j, err = journal.Decode(data)
	}
	if err != nil {
		return &CorruptError{Path: filepath.Join(s.dir, journalFileName), Err: err}
	}
	if err := s.prepareLog(); err != nil {
		return err
	}
	if err := s.apply(j); err != nil {
		return err
	}
	if err := s.root.Remove(journalFileName); err != nil {
		return fmt.Errorf("taskgraph: remove journal: %w", err)
	}
	if err := s.syncDir(); err != nil {
		return err
	}
	if err := s.appendLog(j); err != nil {
		return err
	}
	// The cache predates the replay.
	for id := range j.Put {
		s.reload(ID(id))
	}
	for _, id := range j.Del {
		s.reload(ID(id))
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
	if err := atomicfile.WriteNoSync(s.root, logFileName, nil, 0o644); err != nil {
		return fmt.Errorf("taskgraph: compact change log: %w", err)
	}
	s.log.Close()
	s.log = nil
	if err := s.openLog(); err != nil {
		return err
	}
	s.logOff = 0
	return nil
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
	if _, err := s.log.Write(rec); err != nil {
		return fmt.Errorf("taskgraph: append change log: %w", err)
	}
	s.logOff = lfi.Size() + int64(len(rec))
	return nil
}

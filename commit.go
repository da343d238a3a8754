package taskgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
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
	perm := os.FileMode(s.cfg.filePerm)
	var err error
	if s.fault != nil {
		err = s.fault(name)
	}
	if err != nil {
	} else if s.cfg.noSync {
		err = writeAtomicNoSync(s.root, name, data, perm)
	} else {
		err = writeDurable(s.root, name, data, perm)
	}
	if err != nil {
		return fmt.Errorf("taskgraph: write %s: %w", filepath.Join(s.dir, name), err)
	}
	return nil
}

// writeAtomicNoSync replaces name atomically without fsync (WithoutSync).
func writeAtomicNoSync(root *os.Root, name string, data []byte, perm os.FileMode) error {
	tmp := "." + name + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

func (s *FileStore) syncDir() error {
	if s.cfg.noSync {
		return nil
	}
	if err := s.dirf.Sync(); err != nil {
		return fmt.Errorf("taskgraph: fsync %s: %w", s.dir, err)
	}
	return nil
}

// journal is a multi-file write, stored before any of its files is touched.
type journal struct {
	Put       map[ID]string `json:"put"`
	Del       []ID          `json:"del"`
	HighWater ID            `json:"highWater"`
}

// commit persists a plan: one file directly, several through the journal.
func (s *FileStore) commit(p *plan) error {
	if len(p.put)+len(p.del) == 0 {
		return nil
	}
	if err := s.prepareLog(); err != nil {
		return err
	}
	j := journal{Put: make(map[ID]string, len(p.put)), Del: p.del}
	for _, t := range p.put {
		data, err := encodeTask(t)
		if err != nil {
			return &InvalidError{Field: "metadata", Reason: err.Error()}
		}
		j.Put[t.ID] = string(data)
	}
	for _, id := range p.del {
		j.HighWater = max(j.HighWater, id)
	}
	var err error
	if len(p.put)+len(p.del) == 1 {
		err = s.apply(&j)
	} else {
		err = s.writeJournal(&j)
	}
	if err != nil {
		return err
	}
	return s.appendLog(&j)
}

// apply performs the writes of j and fsyncs the directory once.
func (s *FileStore) apply(j *journal) error {
	if err := s.raiseHighWater(j.HighWater); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		if err := s.writeFile(taskFileName(id), []byte(j.Put[id])); err != nil {
			return err
		}
	}
	for _, id := range j.Del {
		if err := s.root.Remove(taskFileName(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("taskgraph: delete task %d: %w", id, err)
		}
	}
	return s.syncDir()
}

// writeJournal stores j durably, applies it, and removes it. If the process
// dies before the removal is durable, the next writer replays j, which
// rewrites the same contents: replay is idempotent.
func (s *FileStore) writeJournal(j *journal) error {
	data, err := json.Marshal(j)
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
	var j journal
	if err == nil {
		err = json.Unmarshal(data, &j)
	}
	if err != nil {
		return &CorruptError{Path: filepath.Join(s.dir, journalFileName), Err: err}
	}
	if err := s.prepareLog(); err != nil {
		return err
	}
	if err := s.apply(&j); err != nil {
		return err
	}
	if err := s.root.Remove(journalFileName); err != nil {
		return fmt.Errorf("taskgraph: remove journal: %w", err)
	}
	if err := s.syncDir(); err != nil {
		return err
	}
	if err := s.appendLog(&j); err != nil {
		return err
	}
	// The cache predates the replay.
	for id := range j.Put {
		s.reload(id)
	}
	for _, id := range j.Del {
		s.reload(id)
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
	if err := writeAtomicNoSync(s.root, logFileName, nil, 0o644); err != nil {
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
func (s *FileStore) appendLog(j *journal) error {
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
		fi, err := s.root.Lstat(taskFileName(id))
		if err != nil {
			return fmt.Errorf("taskgraph: %w", err)
		}
		st := stampOf(fi)
		s.stamps[id] = st
		rec = fmt.Appendf(rec, "P %d %d %d %d ", id, st.ino, st.size, st.mtime)
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(j.Put[id])); err != nil {
			return fmt.Errorf("taskgraph: change log: %w", err)
		}
		rec = append(append(rec, compact.Bytes()...), '\n')
	}
	for _, id := range j.Del {
		delete(s.stamps, id)
		rec = fmt.Appendf(rec, "D %d\n", id)
	}
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	s.dirMtime = dfi.ModTime().UnixNano()
	rec = fmt.Appendf(rec, "M %d\n", s.dirMtime)
	if _, err := s.log.Write(rec); err != nil {
		return fmt.Errorf("taskgraph: append change log: %w", err)
	}
	s.logOff = lfi.Size() + int64(len(rec))
	return nil
}

// The full protocol's directory fsync, after the lock and shared by the
// writers queued behind it.

package taskgraph

import (
	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
)

// Under the full protocol a write of one task fsyncs its new file before
// the rename (ahead of the lock where it can: ahead.go), renames it and
// appends its record to the change log under the lock, and fsyncs the
// directory after letting the lock go. One fsync of a directory makes
// durable every rename in it made before the call, so the writers queued
// behind it need none of their own: as group commit shares the log's
// fdatasync (groupcommit.go), within a process by the leader and followers
// of logSync, across processes through the sync file, whose second record
// says "every write recorded in log ino before off is in a directory
// fsynced since". A writer appends its record after its rename, so a sync
// that starts once the log has reached off covers every write recorded
// before it.
//
// The visibility rule is group commit's: no operation returns — no read,
// no write, no event — before the directory is durable up to where it read
// or wrote the log (makeDurable). Readers usually find a sync in flight or
// done that covers them. A writer killed between its rename and the
// directory's fsync was never acknowledged; whoever reads its record
// fsyncs the directory before returning what it read. A write whose record
// could not be appended fsyncs the directory under the lock (recordLog).
//
// Only a store whose change log is a redo log (Linux: redoLog) knows how
// far the others have read, so elsewhere the directory is fsynced under
// the lock, as before.

// sharedDirSync makes every rename recorded in the log ino before off
// durable, unless a directory fsync by another process since covers it: it
// waits for the sync in flight (the sync file's flock), then fsyncs the
// directory only if the record falls short, and records how far the log
// had reached when its own fsync began. Without a usable sync file it
// syncs on its own.
func (s *FileStore) sharedDirSync(ino uint64, off int64) error {
	// How far the log the directory holds reaches before the fsync: every
	// write recorded in it before that renamed its file before. Only that
	// is recorded — never the caller's log and offset, whose inode nothing
	// here holds open: replaced, its number may come back as a new log's.
	seen := func() (uint64, int64, bool) {
		fi, err := s.root.Lstat(logFileName)
		if err != nil || !fi.Mode().IsRegular() {
			return 0, 0, false
		}
		return atomicfile.FileID(fi), fi.Size(), true
	}
	return syncRecorded(s.log.sync.syncFile(s), dirSyncRecordAt, ino, off, seen, s.fsyncDir)
}

// fsyncDir fsyncs the directory after the lock, and counts it.
func (s *FileStore) fsyncDir() error {
	s.stats.dirSyncs.Add(1)
	return s.syncDir()
}

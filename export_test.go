package taskgraph

import (
	"os"
	"sync"
)

// This file gives the external tests (package taskgraph_test) what they
// need of the store's insides; it is the only one that does.

// WatchPollOnly makes the store's Watch poll instead of using inotify, for
// tests of the fallback.
func WatchPollOnly() Option { return func(c *config) { c.watchPollOnly = true } }

// withLogLimit makes the store replace its change log at max bytes, so
// that a short test crosses many replacements.
func withLogLimit(max int64) Option { return func(c *config) { c.logLimit = max } }

// KillAtLogAppend makes the process kill itself with SIGKILL at the n-th
// append to the change log of s: every write appends twice, its
// announcement before the commit point and its record after it, so n = 2
// kills the first write after its files are renamed into place, before it
// is recorded.
func KillAtLogAppend(s *FileStore, n int) { KillAt(s, "append", n) }

// KillAt makes the process kill itself with SIGKILL at the n-th step of
// kind taken by s: "append" (to the change log), "logswap" (a new change
// log put in place of the old), "fsync" (of a file written ahead of the
// lock or under it, or of the directory at a write's commit point).
func KillAt(s *FileStore, kind string, n int) {
	s.useFS(&killFS{fileSystem: s.fs, kind: kind, at: n})
}

// useFS makes every step s takes on its directory, its change log's
// included, go through f (a fault-injecting file system).
func (s *FileStore) useFS(f fileSystem) {
	s.fs = f
	s.log.SetFS(f)
	s.spares.FS = f
}

// SetLogLimit makes the change log be replaced at max bytes, so that a
// short test crosses many replacements.
func SetLogLimit(s *FileStore, max int64) { s.log.SetMax(max) }

type killFS struct {
	fileSystem
	kind string
	mu   sync.Mutex
	n    int
	at   int
}

// step kills the process if this is the at-th step of the kind.
func (k *killFS) step(kind string) {
	if kind != k.kind {
		return
	}
	k.mu.Lock()
	k.n++
	hit := k.n == k.at
	k.mu.Unlock()
	if hit {
		// SIGKILL on Unix, TerminateProcess on Windows: no deferred
		// call or cleanup runs.
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill()
		}
		select {} // the kill is delivered; nothing after it runs
	}
}

func (k *killFS) Append(f *os.File, data []byte) error {
	k.step("append")
	return k.fileSystem.Append(f, data)
}

func (k *killFS) Sync(f *os.File) error {
	k.step("fsync")
	return k.fileSystem.Sync(f)
}

func (k *killFS) Rename(oldname, newname string) error {
	if newname == logFileName {
		k.step("logswap")
	}
	return k.fileSystem.Rename(oldname, newname)
}

// SetSnapshotMin sets how many files a scan reads before it writes the
// snapshot: the tests write it after every scan that read one, so that
// every test also runs on stores that start from a snapshot.
func SetSnapshotMin(n int) { snapshotMin = n }

// endOp ends an operation that acquire began, as every operation does.
func (s *FileStore) endOp() { s.afterUnlock(s.unlock()) }

// The options of Open and NewMemStore.

package taskgraph

import (
	"io/fs"
	"log/slog"
	"time"
)

// Option configures Open and NewMemStore.
type Option func(*config)

type config struct {
	now      func() time.Time
	noSync   bool
	noCreate bool
	filePerm fs.FileMode
	log      *slog.Logger

	// What tests change, one store at a time (export_test.go).
	logLimit      int64                   // the change log's size at which it is replaced
	syncDir       func(path string) error // how Open fsyncs a directory it created
	watchPollOnly bool                    // Watch polls, as where inotify is missing
	afterAhead    func()                  // runs between a write decided ahead and its lock
}

// maxLogSize is the size at which the change log is replaced by a new one.
const maxLogSize = 8 << 20

func newConfig(opts []Option) config {
	c := config{now: time.Now, filePerm: 0o644, log: slog.New(slog.DiscardHandler), logLimit: maxLogSize, syncDir: syncPath}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithLogger gives the store a logger for what it does on its own, which
// no call returns: a FileStore says where it created the task directory,
// which durability protocol it chose and why, and when its Watch loses
// events or falls back to polling. Without it the store logs nothing.
// NewMemStore takes it and has nothing to log.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithClock replaces time.Now, for tests of leases and timestamps.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithoutSync skips every fsync. Writes stay atomic (a reader never sees a
// half-written file) but are no longer durable: a power loss or kernel crash
// may lose or reorder recent writes. Use it for tests and throwaway plans.
func WithoutSync() Option {
	return func(c *config) { c.noSync = true }
}

// WithSyncEachWrite does nothing: every write of a store that syncs is
// durable on its own before it returns (docs/durability.md).
//
// Deprecated: it was the way out of group commit, which was removed. It
// goes at the next minor version.
func WithSyncEachWrite() Option { return func(*config) {} }

// WithGroupCommit does nothing: group commit was removed, since where it
// was proven safe it did not write faster than the full protocol
// (docs/durability.md).
//
// Deprecated: it goes at the next minor version.
func WithGroupCommit() Option { return func(*config) {} }

// WithFilePerm sets the permission bits of new task files (default 0644,
// reduced by the umask).
func WithFilePerm(perm fs.FileMode) Option {
	return func(c *config) { c.filePerm = perm.Perm() }
}

// WithoutCreate makes Open fail, with an error matching ErrNotFound that
// names the directory, when the task directory does not exist, instead of
// creating it: for commands that only read. Writes through the store still
// create the files they need in an existing directory.
func WithoutCreate() Option {
	return func(c *config) { c.noCreate = true }
}

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
	// syncFiles: every write fsyncs its own files, no group commit.
	syncFiles bool
	// groupCommit: group commit even where the filesystem is not proven.
	groupCommit bool
	filePerm    fs.FileMode
	log         *slog.Logger
}

func newConfig(opts []Option) config {
	c := config{now: time.Now, filePerm: 0o644, log: slog.New(slog.DiscardHandler)}
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

// WithSyncEachWrite makes every write durable on its own, as before group
// commit: its task files are fsynced and renamed and the directory fsynced
// before it returns, so each costs the full rename protocol and writers
// take turns flushing. Use it only where something reads the task files
// without taking the store's lock and must find them durable after a power
// loss — for example a backup that copies the directory. By default, on
// the filesystems where the power-loss test proves it (ext4 with a
// journal, XFS, btrfs; see docs/durability.md), a write is made durable by
// its change-log record, synced once for every writer waiting (group
// commit), and the renamed files reach the disk at the next checkpoint.
// Elsewhere every write already works as this option makes it.
func WithSyncEachWrite() Option {
	return func(c *config) { c.syncFiles = true }
}

// WithGroupCommit makes a FileStore use group commit on any filesystem,
// also one where the power-loss test has not proven it safe (see the
// table in docs/durability.md) and where Open would otherwise choose the
// full protocol. It is for that test, and for a filesystem you have
// proven yourself with it; WithSyncEachWrite and WithoutSync win over it.
func WithGroupCommit() Option {
	return func(c *config) { c.groupCommit = true }
}

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

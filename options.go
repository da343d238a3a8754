package taskgraph

import (
	"io/fs"
	"time"
)

// Option configures Open and NewMemStore.
type Option func(*config)

type config struct {
	now      func() time.Time
	noSync   bool
	noCreate bool
	filePerm fs.FileMode
}

func newConfig(opts []Option) config {
	c := config{now: time.Now, filePerm: 0o644}
	for _, o := range opts {
		o(&c)
	}
	return c
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

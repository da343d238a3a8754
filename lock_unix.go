//go:build !windows

// The directory lock on Unix: flock(2).

package taskgraph

import (
	"os"
	"syscall"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
)

// The operations of flock(2).
const (
	lockShared    = syscall.LOCK_SH
	lockExclusive = syscall.LOCK_EX
	lockNonBlock  = syscall.LOCK_NB
	lockUnlock    = syscall.LOCK_UN
)

// flock applies flock(2) operation how to f, retrying on EINTR.
func flock(f *os.File, how int) error {
	return atomicfile.Control(f, "flock", func(fd int) error { return syscall.Flock(fd, how) })
}

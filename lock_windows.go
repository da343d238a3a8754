// The directory lock on Windows: LockFileEx on the first byte of the lock
// file. Like flock(2) it is held by one handle (two stores of one process
// exclude each other), shared or exclusive, and the system releases it
// when the handle is closed or the process dies, however it dies.

package taskgraph

import (
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// The operations of flock, mapped to LockFileEx's flags; lockUnlock is
// UnlockFileEx.
const (
	lockShared    = 0
	lockExclusive = windows.LOCKFILE_EXCLUSIVE_LOCK
	lockNonBlock  = windows.LOCKFILE_FAIL_IMMEDIATELY
	lockUnlock    = 1 << 30
)

// flock locks (or unlocks) the first byte of f. A lock another handle
// holds gives EWOULDBLOCK with lockNonBlock, as flock(2) does; without it
// the call waits (f is a synchronous handle).
func flock(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		h := windows.Handle(fd)
		ol := new(windows.Overlapped) // offset 0
		if how == lockUnlock {
			lerr = windows.UnlockFileEx(h, 0, 1, 0, ol)
			return
		}
		lerr = windows.LockFileEx(h, uint32(how), 0, 1, 0, ol)
	}); err != nil {
		return err
	}
	switch lerr {
	case nil:
		return nil
	case windows.ERROR_LOCK_VIOLATION, windows.ERROR_IO_PENDING:
		lerr = syscall.EWOULDBLOCK
	}
	return &os.PathError{Op: "LockFileEx", Path: f.Name(), Err: lerr}
}

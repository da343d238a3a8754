//go:build !windows

package taskgraph

import (
	"os"
	"syscall"
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
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = syscall.Flock(int(fd), how); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr != nil {
		return &os.PathError{Op: "flock", Path: f.Name(), Err: ferr}
	}
	return nil
}

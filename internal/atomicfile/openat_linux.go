// Opening a file inside a directory handle on Linux: openat(2), never
// following a symlink, never blocking on a FIFO.

package atomicfile

import (
	"os"
	"syscall"
)

// OpenIn opens name, a single path element, inside the directory dir with
// openat(2): through the handle, so that a directory renamed or a working
// directory changed since it was opened makes no difference. It never
// follows a symlink (ELOOP) and never blocks on a FIFO; the caller checks
// that it got a regular file.
func OpenIn(dir *os.File, _ *os.Root, name string, flag int, perm os.FileMode) (*os.File, error) {
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	// O_NONBLOCK keeps a FIFO from blocking the open. An exclusive
	// create makes a new regular file or fails, so it needs none — and
	// without it Go does not try to register the file with its network
	// poller (an fcntl and a failing epoll_ctl per write).
	nonblock := syscall.O_NONBLOCK
	if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL {
		nonblock = 0
	}
	var fd int
	var oerr error
	if err := rc.Control(func(dfd uintptr) {
		for {
			fd, oerr = syscall.Openat(int(dfd), name, flag|nonblock|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, uint32(perm.Perm()))
			if oerr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	if oerr != nil {
		return nil, &os.PathError{Op: "openat", Path: name, Err: oerr}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// Opening a file inside a directory handle on Linux: openat(2), never
// following a symlink, never blocking on a FIFO.

package atomicfile

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
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

// StatIn returns the inode, size and modification time (nanoseconds) of
// name, a single path element inside the directory dir, without following
// a symlink: what os.Root's Lstat gives, with one fstatat(2) and nothing
// allocated, for a scan that stats every file of a large directory.
func StatIn(dir *os.File, _ *os.Root, name string) (ino uint64, size, mtime int64, err error) {
	var st unix.Stat_t
	err = Control(dir, "fstatat", func(fd int) error {
		return unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	})
	return st.Ino, st.Size, st.Mtim.Sec*1e9 + st.Mtim.Nsec, err
}

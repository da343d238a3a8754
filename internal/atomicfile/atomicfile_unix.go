//go:build !windows

// Atomic replacement and file identity on Unix.

package atomicfile

import (
	"os"
	"syscall"
)

// Retry runs fn once: on Unix a rename or an open is never refused for
// another process's open file (see the Windows file).
func Retry(fn func() error) error { return fn() }

// syncFile fsyncs f, a file or a directory.
func syncFile(f *os.File) error { return f.Sync() }

// SyncDir makes the renames and removals done in the directory d durable.
func SyncDir(d *os.File) error { return d.Sync() }

// FileID returns the inode number of fi: a file replaced by rename always
// gets a new one, whatever its size and timestamps.
func FileID(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// Links returns the number of hard links to the file fi describes.
func Links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// OpenNoFollow opens path for reading, failing if it is a symlink. It opens
// without blocking, so that a FIFO or device put in place of a file cannot
// hang the caller; the caller checks that it got a regular file.
func OpenNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

// Control runs the system call fn on f's descriptor, again while it is
// interrupted (EINTR); a file closed meanwhile gives os.ErrClosed, never a
// call on a reused descriptor. An error of fn comes back as a
// *os.PathError of op.
func Control(f *os.File, op string, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = fn(int(fd)); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if ferr != nil {
		return &os.PathError{Op: op, Path: f.Name(), Err: ferr}
	}
	return nil
}

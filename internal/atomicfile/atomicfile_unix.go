//go:build !windows

package atomicfile

import (
	"os"
	"syscall"
)

// ErrPlatform is nil where atomic replacement is available.
var ErrPlatform error

// FileID returns the inode number of fi: a file replaced by rename always
// gets a new one, whatever its size and timestamps.
func FileID(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// OpenNoFollow opens path for reading, failing if it is a symlink. It opens
// without blocking, so that a FIFO or device put in place of a file cannot
// hang the caller; the caller checks that it got a regular file.
func OpenNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
}

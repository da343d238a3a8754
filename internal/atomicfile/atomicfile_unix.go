//go:build !windows

package atomicfile

import (
	"os"
	"syscall"

	"github.com/google/renameio/v2"
)

// ErrPlatform is nil where atomic replacement is available.
var ErrPlatform error

// WriteDurable replaces name inside root atomically and durably: renameio
// writes a temporary file in the same directory, fsyncs it, and renames it
// over name. It does not fsync the directory; the caller does (SyncDir),
// once for all the files of a commit.
func WriteDurable(root *os.Root, name string, data []byte, perm os.FileMode) error {
	return renameio.WriteFile(name, data, perm, renameio.WithRoot(root))
}

// FileID returns the inode number of fi: a file replaced by rename always
// gets a new one, whatever its size and timestamps.
func FileID(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// OpenNoFollow opens path for reading, failing if it is a symlink.
func OpenNoFollow(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}

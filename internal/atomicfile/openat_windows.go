// Opening a file inside a directory handle on Windows: not available.

package atomicfile

import (
	"errors"
	"os"
)

// OpenIn is not available on Windows.
func OpenIn(_ *os.File, _ *os.Root, _ string, _ int, _ os.FileMode) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

// StatIn returns the inode (0 where unknown), size and modification time
// (nanoseconds) of name inside root, without following a symlink.
func StatIn(_ *os.File, root *os.Root, name string) (ino uint64, size, mtime int64, err error) {
	fi, err := root.Lstat(name)
	if err != nil {
		return 0, 0, 0, err
	}
	return FileID(fi), fi.Size(), fi.ModTime().UnixNano(), nil
}

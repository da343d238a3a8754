//go:build windows

package atomicfile

import (
	"errors"
	"os"
)

// ErrPlatform: renameio, and with it atomic replacement of a file, is not
// available on Windows.
var ErrPlatform = errors.ErrUnsupported

// WriteDurable is not available on Windows.
func WriteDurable(root *os.Root, name string, data []byte, perm os.FileMode) error {
	return errors.ErrUnsupported
}

// FileID is not available on Windows.
func FileID(fi os.FileInfo) uint64 { return 0 }

// OpenNoFollow is not available on Windows.
func OpenNoFollow(path string) (*os.File, error) { return nil, errors.ErrUnsupported }

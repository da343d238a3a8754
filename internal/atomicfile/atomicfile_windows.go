//go:build windows

// Atomic replacement and file identity on Windows: not available.

package atomicfile

import (
	"errors"
	"os"
)

// ErrPlatform: atomic replacement of an open file is not available on
// Windows.
var ErrPlatform = errors.ErrUnsupported

// FileID is not available on Windows.
func FileID(fi os.FileInfo) uint64 { return 0 }

// Links is not known on Windows: 1.
func Links(fi os.FileInfo) uint64 { return 1 }

// OpenNoFollow is not available on Windows.
func OpenNoFollow(path string) (*os.File, error) { return nil, errors.ErrUnsupported }

//go:build !linux

// Reusing a file's inode: only on Linux, where a lease tells whether anyone
// else has the file open.

package atomicfile

import (
	"errors"
	"os"
)

// CanReuse reports whether Reusable can ever say yes here.
const CanReuse = false

// Reusable always says no here: nothing tells whether another process has
// the file open.
func Reusable(*os.File, os.FileMode) (size int64, ok bool) { return 0, false }

// CreatedPerm is not told here.
func CreatedPerm(os.FileMode) os.FileMode { return 0 }

// LinkIn is not used here: nothing is reused.
func LinkIn(_ *os.File, name string, _ *os.File, to string) error {
	return &os.LinkError{Op: "link", Old: name, New: to, Err: errors.ErrUnsupported}
}

//go:build !linux

// Reusing a file's inode: only on Linux, where a lease tells whether anyone
// else has the file open.

package atomicfile

import "os"

// CanReuse reports whether Reusable can ever say yes here.
const CanReuse = false

// Reusable always says no here: nothing tells whether another process has
// the file open.
func Reusable(*os.File, os.FileMode) bool { return false }

// CreatedPerm is not told here.
func CreatedPerm(os.FileMode) os.FileMode { return 0 }

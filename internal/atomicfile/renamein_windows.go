//go:build windows

package atomicfile

import (
	"errors"
	"os"
)

// RenameIn is not used on Windows, where renames go through os.Root (see
// atomicfile_windows.go).
func RenameIn(_ *os.File, name string, _ *os.File, to string) error {
	return &os.LinkError{Op: "rename", Old: name, New: to, Err: errors.ErrUnsupported}
}

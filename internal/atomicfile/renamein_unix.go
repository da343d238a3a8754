//go:build !windows

package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// RenameIn renames name in the directory from to to in the directory dir,
// replacing it: through the directories' handles, never their paths — one
// system call, where a rename through os.Root opens and closes the parent
// and looks the target up besides.
func RenameIn(from *os.File, name string, dir *os.File, to string) error {
	var rerr error
	err := Control(from, "renameat", func(fromFD int) error {
		return Control(dir, "renameat", func(dirFD int) error {
			rerr = unix.Renameat(fromFD, name, dirFD, to)
			return rerr
		})
	})
	if rerr != nil {
		return &os.LinkError{Op: "rename", Old: name, New: to, Err: rerr}
	}
	return err
}

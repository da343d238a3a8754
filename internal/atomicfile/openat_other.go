//go:build !linux

// Opening a file inside a directory without openat(2) (macOS, the BSDs,
// Windows): through os.Root, never blocking on a FIFO. On Windows os.Root
// opens relative to the directory handle (NtCreateFile) and shares the
// file for reading, writing and deletion, so an open file never blocks a
// rename over it where the filesystem allows that (see docs/windows.md).

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// OpenIn opens name, a single path element, inside root (whose handle is
// dir) without blocking on a FIFO. os.Root follows a symlink that stays
// inside the directory and the standard library offers no openat(2) here,
// so the entry is checked after the open instead: a symlink, or an entry
// that is no longer the file opened, is refused with ELOOP. The caller
// checks that it got a regular file.
func OpenIn(_ *os.File, root *os.Root, name string, flag int, perm os.FileMode) (*os.File, error) {
	if flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE {
		// Refuse first where it costs nothing: O_CREATE through a dangling
		// symlink would create its target.
		if fi, err := root.Lstat(name); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, &os.PathError{Op: "openat", Path: name, Err: syscall.ELOOP}
		}
	}
	var f *os.File
	err := Retry(func() (err error) {
		f, err = root.OpenFile(name, flag|nonblock, perm)
		return err
	})
	if err != nil {
		return nil, err
	}
	fi, ferr := f.Stat()
	li, lerr := root.Lstat(name)
	if err := errors.Join(ferr, lerr); err != nil {
		f.Close()
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	if li.Mode()&os.ModeSymlink != 0 || !os.SameFile(fi, li) {
		f.Close()
		return nil, &os.PathError{Op: "openat", Path: name, Err: syscall.ELOOP}
	}
	return f, nil
}

// StatIn returns the file id (FileID; 0 where unknown), size and modification time
// (nanoseconds) of name inside root, without following a symlink.
func StatIn(_ *os.File, root *os.Root, name string) (ino uint64, size, mtime int64, err error) {
	var fi os.FileInfo
	err = Retry(func() (err error) {
		fi, err = root.Lstat(name)
		return err
	})
	if err != nil {
		return 0, 0, 0, err
	}
	return FileID(fi), fi.Size(), fi.ModTime().UnixNano(), nil
}

// Package atomicfile replaces files inside a directory so that a reader sees
// either the old content or the new, never a mix, and — unless asked not to
// — so that the new content survives a power loss once the call returns and
// the caller has synced the directory.
//
// Why the order matters: a rename is atomic, but not durable until the
// directory that holds it is fsynced, and the renamed file's content is not
// durable until the file itself is fsynced before the rename. Writing a
// temporary file, fsyncing it, renaming it over the target and then
// fsyncing the directory (the caller does that once for all the files of
// one commit, with FS.Sync on the directory) is the protocol.
//
// Every step goes through an FS, so that tests can make any one of them
// fail as a full or failing disk would.
package atomicfile

import (
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// FS is the steps of replacing a file inside one directory. Root is the
// real one; tests wrap it to inject failures.
type FS interface {
	// OpenFile opens name inside the directory.
	OpenFile(name string, flag int, perm os.FileMode) (*os.File, error)
	// Write writes all of data to f.
	Write(f *os.File, data []byte) error
	// Sync fsyncs f: a file's content, or a directory's entries.
	Sync(f *os.File) error
	// Rename renames oldname to newname, replacing it.
	Rename(oldname, newname string) error
	// Remove removes name.
	Remove(name string) error
}

// Root returns the FS of the directory root.
func Root(root *os.Root) FS { return rootFS{root} }

type rootFS struct{ root *os.Root }

func (r rootFS) OpenFile(name string, flag int, perm os.FileMode) (f *os.File, err error) {
	err = Retry(func() error {
		f, err = r.root.OpenFile(name, flag, perm)
		return err
	})
	return f, err
}
func (rootFS) Write(f *os.File, data []byte) error { _, err := f.Write(data); return err }
func (rootFS) Sync(f *os.File) error               { return syncFile(f) }
func (r rootFS) Rename(oldname, newname string) error {
	return Retry(func() error { return r.root.Rename(oldname, newname) })
}
func (r rootFS) Remove(name string) error {
	return Retry(func() error { return r.root.Remove(name) })
}

// Replace replaces name atomically with a file holding data: it writes a
// temporary file beside it, fsyncs it if durable, and renames it over name.
// It does not fsync the directory; the caller does, once for all the files
// of a commit. An error means name was not replaced: the rename is the last
// step. perm is reduced by the umask.
//
// Without durable, the rename over an existing file is what keeps the old
// content safe until the new is on disk: ext4 (auto_da_alloc, with the
// default data=ordered) and btrfs write a file renamed over another out
// before the rename is committed. An exchange of the names instead (tried:
// a third of the cost, since nothing is written out) lets a journal commit
// free the old content while the new has no blocks yet, so a power loss
// could leave the file empty with no record left to replay.
func Replace(fsys FS, name string, data []byte, perm os.FileMode, durable bool) error {
	tmp := TempName(name)
	f, err := fsys.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	err = fsys.Write(f, data)
	if err == nil && durable {
		err = fsys.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, name)
	}
	if err != nil {
		_ = fsys.Remove(tmp) // best effort: Check reports a leftover
	}
	return err
}

// WriteNoSync replaces name inside root atomically without any fsync: the
// replacement is all-or-nothing for readers, but a power loss may lose it.
func WriteNoSync(root *os.Root, name string, data []byte, perm os.FileMode) error {
	return Replace(Root(root), name, data, perm, false)
}

// WriteDurable replaces name inside root atomically and durably, but for
// the directory fsync, which the caller does.
func WriteDurable(root *os.Root, name string, data []byte, perm os.FileMode) error {
	return Replace(Root(root), name, data, perm, true)
}

var tempSeq atomic.Uint64

// TempName returns a fresh temporary name for a replacement of name.
func TempName(name string) string {
	return TempPrefix(name) + strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.FormatUint(tempSeq.Add(1), 36)
}

// TempPrefix is how the names of the temporary files for name begin: a dot
// and the name, so that a glob for the real files never matches one.
func TempPrefix(name string) string { return "." + name }

// IsTempOf reports whether name is a temporary file that TempName made for
// target: TempPrefix(target) and a non-empty base-36 suffix. Other names
// that merely start alike (an editor's ".task_1.json.swp") are not.
func IsTempOf(name, target string) bool {
	sfx, ok := strings.CutPrefix(name, TempPrefix(target))
	if !ok || sfx == "" {
		return false
	}
	for _, c := range sfx {
		if (c < '0' || c > '9') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// NotRegular is the problem of a file whose mode m is not a regular
// file's, naming what it is instead.
func NotRegular(m fs.FileMode) error { return fmt.Errorf("not a regular file (%s)", fileType(m)) }

// HardLinked is the problem of a file written in place (a change log)
// that has n hard links: it may be another file too, which a write to it
// would change. until says what happens meanwhile.
func HardLinked(what string, n uint64, until string) error {
	return fmt.Errorf("the %s has %d hard links, so it may be another file too, which taskgraph would change by writing it: remove it; until then %s", what, n, until)
}

// fileType names the type of a file that is not a regular file.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file: " + m.Type().String()
}

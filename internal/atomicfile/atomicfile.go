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
// one commit, with SyncDir) is the protocol.
package atomicfile

import (
	"os"
	"strconv"
	"time"
)

// WriteNoSync replaces name inside root atomically without any fsync: the
// replacement is all-or-nothing for readers, but a power loss may lose it.
func WriteNoSync(root *os.Root, name string, data []byte, perm os.FileMode) error {
	tmp := TempPrefix(name) + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

// TempPrefix is how the names of WriteNoSync's temporary files for name
// begin: a dot and the name, so that a glob for the real files never
// matches one.
func TempPrefix(name string) string { return "." + name }

// SyncDir makes the renames and removals done in the directory d durable.
func SyncDir(d *os.File) error { return d.Sync() }

// Package cachedir is a task directory's cache directory
// (filenames.CacheDir) as a FileStore's writes use it: where a write
// decided ahead of the lock writes its task file, and where the versions
// writes replace are kept as spares to be filled again (Spares). It names
// files and inodes, never a task: the store decides what goes in.
package cachedir

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// Name is the cache directory's name in the task directory.
const Name = filenames.CacheDir

// SweepAge is the age at which a sweep removes a temporary file of a task
// file: a writer that died left it. A live writer still waiting for the
// lock after so long has decided its write anew by then (the store's
// aheadMaxAge), so removing its file only costs it the rename, which fails
// and falls back.
const SweepAge = time.Minute

// Open opens the cache directory of the task directory taskRoot. Through
// "/.", so that the directory is opened as one (O_DIRECTORY):
// os.Root.OpenRoot opens the last element of its path without it, which
// blocks on a FIFO put in its place.
func Open(taskRoot *os.Root) (*os.Root, error) {
	if runtime.GOOS == "windows" {
		return taskRoot.OpenRoot(Name)
	}
	return taskRoot.OpenRoot(Name + "/.")
}

// Dir is the cache directory as writes decided ahead and spares use it,
// opened once through os.Root (a symlink out of the task directory in its
// place is refused), its handle the directory's whatever happens to its
// name later. The zero Dir is not open yet. Its fields are written with
// the store's semaphore held.
type Dir struct {
	root   *os.Root
	file   *os.File
	failed bool // it could not be opened: not tried again by this store
	want   bool // it is missing: the next commit creates it (MakeIfWanted)
}

// Root is the open directory, or nil.
func (d *Dir) Root() *os.Root { return d.root }

// File is the open directory's handle, or nil.
func (d *Dir) File() *os.File { return d.file }

// Want has the next commit create the directory if it is missing
// (MakeIfWanted).
func (d *Dir) Want() { d.want = true }

// Close closes the directory, if it is open.
func (d *Dir) Close() error {
	if d.file == nil {
		return nil
	}
	return errors.Join(d.file.Close(), d.root.Close())
}

// Forget closes the directory and has the next write open it again: it
// may have been moved or replaced since it was opened.
func (d *Dir) Forget() {
	_ = d.Close()
	*d = Dir{}
}

// MakeIfWanted creates the cache directory in the task directory
// taskRoot, in a commit, under the exclusive lock and before the commit's
// record, if an earlier write found it missing.
func (d *Dir) MakeIfWanted(taskRoot *os.Root) {
	if d.want {
		d.want = false
		_ = taskRoot.Mkdir(Name, 0o755)
	}
}

// Ready reports whether the cache directory can take files, opening it
// the first time. Creating it changes the task directory's mtime, which
// other stores would take for a foreign change and rescan for, so a write
// that finds it missing has the next commit create it (MakeIfWanted),
// whose log record accounts for that mtime. (The snapshot's writer creates
// it too, outside the lock, after a scan that read the whole directory
// anyway.) taskRoot and taskDir are the task directory; taskInodes the
// inodes of the task files as the store has them (Sweep).
func (d *Dir) Ready(taskRoot *os.Root, taskDir *os.File, taskInodes func() map[uint64]bool) bool {
	if d.file != nil {
		return true
	}
	if d.failed {
		return false
	}
	root, err := Open(taskRoot)
	if err != nil {
		d.want = errors.Is(err, fs.ErrNotExist)
		d.failed = !d.want
		return false
	}
	file, err := root.Open(".")
	if err != nil {
		root.Close()
		d.failed = true
		return false
	}
	if fi, err := file.Stat(); err != nil || sameDir(fi, taskDir) {
		// A symlink to the task directory itself: files made there
		// would change its mtime, which other stores rescan for.
		file.Close()
		root.Close()
		d.failed = true
		return false
	}
	d.root, d.file = root, file
	d.Sweep(taskRoot, taskInodes)
	return true
}

// sameDir reports whether fi is the directory d.
func sameDir(fi os.FileInfo, d *os.File) bool {
	di, err := d.Stat()
	return err == nil && os.SameFile(fi, di)
}

// Sweep removes what writers that died between deciding ahead and
// renaming left in the cache directory, once per store. A file is left
// alone if its inode is also a task's file (in taskRoot, or among
// taskInodes, the task files as the store has them) with a single link:
// after a power loss a filesystem without a journal may keep the name a
// rename moved in both directories without counting both, and removing
// that name would free the task's file.
func (d *Dir) Sweep(taskRoot *os.Root, taskInodes func() map[uint64]bool) {
	cache := d.root
	f, err := cache.Open(".")
	if err != nil {
		return
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	var taskFiles map[uint64]bool
	for _, n := range names {
		target, ok := filenames.TempTarget(n)
		if !ok {
			continue
		}
		fi, err := cache.Lstat(n)
		if err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) < SweepAge {
			continue
		}
		if atomicfile.Links(fi) < 2 {
			// A spare is named for the task it was replaced in and
			// renamed to any task's file: any task file may be the
			// other name.
			if taskFiles == nil {
				taskFiles = taskInodes()
			}
			if taskFiles[atomicfile.FileID(fi)] {
				continue
			}
			if tfi, err := taskRoot.Lstat(target); err == nil && atomicfile.FileID(tfi) == atomicfile.FileID(fi) {
				continue
			}
		}
		_ = cache.Remove(n)
	}
}

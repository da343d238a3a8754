// The directory lock: shared for reads, exclusive for writes, through
// the directory handle.

package taskgraph

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// lockFileName is the lock file inside the task directory. It is created on
// first use and never deleted: deleting a lock file while another process
// waits on it would let two processes hold "the" lock at once.
const lockFileName = filenames.Lock

// dirLock excludes other processes from a task directory with flock(2) on
// its lock file (LockFileEx on Windows: lock_windows.go), opened through the directory handle (never by path, so a
// chdir or a rename of the directory cannot make two stores lock different
// files).
//
// flock is held per open file description, so it excludes other processes
// and other stores of this process alike, but not the goroutines of one
// store, which share its descriptor: a FileStore serialises its own
// goroutines with a semaphore before it takes this lock. The kernel
// releases the lock when the holder dies, however it dies, so a crashed
// agent never leaves the directory locked.
type dirLock struct {
	root *os.Root
	dirf *os.File // the directory handle, for openat
	path string   // for messages
	// create lets a shared lock create a missing lock file: a store does,
	// so that its reads exclude a writer that starts meanwhile; Check,
	// which changes nothing, does not.
	create bool
	f      *os.File // the lock file, opened by the first lock; nil until then
}

func newDirLock(root *os.Root, dirf *os.File, dir string, create bool) *dirLock {
	return &dirLock{root: root, dirf: dirf, path: filepath.Join(dir, lockFileName), create: create}
}

// lock takes the lock, shared or exclusive, waiting until it is free or ctx
// is done. The returned function releases it. Calls must not overlap.
//
// A lock file that is not a regular file (a directory, FIFO or symlink put
// in its place) cannot exclude anyone: an exclusive lock is refused with an
// *unusableLock (lockFailed makes it the root's *CorruptError), and a
// shared one goes on without locking, since no
// taskgraph writer can write the directory until it is removed. So does a
// shared lock where the lock file does not exist and cannot be created (a
// read-only directory no one ever wrote).
func (l *dirLock) lock(ctx context.Context, exclusive bool) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if l.f == nil {
		f, err := l.open()
		if err != nil || f == nil {
			if err == nil && exclusive {
				err = lockError(l.path, fs.ErrNotExist)
			}
			return l.unusable(exclusive, err)
		}
		l.f = f
	}
	how := lockShared
	if exclusive {
		how = lockExclusive
	}
	err = flock(l.f, how|lockNonBlock)
	if err == nil {
		return func() { _ = flock(l.f, lockUnlock) }, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, lockError(l.path, err)
	}
	// Contended: block in the kernel rather than poll, so that the lock is
	// handed over as soon as it is released.
	if ctx.Done() == nil {
		// Nothing can end the wait: block right here.
		if err := flock(l.f, how); err != nil {
			return nil, lockError(l.path, err)
		}
		return func() { _ = flock(l.f, lockUnlock) }, nil
	}
	// A blocking flock cannot be interrupted, so it waits in a goroutine
	// on a descriptor of its own; if ctx ends first, that goroutine
	// releases the lock (closes the descriptor) once it has it.
	w, err := l.open()
	if err != nil || w == nil {
		return l.unusable(exclusive, err)
	}
	done := make(chan error, 1)
	go func() { done <- flock(w, how) }()
	select {
	case err := <-done:
		if err != nil {
			w.Close()
			return nil, lockError(l.path, err)
		}
		return func() { w.Close() }, nil
	case <-ctx.Done():
		go func() {
			<-done
			w.Close()
		}()
		return nil, ctx.Err()
	}
}

// close releases the descriptor of the lock file.
func (l *dirLock) close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// open opens the lock file, creating it if allowed. flock needs no write
// access, so the descriptor is read-only: it serves for both kinds of lock,
// also in a directory this process may only read. It returns an
// *unusableLock error for an entry that is not a regular file, and a nil
// file, and no error, when there is no lock file and none can be made.
func (l *dirLock) open() (*os.File, error) {
	flag := os.O_RDONLY
	if l.create {
		flag |= os.O_CREATE
	}
	f, err := atomicfile.OpenIn(l.dirf, l.root, lockFileName, flag, 0o644)
	if err != nil && l.create && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		f, err = atomicfile.OpenIn(l.dirf, l.root, lockFileName, os.O_RDONLY, 0)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		if fi, lerr := l.root.Lstat(lockFileName); lerr == nil && !fi.Mode().IsRegular() {
			return nil, &unusableLock{l.path, fi.Mode()}
		}
		return nil, lockError(l.path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, lockError(l.path, err)
		}
		return nil, &unusableLock{l.path, fi.Mode()}
	}
	return f, nil
}

// unusableLock is a lock file that is not a regular file.
type unusableLock struct {
	path string
	mode fs.FileMode
}

func (e *unusableLock) Error() string {
	return "the lock file is " + atomicfile.NotRegular(e.mode).Error()
}

// unusable decides what to do when the lock cannot be taken for err (nil:
// there is no lock file and none can be made): a shared lock goes on
// without it, unless err is a plain failure; an exclusive one fails.
func (l *dirLock) unusable(exclusive bool, err error) (func(), error) {
	var u *unusableLock
	if err == nil || (!exclusive && errors.As(err, &u)) {
		return func() {}, nil
	}
	return nil, err
}

// lockFailed is the error of a store that could not take the lock for
// err: a lock file that is not a regular file is a *CorruptError, which
// says what to do; any other failure is err itself.
func lockFailed(err error) error {
	var u *unusableLock
	if errors.As(err, &u) {
		return &CorruptError{Path: u.path, Err: fmt.Errorf("%w: remove it; until then every write is refused, and reads go on without the lock", u)}
	}
	return err
}

func lockError(path string, err error) error {
	return fmt.Errorf("taskgraph: lock %s: %w (is the directory writable?)", path, err)
}

package taskgraph

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/gofrs/flock"
)

// lockFileName is the lock file inside the task directory. It is created on
// first use and never deleted: deleting a lock file while another process
// waits on it would let two processes hold "the" lock at once.
const lockFileName = ".taskgraph.lock"

// dirLock excludes other processes from a task directory with flock(2).
//
// flock is held per open file description, so it excludes other processes
// and other FileStores, but not goroutines sharing one *flock.Flock (a second
// Lock on it returns at once); the FileStore therefore serialises its own
// goroutines with a semaphore before it takes this lock. The kernel releases
// the lock when the holder dies, however it dies, so a crashed agent never
// leaves the directory locked.
type dirLock struct {
	path string
	fl   *flock.Flock
}

func newDirLock(path string) *dirLock {
	return &dirLock{path: path, fl: flock.New(path, flock.SetPermissions(0o644))}
}

// lock takes the lock, shared or exclusive, waiting until it is free or ctx
// is done. The returned function releases it.
func (l *dirLock) lock(ctx context.Context, exclusive bool) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	try, wait := l.fl.TryRLock, (*flock.Flock).RLock
	if exclusive {
		try, wait = l.fl.TryLock, (*flock.Flock).Lock
	}
	ok, err := try()
	if err != nil && !exclusive && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		return l.lockReadOnly(ctx)
	}
	if err != nil {
		return nil, lockError(l.path, err)
	}
	if ok {
		return func() { _ = l.fl.Unlock() }, nil
	}
	// Contended: block in the kernel rather than poll, so that the lock is
	// handed over as soon as it is released. A blocking flock cannot be
	// interrupted, so it waits on its own descriptor in a goroutine; if ctx
	// ends first, that goroutine releases the lock as soon as it gets it.
	waiter := flock.New(l.path, flock.SetPermissions(0o644))
	done := make(chan error, 1)
	go func() { done <- wait(waiter) }()
	select {
	case err := <-done:
		if err != nil {
			_ = waiter.Close()
			return nil, lockError(l.path, err)
		}
		return func() { _ = waiter.Close() }, nil
	case <-ctx.Done():
		go func() {
			<-done
			_ = waiter.Close()
		}()
		return nil, ctx.Err()
	}
}

// lockReadOnly takes a shared lock in a directory this process cannot
// write: through a read-only descriptor, or not at all if the lock file does
// not exist and cannot be created — then no one can write the directory.
func (l *dirLock) lockReadOnly(ctx context.Context) (func(), error) {
	ro := flock.New(l.path, flock.SetFlag(os.O_RDONLY))
	ok, err := ro.TryRLock()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return func() {}, nil
	case err != nil:
		return nil, lockError(l.path, err)
	case ok:
		return func() { _ = ro.Close() }, nil
	}
	done := make(chan error, 1)
	go func() { done <- ro.RLock() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, lockError(l.path, err)
		}
		return func() { _ = ro.Close() }, nil
	case <-ctx.Done():
		go func() {
			<-done
			_ = ro.Close()
		}()
		return nil, ctx.Err()
	}
}

// close releases the descriptor of the lock file.
func (l *dirLock) close() error { return l.fl.Close() }

func lockError(path string, err error) error {
	if fi, lerr := os.Lstat(path); lerr == nil && !fi.Mode().IsRegular() {
		return fmt.Errorf("taskgraph: lock %s: %w (it is not a regular file (%s): remove it)", path, err, fi.Mode().Type())
	}
	return fmt.Errorf("taskgraph: lock %s: %w (is the directory writable?)", path, err)
}

//go:build !windows

package taskgraph

import (
	"os"
	"sync"
	"syscall"
)

// This file gives the external tests (package taskgraph_test) what they
// need of the store's insides, and holds the small fault injectors the
// tests of this file's package share.

// KillAtLogAppend makes the process kill itself with SIGKILL at the n-th
// append to the change log of s: every write appends twice, its
// announcement before the commit point and its record after it, so n = 2
// kills the first write after its files are renamed into place and
// fsynced, before it is recorded.
func KillAtLogAppend(s *FileStore, n int) {
	s.fs = &killFS{fileSystem: s.fs, at: n}
}

type killFS struct {
	fileSystem
	mu sync.Mutex
	n  int
	at int
}

func (k *killFS) Append(f *os.File, data []byte) error {
	k.mu.Lock()
	k.n++
	hit := k.n == k.at
	k.mu.Unlock()
	if hit {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is delivered; nothing after it runs
	}
	return k.fileSystem.Append(f, data)
}

// dropFS loses the at-th append to the change log silently: it reports
// success but writes nothing, as a writer that died right there would
// leave the log.
type dropFS struct {
	fileSystem
	mu sync.Mutex
	n  int
	at int
}

func (d *dropFS) Append(f *os.File, data []byte) error {
	d.mu.Lock()
	d.n++
	drop := d.n == d.at
	d.mu.Unlock()
	if drop {
		return nil
	}
	return d.fileSystem.Append(f, data)
}

// readFault fails every read-open of one file with err while set: a
// permission, descriptor or I/O error that passes.
type readFault struct {
	fileSystem
	mu   sync.Mutex
	name string
	err  error
}

func (r *readFault) set(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.name, r.err = name, err
}

func (r *readFault) OpenRead(name string) (*os.File, error) {
	r.mu.Lock()
	err := r.err
	hit := name == r.name
	r.mu.Unlock()
	if hit && err != nil {
		return nil, &os.PathError{Op: "openat", Path: name, Err: err}
	}
	return r.fileSystem.OpenRead(name)
}

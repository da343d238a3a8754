//go:build !windows

package taskgraph

import (
	"os"
	"sync"
)

// The fault-injecting file systems the tests of this package share (the
// one the external tests reach, killFS, is in export_test.go).

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

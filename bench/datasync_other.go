//go:build !linux

// The bench's data sync elsewhere: fsync.

package main

import "os"

// datasync is fsync where fdatasync is not used.
func datasync(f *os.File) error { return f.Sync() }

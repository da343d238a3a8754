// The bench's data sync on Linux: fdatasync, as the store uses.

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync, what the store syncs its change log with.
func datasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }

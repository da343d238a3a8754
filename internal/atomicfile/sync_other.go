//go:build !linux

// Data sync where there is no fdatasync or syncfs: no group commit.

package atomicfile

import "os"

// GroupCommit is false here: there is no syncfs, so every write makes its
// own files durable (see the Linux file).
const GroupCommit = false

// SyncData is f.Sync where fdatasync is not used.
func SyncData(f *os.File) error { return f.Sync() }

// SyncFS is f.Sync where syncfs is not available; nothing calls it while
// GroupCommit is false.
func SyncFS(f *os.File) error { return f.Sync() }

// BootID is not known here.
func BootID() string { return "" }

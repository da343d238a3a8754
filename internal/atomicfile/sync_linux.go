// Data sync, filesystem sync and the boot id on Linux: what group commit
// needs.

package atomicfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// GroupCommit reports whether SyncData and SyncFS are what their names say
// here, so that a store may make a write durable by a synced log record and
// leave the renamed files to a later SyncFS.
const GroupCommit = true

// SyncData makes the content of f and its size durable (fdatasync). It is
// cheaper than Sync: it skips timestamps, and it commits everything written
// to f before the call, by any process, in one flush — which is what lets
// writers that arrive during a sync share the next one.
func SyncData(f *os.File) error {
	return Control(f, "fdatasync", unix.Fdatasync)
}

// SyncFS makes everything written to the filesystem holding f durable
// (syncfs): every renamed file's content and every directory entry, in one
// call instead of one fsync per file. Since Linux 5.8 it reports writeback
// errors of the filesystem since f was opened.
func SyncFS(f *os.File) error {
	return Control(f, "syncfs", unix.Syncfs)
}

// BootID identifies the running boot of the machine: it changes at every
// restart, so a log record written under another boot may have been lost
// with the page cache. "" if the system does not say.
func BootID() string {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return string(trimSpace(data))
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

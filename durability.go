// The durability protocol a FileStore uses on its directory, and how it
// says so.

package taskgraph

// Protocol is how a FileStore makes a write durable.
type Protocol string

// The protocols a FileStore can use.
const (
	// ProtocolSyncEachWrite: every write fsyncs its files and the
	// directory before it returns (the full protocol; docs/durability.md).
	ProtocolSyncEachWrite Protocol = "sync-each-write"
	// ProtocolNoSync: nothing is fsynced (WithoutSync).
	ProtocolNoSync Protocol = "no-sync"
	// ProtocolGroupCommit is never reported: group commit was removed,
	// since on the filesystems where it was proven safe it did not write
	// faster than the full protocol (docs/durability.md).
	//
	// Deprecated: every syncing store uses ProtocolSyncEachWrite. This
	// name goes at the next minor version.
	ProtocolGroupCommit Protocol = "group-commit"
)

// Durability says which protocol a FileStore uses on its directory and why.
type Durability struct {
	Protocol   Protocol
	Filesystem string // the directory's filesystem and the options in effect, e.g. "ext4 (data=ordered)"
	Reason     string // why this protocol, in a sentence
}

func (d Durability) String() string {
	return string(d.Protocol) + " on " + d.Filesystem + ": " + d.Reason
}

// Durability returns the protocol the store uses, and why.
func (s *FileStore) Durability() Durability { return s.durability }

package taskgraph

// Protocol is how a FileStore makes a write durable.
type Protocol string

// The protocols a FileStore can use.
const (
	// ProtocolGroupCommit: a write of one task file is durable by its
	// change-log record, synced once for every writer waiting; see
	// groupcommit.go.
	ProtocolGroupCommit Protocol = "group-commit"
	// ProtocolSyncEachWrite: every write fsyncs its files and the
	// directory before it returns.
	ProtocolSyncEachWrite Protocol = "sync-each-write"
	// ProtocolNoSync: nothing is fsynced (WithoutSync).
	ProtocolNoSync Protocol = "no-sync"
)

// Durability says which protocol a FileStore uses on its directory and why.
type Durability struct {
	Protocol   Protocol
	Filesystem string // the directory's filesystem type and the mount options that decided, e.g. "ext4 (data=ordered)"
	Reason     string // why this protocol, in a sentence
}

// Durability returns the protocol the store chose at Open, and why.
func (s *FileStore) Durability() Durability { return s.durability }

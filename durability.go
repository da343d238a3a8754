// The durability protocol a FileStore chooses for its directory's
// filesystem, and how it says so.

package taskgraph

import "github.com/taskgraph-dev/taskgraph/internal/fsinfo"

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
	Filesystem string // the directory's filesystem and the options that decided, e.g. "ext4 (data=ordered)"
	Reason     string // why this protocol, in a sentence
}

func (d Durability) String() string {
	return string(d.Protocol) + " on " + d.Filesystem + ": " + d.Reason
}

// Durability returns the protocol the store chose at Open, and why.
func (s *FileStore) Durability() Durability { return s.durability }

// groupCommitSafe reports whether group commit is proven safe against a
// power loss on the filesystem info describes, and why (or why not). Only
// what the power-loss test on real filesystem images (powerloss/) proves
// gets group commit; everything else, unknown, layered and network
// filesystems included, gets the full protocol.
func groupCommitSafe(info fsinfo.Info) (bool, string) {
	switch info.Type {
	case "ext4":
		if !info.AllOptions {
			return false, "ext4 whose options in effect could not be read (/proc/fs/ext4), so whether it has a journal is unknown and every write syncs its own files"
		}
		switch data, _ := info.Option("data"); data {
		case "ordered":
			return true, "ext4 with a journal in data=ordered mode: proven by the power-loss test on real images"
		case "":
			return false, "ext4 without a journal: a power loss can leave the directory in any state, so every write syncs its own files (even so, the power-loss test saw a synced file come back zero-filled after e2fsck: use a journal where a write must survive a power loss; docs/durability.md)"
		default:
			return false, "ext4 data=" + data + ": not proven by the power-loss test, so every write syncs its own files"
		}
	case "xfs", "btrfs":
		return true, info.Type + ": proven by the power-loss test on real images"
	case "":
		return false, "the filesystem could not be identified, so every write syncs its own files"
	}
	return false, info.Type + " is not among the filesystems the power-loss test proves (ext4 data=ordered, XFS, btrfs), so every write syncs its own files"
}

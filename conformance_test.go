package taskgraph_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

func TestConformanceFileStore(t *testing.T) {
	taskgraphtest.Run(t, func(t *testing.T) tg.Store {
		return openStore(t, t.TempDir())
	})
}

// TestConformanceFileStoreSyncEachWrite runs the suite against a FileStore
// that makes every write durable on its own, whatever
// TASKGRAPH_TEST_PROTOCOL says.
func TestConformanceFileStoreSyncEachWrite(t *testing.T) {
	taskgraphtest.Run(t, func(t *testing.T) tg.Store {
		s := openStore(t, t.TempDir(), tg.WithSyncEachWrite())
		require.Equal(t, tg.ProtocolSyncEachWrite, s.Durability().Protocol)
		return s
	})
}

func TestConformanceFileStoreWithoutSync(t *testing.T) {
	taskgraphtest.Run(t, func(t *testing.T) tg.Store {
		return openStore(t, t.TempDir(), tg.WithoutSync())
	})
}

func TestConformanceMemStore(t *testing.T) {
	taskgraphtest.Run(t, func(t *testing.T) tg.Store { return tg.NewMemStore() })
}

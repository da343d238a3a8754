package taskgraph_test

import (
	"testing"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

func TestConformanceFileStore(t *testing.T) {
	taskgraphtest.Run(t, func(t *testing.T) tg.Store {
		return openStore(t, t.TempDir())
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

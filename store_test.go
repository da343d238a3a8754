package taskgraph_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph/taskgraph"
	"github.com/taskgraph/taskgraph/taskgraphtest"
)

var ctx = context.Background()

func openStore(t testing.TB, dir string, opts ...tg.Option) *tg.FileStore {
	t.Helper()
	s, err := tg.Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

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

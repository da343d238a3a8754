package hub_test

import (
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
	"github.com/taskgraph-dev/taskgraph/pgstore"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

var ctx = context.Background()

// serve puts a hub in front of store, in this process, and returns a
// client of it with an admin's token. The hub and store close when the
// test ends.
func serve(t testing.TB, store hub.Store) *hub.Client {
	t.Helper()
	c, _ := serveAs(t, store, hub.Admin)
	return c
}

// serveAs is serve with a token of role, and returns the tokens too.
func serveAs(t testing.TB, store hub.Store, role hub.Role) (*hub.Client, *hub.MemTokens) {
	t.Helper()
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "me", role)
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	api := hub.NewServer(store, tokens, hub.WithRate(0, 0)) // the suites measure the store, not the rate
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { api.Close() }) // ends the streams first
	c, err := hub.NewClient(srv.URL, tok)
	require.NoError(t, err)
	return c, tokens
}

func openFile(t testing.TB, opts ...tg.Option) *tg.FileStore {
	t.Helper()
	s, err := tg.Open(t.TempDir(), opts...)
	require.NoError(t, err)
	return s
}

// pool connects to $TASKGRAPH_POSTGRES_URL; without it the test is
// skipped, saying so.
func pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := os.Getenv("TASKGRAPH_POSTGRES_URL")
	if url == "" {
		t.Skip("set TASKGRAPH_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the hub in front of PostgreSQL; .ci/run sets it")
	}
	p, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	require.NoError(t, p.Ping(ctx), "PostgreSQL at $TASKGRAPH_POSTGRES_URL is unreachable")
	t.Cleanup(p.Close)
	return p
}

// openPG opens a new graph of p, removed when the test ends.
func openPG(t testing.TB, p *pgxpool.Pool, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	graph := "hub_" + strings.NewReplacer("/", "_", "=", "_").Replace(t.Name()) + "_" + time.Now().Format("150405.000000000")
	s, err := pgstore.Open(ctx, p, graph, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, graph) })
	return s
}

func TestConformanceMemStore(t *testing.T) {
	taskgraphtest.Run(t, func(t *testing.T) tg.Store { return serve(t, tg.NewMemStore()) })
}

func TestConformanceFileStore(t *testing.T) {
	taskgraphtest.Run(t, func(t *testing.T) tg.Store { return serve(t, openFile(t)) })
}

func TestConformancePostgres(t *testing.T) {
	p := pool(t)
	taskgraphtest.Run(t, func(t *testing.T) tg.Store { return serve(t, openPG(t, p)) })
}

func TestAgreeMemStore(t *testing.T) {
	taskgraphtest.Agree(t, func(t *testing.T, now func() time.Time) tg.Store {
		return serve(t, tg.NewMemStore(tg.WithClock(now)))
	})
}

func TestAgreeFileStore(t *testing.T) {
	taskgraphtest.Agree(t, func(t *testing.T, now func() time.Time) tg.Store {
		return serve(t, openFile(t, tg.WithClock(now), tg.WithoutSync()))
	})
}

func TestAgreePostgres(t *testing.T) {
	p := pool(t)
	taskgraphtest.Agree(t, func(t *testing.T, now func() time.Time) tg.Store {
		return serve(t, openPG(t, p, pgstore.WithClock(now)))
	})
}

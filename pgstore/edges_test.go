package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// poolWith connects to $TASKGRAPH_POSTGRES_URL with runtime parameters of
// its own (search_path, application_name), closed when the test ends.
func poolWith(t *testing.T, params map[string]string) *pgxpool.Pool {
	t.Helper()
	pool(t) // skips without a database
	cfg, err := pgxpool.ParseConfig(os.Getenv("TASKGRAPH_POSTGRES_URL"))
	require.NoError(t, err)
	for k, v := range params {
		cfg.ConnConfig.RuntimeParams[k] = v
	}
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// TestValidationBeforeSQL: text that is not valid UTF-8 or holds NUL is
// refused with ErrInvalid before any SQL is sent — the pool is closed, so
// any statement would fail otherwise. (PostgreSQL answered with a raw
// SQLSTATE 22021 that matched no sentinel, where the file store accepted
// the same subject.)
func TestValidationBeforeSQL(t *testing.T) {
	p := poolWith(t, nil)
	s := open(t, p, graphName(t))
	p.Close()
	for _, bad := range []string{"nul\x00", "\xff"} {
		for name, write := range map[string]func() error{
			"create": func() error { _, err := s.Create(ctx, taskgraph.NewTask{Subject: bad}); return err },
			"metadata": func() error {
				_, err := s.Create(ctx, taskgraph.NewTask{Subject: "x", Metadata: map[string]any{"k": bad}})
				return err
			},
			"update":     func() error { _, err := s.Update(ctx, 1, taskgraph.Patch{Description: &bad}); return err },
			"claim":      func() error { _, err := s.Claim(ctx, 1, bad); return err },
			"claim next": func() error { _, err := s.ClaimNext(ctx, bad); return err },
			"load":       func() error { return s.Load(ctx, []taskgraph.Task{{ID: 5, Subject: bad, Status: taskgraph.Pending}}) },
		} {
			err := write()
			require.ErrorIs(t, err, taskgraph.ErrInvalid, "%s %q", name, bad)
			assert.NotContains(t, err.Error(), "closed pool", "%s: no SQL was sent", name)
		}
	}
	_, err := s.Create(ctx, taskgraph.NewTask{Subject: "valid"})
	require.Error(t, err, "a valid write does reach the (closed) pool")
	assert.NotErrorIs(t, err, taskgraph.ErrInvalid)
}

// TestGraphNames: a graph name is checked at Open, before any SQL, and
// bounded so that every notification and index entry that carries it fits.
// (A 10,000-character name opened fine, then every write failed with
// "payload string too long".)
func TestGraphNames(t *testing.T) {
	closed := poolWith(t, nil)
	closed.Close()
	for _, bad := range []string{"", strings.Repeat("g", 10_000), strings.Repeat("g", pgstore.MaxGraphName+1), "tab\there", "new\nline", "nul\x00", "\xff"} {
		_, err := pgstore.Open(ctx, closed, bad)
		require.ErrorIs(t, err, taskgraph.ErrInvalid, "%.40q", bad)
		assert.Contains(t, err.Error(), "use a name of 1 to 256 bytes")
	}

	p := pool(t)
	// The longest name: multi-byte UTF-8, cut to MaxGraphName bytes and
	// back to whole runes.
	long := fmt.Sprintf("%d-", rand.Int64()) + strings.Repeat("é", pgstore.MaxGraphName)
	long = strings.ToValidUTF8(long[:pgstore.MaxGraphName], "")
	s := open(t, p, long)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := s.Watch(wctx)
	require.NoError(t, err)
	a, err := s.Create(ctx, taskgraph.NewTask{Subject: "in a long-named graph"})
	require.NoError(t, err)
	select {
	case e := <-events:
		assert.Equal(t, taskgraph.Created, e.Kind)
		assert.Equal(t, a.ID, e.Task.ID)
	case <-wctx.Done():
		t.Fatal("no notification for a graph with a name of the longest length")
	}
}

// TestOpenWithoutCreate: WithoutCreate creates nothing — no schema, no
// graph — and a graph that was never created is an error matching
// taskgraph.ErrNotFound that names it.
func TestOpenWithoutCreate(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	_, err := pgstore.Open(ctx, p, graph, pgstore.WithoutCreate())
	require.ErrorIs(t, err, taskgraph.ErrNotFound)
	assert.Contains(t, err.Error(), graph)
	var n int
	require.NoError(t, p.QueryRow(ctx, `SELECT count(*) FROM taskgraph_graphs WHERE name = $1`, graph).Scan(&n))
	assert.Zero(t, n, "the graph was not created")

	s := open(t, p, graph)
	_, err = s.Create(ctx, taskgraph.NewTask{Subject: "one"})
	require.NoError(t, err)
	ro, err := pgstore.Open(ctx, p, graph, pgstore.WithoutCreate())
	require.NoError(t, err)
	all, err := ro.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1)

	// A database (here: a schema) where taskgraph never ran.
	schema := fmt.Sprintf("tg_empty_%d", rand.Uint32())
	_, err = p.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(context.Background(), `DROP SCHEMA `+schema+` CASCADE`) })
	empty := poolWith(t, map[string]string{"search_path": schema})
	_, err = pgstore.Open(ctx, empty, graph, pgstore.WithoutCreate())
	require.ErrorIs(t, err, taskgraph.ErrNotFound)
	assert.Contains(t, err.Error(), "no taskgraph schema")
	var tables int
	require.NoError(t, p.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, schema).Scan(&tables))
	assert.Zero(t, tables, "no schema was created")
}

// TestWatchEndsWhenTheConnectionIsLost: a watch whose connection dies
// ends, and its last event says why — not ErrClosed, which is for a store
// that was closed. (It used to end silently: a consumer could not tell
// "context done" from "database gone".)
func TestWatchEndsWhenTheConnectionIsLost(t *testing.T) {
	app := fmt.Sprintf("tgwatch%d", rand.Uint32())
	p := poolWith(t, map[string]string{"application_name": app})
	s := open(t, p, graphName(t))
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := s.Watch(wctx)
	require.NoError(t, err)
	admin := pool(t)
	var killed int
	require.Eventually(t, func() bool {
		err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, app).Scan(&killed)
		return err == nil && killed == 1
	}, 10*time.Second, 50*time.Millisecond)
	var last taskgraph.Event
	for e := range events {
		last = e
	}
	require.NoError(t, wctx.Err(), "the watch ended by itself")
	assert.Equal(t, taskgraph.Ended, last.Kind)
	require.Error(t, last.Err)
	assert.NotErrorIs(t, last.Err, taskgraph.ErrClosed)
	assert.Contains(t, last.Err.Error(), "pgstore: watch")
}

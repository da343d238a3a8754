package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

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

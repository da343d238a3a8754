package pgtokens_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
	"github.com/taskgraph-dev/taskgraph/hub/pgtokens"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

var ctx = context.Background()

// pool connects to $TASKGRAPH_POSTGRES_URL; .ci/run sets it, and there a
// test that cannot reach PostgreSQL fails.
func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	url := os.Getenv("TASKGRAPH_POSTGRES_URL")
	if url == "" {
		t.Skip("PGTOKENS TESTS NOT RUN: set TASKGRAPH_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable); .ci/run sets it")
	}
	p, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	require.NoError(t, p.Ping(ctx), "PostgreSQL at $TASKGRAPH_POSTGRES_URL is unreachable")
	t.Cleanup(p.Close)
	return p
}

// graph opens a new graph of its own in the database.
func graph(t *testing.T, p *pgxpool.Pool) *pgstore.Store {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	s, err := pgstore.Open(ctx, p, "pgtokens-"+hex.EncodeToString(b[:]))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// Tokens in PostgreSQL: hashes only, one per name, per graph; revoking
// counts at once for every process; the graph must exist.
func TestTokens(t *testing.T) {
	p := pool(t)
	s := graph(t, p)
	_, err := pgtokens.Open(ctx, p, "no-such-graph-"+s.Graph())
	require.ErrorIs(t, err, tg.ErrNotFound)

	toks, err := pgtokens.Open(ctx, p, s.Graph())
	require.NoError(t, err)
	_, err = toks.Identify(ctx, "tgh_anything")
	require.ErrorIs(t, err, hub.ErrUnauthorized, "no token yet")

	a, err := toks.Add(ctx, "agent-1", hub.Agent)
	require.NoError(t, err)
	v, err := toks.Add(ctx, "watcher", hub.Viewer)
	require.NoError(t, err)
	_, err = toks.Add(ctx, "agent-1", hub.Admin)
	var invalid *tg.InvalidError
	require.ErrorAs(t, err, &invalid, "a name is taken once")
	for _, bad := range []string{"", "has space", strings.Repeat("x", 65)} {
		_, err = toks.Add(ctx, bad, hub.Agent)
		require.ErrorAs(t, err, &invalid, "%q", bad)
	}
	_, err = toks.Add(ctx, "x", hub.Role("root"))
	require.ErrorAs(t, err, &invalid)

	who, err := toks.Identify(ctx, a)
	require.NoError(t, err)
	assert.Equal(t, hub.Identity{Name: "agent-1", Role: hub.Agent}, who)
	other, err := pgtokens.Open(ctx, p, s.Graph()) // another process
	require.NoError(t, err)
	who, err = other.Identify(ctx, v)
	require.NoError(t, err)
	assert.Equal(t, hub.Identity{Name: "watcher", Role: hub.Viewer}, who)
	_, err = toks.Identify(ctx, a+"x")
	require.ErrorIs(t, err, hub.ErrUnauthorized)
	_, err = toks.Identify(ctx, "")
	require.ErrorIs(t, err, hub.ErrUnauthorized)

	// Only hashes: no column of any row holds a token.
	var dump string
	require.NoError(t, p.QueryRow(ctx, `SELECT string_agg(t::text, ' ') FROM taskgraph_hub_tokens t WHERE graph = $1`, s.Graph()).Scan(&dump))
	assert.NotContains(t, dump, a[4:])
	assert.NotContains(t, dump, v[4:])

	infos, err := toks.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 2)
	assert.Equal(t, "agent-1", infos[0].Name)
	assert.Equal(t, hub.Viewer, infos[1].Role)

	// Another graph's tokens are its own.
	s2 := graph(t, p)
	toks2, err := pgtokens.Open(ctx, p, s2.Graph())
	require.NoError(t, err)
	_, err = toks2.Identify(ctx, a)
	require.ErrorIs(t, err, hub.ErrUnauthorized, "a token of one graph is not one of another")
	_, err = toks2.Add(ctx, "agent-1", hub.Agent)
	require.NoError(t, err, "names are per graph")

	require.NoError(t, other.Revoke(ctx, "agent-1"), "another process revokes")
	_, err = toks.Identify(ctx, a)
	require.ErrorIs(t, err, hub.ErrUnauthorized, "revoked at once")
	require.ErrorIs(t, toks.Revoke(ctx, "agent-1"), tg.ErrNotFound)
}

// A hub in front of pgstore with its tokens in the same database: the
// client works as the token's identity, and a token revoked by another
// process is refused at its next request.
func TestHubWithTokensInPostgres(t *testing.T) {
	p := pool(t)
	s := graph(t, p)
	toks, err := pgtokens.Open(ctx, p, s.Graph())
	require.NoError(t, err)
	tok, err := toks.Add(ctx, "builder", hub.Agent)
	require.NoError(t, err)
	srv := hub.NewServer(s, toks)
	ts := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); ts.Close() })
	c, err := hub.NewClient(ts.URL, tok)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = c.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	got, err := c.ClaimNext(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, "builder", got.Owner)
	_, err = c.Release(ctx, got.ID, "someone-else")
	require.ErrorIs(t, err, hub.ErrForbidden)

	again, err := pgtokens.Open(ctx, p, s.Graph())
	require.NoError(t, err)
	require.NoError(t, again.Revoke(ctx, "builder"))
	_, err = c.Get(ctx, got.ID)
	require.ErrorIs(t, err, hub.ErrUnauthorized)
}

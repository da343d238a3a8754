// Package pgtokens keeps the tokens of a hub in front of a PostgreSQL
// graph in the database itself, beside the graph: one table,
// taskgraph_hub_tokens, a row per token of each graph, holding its name,
// role, creation time and SHA-256 — never the token.
//
// It is a package of its own so that a program that only talks to a hub
// (hub.NewClient) does not link a PostgreSQL driver.
package pgtokens

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// schema creates the table if it is missing. A graph's tokens go with
// the graph (ON DELETE CASCADE). The table is the hub's, not pgstore's:
// pgstore.Migrate does not know it, and Open creates it.
const schema = `CREATE TABLE IF NOT EXISTS taskgraph_hub_tokens (
    graph   text NOT NULL REFERENCES taskgraph_graphs (name) ON DELETE CASCADE,
    name    text NOT NULL,
    role    text NOT NULL CHECK (role IN ('viewer', 'agent', 'admin')),
    created timestamptz NOT NULL,
    sha256  text NOT NULL,
    PRIMARY KEY (graph, name)
)`

// schemaLock serialises Open's CREATE TABLE IF NOT EXISTS, which two
// sessions running it at once may both fail (a unique violation in the
// catalog).
const schemaLock = 0x7467687562746f6b // "tghubtok"

// Tokens keeps the tokens of one graph in PostgreSQL. It implements
// hub.TokenStore. The hub reads them at every request, so that a token
// added or revoked by another process counts from the next request.
type Tokens struct {
	pool  *pgxpool.Pool
	graph string
}

// Open returns the tokens of graph in the database of pool, creating
// their table if it is missing. The graph must exist (pgstore.Open
// creates it): it returns an error matching tg.ErrNotFound otherwise.
func Open(ctx context.Context, pool *pgxpool.Pool, graph string) (*Tokens, error) {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(schemaLock)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgtokens: creating the table of tokens: %w", err)
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM taskgraph_graphs WHERE name = $1)`, graph).Scan(&exists); err != nil {
		return nil, fmt.Errorf("pgtokens: %w", err)
	}
	if !exists {
		return nil, fmt.Errorf("pgtokens: no graph %q in the database: %w", graph, tg.ErrNotFound)
	}
	return &Tokens{pool: pool, graph: graph}, nil
}

// Add implements hub.TokenStore.
func (t *Tokens) Add(ctx context.Context, name string, role hub.Role) (string, error) {
	tok, info, err := hub.NewToken(name, role)
	if err != nil {
		return "", err
	}
	_, err = t.pool.Exec(ctx, `INSERT INTO taskgraph_hub_tokens (graph, name, role, created, sha256) VALUES ($1, $2, $3, $4, $5)`,
		t.graph, info.Name, string(info.Role), info.Created, info.Hash)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23505": // unique_violation
		return "", &tg.InvalidError{Field: "name", Reason: fmt.Sprintf("a token named %q exists: revoke it first", name)}
	case errors.As(err, &pe) && pe.Code == "23503": // foreign_key_violation: the graph went
		return "", fmt.Errorf("pgtokens: no graph %q in the database: %w", t.graph, tg.ErrNotFound)
	case err != nil:
		return "", fmt.Errorf("pgtokens: %w", err)
	}
	return tok, nil
}

// List implements hub.TokenStore.
func (t *Tokens) List(ctx context.Context) ([]hub.TokenInfo, error) {
	rows, err := t.pool.Query(ctx, `SELECT name, role, created, sha256 FROM taskgraph_hub_tokens WHERE graph = $1 ORDER BY name`, t.graph)
	if err != nil {
		return nil, fmt.Errorf("pgtokens: %w", err)
	}
	infos, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (hub.TokenInfo, error) {
		var i hub.TokenInfo
		var role string
		err := r.Scan(&i.Name, &role, &i.Created, &i.Hash)
		i.Role, i.Created = hub.Role(role), i.Created.UTC()
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgtokens: %w", err)
	}
	return infos, nil
}

// Revoke implements hub.TokenStore.
func (t *Tokens) Revoke(ctx context.Context, name string) error {
	tag, err := t.pool.Exec(ctx, `DELETE FROM taskgraph_hub_tokens WHERE graph = $1 AND name = $2`, t.graph, name)
	if err != nil {
		return fmt.Errorf("pgtokens: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("no token named %q: %w", name, tg.ErrNotFound)
	}
	return nil
}

// Identify implements hub.Tokens: it reads the graph's tokens and
// compares the token's hash with each in constant time
// (hub.IdentifyAmong), rather than looking the hash up. When the tokens
// cannot be read it returns that error, which the hub answers as an
// internal error (500): the request is refused and nothing is done, but
// the token is not called unknown.
func (t *Tokens) Identify(ctx context.Context, token string) (hub.Identity, error) {
	if token == "" {
		return hub.IdentifyAmong(nil, "")
	}
	infos, err := t.List(ctx)
	if err != nil {
		return hub.Identity{}, err
	}
	return hub.IdentifyAmong(infos, token)
}

// Package pgstore is a taskgraph.Store on PostgreSQL, for agents spread
// over several machines: the graph lives in a database every machine
// reaches, and the database, not a file lock, serialises the writes.
//
// Every decision — what an operation may do to a task, and the error when
// it may not — is taken by taskgraph.Rules, as in the file and memory
// stores. What pgstore keeps for itself is what only SQL can do: locking
// the rows a write touches, the SKIP LOCKED claim, the cycle search over
// the table, the count of backward edges, persistence, and LISTEN/NOTIFY.
//
// Several named graphs share one database; the graph name plays the role
// of the task directory. The schema is created by versioned migrations
// embedded in the package, applied by Open (or Migrate) under an advisory
// lock, so many processes may start at once.
//
// Concurrency: every operation is one transaction. Claims and completions
// lock only the rows they touch, and ClaimNext picks the lowest ready id with
// FOR UPDATE SKIP LOCKED, so workers run in parallel without ever claiming
// one task twice. Writes that add edges or delete tasks serialise per graph
// with a transaction-scoped advisory lock, so two concurrent edits can never
// close a cycle between them. Leases expire by the database's clock, or by
// the clock given with WithClock.
package pgstore

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph/taskgraph"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLockID is the advisory lock that serialises migrations.
const migrateLockID = 0x7461736b67726170 // "taskgrap"

// Migrate brings the schema up to date. It is safe to run from many
// processes at once; Open calls it.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLockID)); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLockID))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS taskgraph_schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM taskgraph_schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	files, _ := migrations.ReadDir("migrations")
	for _, f := range files { // named NNN_what.sql, in order
		var version int
		if _, err := fmt.Sscanf(f.Name(), "%d_", &version); err != nil || version <= current {
			continue
		}
		sql, _ := migrations.ReadFile("migrations/" + f.Name())
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO taskgraph_schema_migrations (version) VALUES ($1)`, version)
			return err
		})
		if err != nil {
			return fmt.Errorf("pgstore: migration %s: %w", f.Name(), err)
		}
	}
	return nil
}

// Store is a taskgraph.Store on one named graph of a PostgreSQL database.
type Store struct {
	pool   *pgxpool.Pool
	graph  string
	lockID int64            // advisory lock of this graph's edge edits
	clock  func() time.Time // nil: the database's clock_timestamp()
	closed atomic.Bool
}

var (
	_ taskgraph.Store   = (*Store)(nil)
	_ taskgraph.Loader  = (*Store)(nil)
	_ taskgraph.Watcher = (*Store)(nil)
)

// Option configures Open.
type Option func(*Store)

// WithClock makes the store take every timestamp and every lease decision
// from now instead of the database's clock_timestamp(): for tests that
// drive leases deterministically. Times are kept to the microsecond, as
// PostgreSQL stores them. Every process sharing a graph should use the
// same clock.
func WithClock(now func() time.Time) Option {
	return func(s *Store) { s.clock = now }
}

// Open migrates the schema if needed and returns the store of graph, which
// is created empty if it does not exist. The pool stays the caller's: Close
// does not close it.
func Open(ctx context.Context, pool *pgxpool.Pool, graph string, opts ...Option) (*Store, error) {
	if graph == "" || strings.ContainsAny(graph, "\t\n\x00") {
		return nil, fmt.Errorf("pgstore: graph %q: want a non-empty name without tabs or newlines: %w", graph, taskgraph.ErrInvalid)
	}
	if err := Migrate(ctx, pool); err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO taskgraph_graphs (name) VALUES ($1) ON CONFLICT DO NOTHING`, graph); err != nil {
		return nil, fmt.Errorf("pgstore: open %q: %w", graph, err)
	}
	h := fnv.New64a()
	h.Write([]byte("taskgraph:" + graph))
	s := &Store{pool: pool, graph: graph, lockID: int64(h.Sum64())}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Graph returns the name of the store's graph.
func (s *Store) Graph() string { return s.graph }

// Close makes later calls return taskgraph.ErrClosed. The pool is not
// closed.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// usable reports why the store cannot run an operation now, if it cannot:
// in the order the in-memory stores check.
func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed.Load() {
		return taskgraph.ErrClosed
	}
	return nil
}

// begin checks the store and ctx, and runs fn in a transaction, retrying it
// when PostgreSQL resolves a deadlock or serialisation failure by aborting it.
func (s *Store) begin(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") && attempt < 20 {
			continue
		}
		return err
	}
}

// serialise takes the graph's advisory lock until the transaction ends.
func (s *Store) serialise(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.lockID)
	return err
}

// at returns the time of an operation as a query parameter: the store's
// clock, to the microsecond, or nil to have the query take the database's
// clock_timestamp() (see nowSQL). Call it once per operation, so that
// every statement of the operation decides by the same time.
func (s *Store) at() *time.Time {
	if s.clock == nil {
		return nil
	}
	t := s.clock().UTC().Truncate(time.Microsecond)
	return &t
}

// nowSQL is the time of an operation in a query whose parameter $N is at().
func nowSQL(n int) string { return fmt.Sprintf("coalesce($%d::timestamptz, clock_timestamp())", n) }

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
// lock only the rows they touch, and ClaimNext picks the most urgent ready
// task (then the lowest id) with FOR UPDATE SKIP LOCKED, so workers run in
// parallel without ever claiming one task twice. Writes that add edges or delete tasks serialise per graph
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
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLockID is the advisory lock that serialises migrations.
const migrateLockID = 0x7461736b67726170 // "taskgrap"

// cleanupTimeout bounds the statements that clean up after an operation
// (releasing a lock, UNLISTEN): they run even when the operation's context
// is done, so they need a deadline of their own.
const cleanupTimeout = 5 * time.Second

// cleanupContext returns a context for cleaning up after an operation on
// ctx: not cancelled with ctx, bounded by cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

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
	defer func() {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if _, err := conn.Exec(cctx, `SELECT pg_advisory_unlock($1)`, int64(migrateLockID)); err != nil {
			// The lock belongs to the session: end it rather than hand a
			// connection that still holds it back to the pool.
			conn.Conn().Close(cctx)
		}
	}()
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
		err := retry(ctx, func() error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, string(sql)); err != nil {
					return err
				}
				_, err := tx.Exec(ctx, `INSERT INTO taskgraph_schema_migrations (version) VALUES ($1)`, version)
				return err
			})
		})
		if err != nil {
			return fmt.Errorf("pgstore: migration %s: %w", f.Name(), err)
		}
	}
	return nil
}

// schemaVersion is the version of the newest embedded migration.
func schemaVersion() int {
	files, _ := migrations.ReadDir("migrations")
	latest := 0
	for _, f := range files {
		var version int
		if _, err := fmt.Sscanf(f.Name(), "%d_", &version); err == nil {
			latest = max(latest, version)
		}
	}
	return latest
}

// Store is a taskgraph.Store on one named graph of a PostgreSQL database.
type Store struct {
	pool     *pgxpool.Pool
	graph    string
	lockID   int64            // advisory lock of this graph's edge edits
	clock    func() time.Time // nil: the database's clock_timestamp()
	noCreate bool
	closed   atomic.Bool
	closing  sync.Once
	done     chan struct{} // closed by Close, to end watches
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

// WithoutCreate makes Open create nothing — neither the schema nor the
// graph — and fail with an error matching taskgraph.ErrNotFound when the
// graph has never been created: for commands that only read. Writes
// through the store work as usual on a graph that exists.
func WithoutCreate() Option {
	return func(s *Store) { s.noCreate = true }
}

// MaxGraphName is the longest graph name, in bytes, that Open accepts.
// Every change notification carries the name, and PostgreSQL bounds a
// notification's payload (8,000 bytes) and an index entry (about 2,700).
const MaxGraphName = 256

// checkGraphName validates a graph name before any SQL.
func checkGraphName(graph string) error {
	var why string
	switch {
	case graph == "":
		why = "it is empty"
	case len(graph) > MaxGraphName:
		why = fmt.Sprintf("it is %d bytes long, over %d (MaxGraphName)", len(graph), MaxGraphName)
	case !utf8.ValidString(graph):
		why = "it is not valid UTF-8"
	case strings.ContainsAny(graph, "\t\n\r\x00"):
		why = "it holds a tab, newline or NUL"
	default:
		return nil
	}
	return fmt.Errorf("pgstore: graph name %.80q: %s; use a name of 1 to %d bytes of UTF-8 text without tabs, newlines or NUL: %w", graph, why, MaxGraphName, taskgraph.ErrInvalid)
}

// graphNotFoundError reports a graph that a store opened WithoutCreate
// cannot find. It matches taskgraph.ErrNotFound.
type graphNotFoundError struct{ graph, why string }

func (e *graphNotFoundError) Error() string {
	return fmt.Sprintf("pgstore: open %q: the graph does not exist (%s); it is not created when opening WithoutCreate", e.graph, e.why)
}

// Is reports whether target is taskgraph.ErrNotFound.
func (e *graphNotFoundError) Is(target error) bool { return target == taskgraph.ErrNotFound }

// Open migrates the schema if needed and returns the store of graph, which
// is created empty if it does not exist (see WithoutCreate). The graph name
// is checked first (see MaxGraphName). The pool stays the caller's: Close
// does not close it.
func Open(ctx context.Context, pool *pgxpool.Pool, graph string, opts ...Option) (*Store, error) {
	if err := checkGraphName(graph); err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write([]byte("taskgraph:" + graph))
	s := &Store{pool: pool, graph: graph, lockID: int64(h.Sum64()), done: make(chan struct{})}
	for _, o := range opts {
		o(s)
	}
	if s.noCreate {
		if err := s.exists(ctx); err != nil {
			return nil, err
		}
		return s, nil
	}
	if err := Migrate(ctx, pool); err != nil {
		return nil, err
	}
	err := retry(ctx, func() error {
		_, err := pool.Exec(ctx, `INSERT INTO taskgraph_graphs (name) VALUES ($1) ON CONFLICT DO NOTHING`, graph)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: open %q: %w", graph, err)
	}
	return s, nil
}

// exists checks, creating nothing, that the schema is current and the
// graph exists.
func (s *Store) exists(ctx context.Context) error {
	var schema bool
	var version int
	var found bool
	err := retry(ctx, func() error {
		err := s.pool.QueryRow(ctx, `SELECT to_regclass('taskgraph_graphs') IS NOT NULL AND to_regclass('taskgraph_schema_migrations') IS NOT NULL`).Scan(&schema)
		if err != nil || !schema {
			return err
		}
		if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM taskgraph_schema_migrations`).Scan(&version); err != nil {
			return err
		}
		return s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM taskgraph_graphs WHERE name = $1)`, s.graph).Scan(&found)
	})
	switch {
	case err != nil:
		return fmt.Errorf("pgstore: open %q: %w", s.graph, err)
	case !schema:
		return &graphNotFoundError{graph: s.graph, why: "the database has no taskgraph schema"}
	case version < schemaVersion():
		return fmt.Errorf("pgstore: open %q: the database's taskgraph schema is at version %d and this pgstore needs %d: open it once without WithoutCreate (or call Migrate) to migrate it", s.graph, version, schemaVersion())
	case !found:
		return &graphNotFoundError{graph: s.graph, why: "no graph of that name"}
	}
	return nil
}

// Graph returns the name of the store's graph.
func (s *Store) Graph() string { return s.graph }

// Close makes later calls return taskgraph.ErrClosed and ends the store's
// watches (their last event is of kind taskgraph.Ended, with ErrClosed).
// The pool is not closed.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.closing.Do(func() { close(s.done) })
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

// retry runs fn, which runs one statement or one transaction, again when
// PostgreSQL resolves a deadlock or a serialisation failure by aborting it,
// or refuses a key that a concurrent transaction stored first (the retry
// then finds that task by its key). Every statement of the package runs
// inside it.
func retry(ctx context.Context, fn func() error) error {
	for attempt := 0; ; attempt++ {
		err := fn()
		var pe *pgconn.PgError
		if errors.As(err, &pe) && attempt < 20 && ctx.Err() == nil &&
			(pe.Code == "40P01" || pe.Code == "40001" || pe.Code == "23505" && pe.ConstraintName == "taskgraph_tasks_key") {
			continue
		}
		return err
	}
}

// begin checks the store and ctx, and runs fn in a transaction, retrying it
// when PostgreSQL resolves a deadlock or serialisation failure by aborting it.
func (s *Store) begin(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	return retry(ctx, func() error { return pgx.BeginFunc(ctx, s.pool, fn) })
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

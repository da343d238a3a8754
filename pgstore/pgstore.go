// The Store: opening a named graph, with its options, and closing it.

package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
)

// Store is a taskgraph.Store on one named graph of a PostgreSQL database.
type Store struct {
	pool     *pgxpool.Pool
	graph    string
	lockID   int64            // advisory lock of this graph's edge edits
	clock    func() time.Time // nil: the database's clock_timestamp()
	noCreate bool
	log      *slog.Logger
	listed   atomic.Int64 // how many tasks the last List of the whole graph read
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

// WithLogger gives the store a logger for what no call returns: the
// graph Open created, and a watch that stopped on an error or whose
// connection could not be made to stop listening. Without it the store
// logs nothing.
func WithLogger(l *slog.Logger) Option {
	return func(s *Store) {
		if l != nil {
			s.log = l
		}
	}
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
	s := &Store{pool: pool, graph: graph, lockID: int64(h.Sum64()), done: make(chan struct{}), log: slog.New(slog.DiscardHandler)}
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
	created := false
	err := retry(ctx, func() error {
		tag, err := pool.Exec(ctx, `INSERT INTO taskgraph_graphs (name) VALUES ($1) ON CONFLICT DO NOTHING`, graph)
		created = err == nil && tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgstore: open %q: %w", graph, err)
	}
	if created {
		s.log.Info("pgstore: created the graph", "graph", graph)
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

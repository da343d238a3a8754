// Concurrency limits per label. The limits live in taskgraph_limits; a
// write that moves a task carrying a limited label into in_progress takes
// a transaction-level advisory lock per such label, then counts the
// holders: two claims of one label are serialised, claims of other labels
// are not, and the one-statement ClaimNext leaves every task with a
// limited label to the Rulebook's transaction (unlimitedSQL).

package pgstore

import (
	"context"
	"hash/fnv"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
)

var _ taskgraph.Limiter = (*Store)(nil)

// SetLimit implements taskgraph.Limiter.
func (s *Store) SetLimit(ctx context.Context, label string, n int) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	if err := taskgraph.Rules.LimitArgs(label, n); err != nil { // before any SQL
		return err
	}
	return s.write(ctx, func(tx pgx.Tx) error {
		// The label's lock, as a claim takes it: no claim counts the
		// holders while the limit changes.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.labelLockID(label)); err != nil {
			return err
		}
		if n == 0 {
			_, err := tx.Exec(ctx, `DELETE FROM taskgraph_limits WHERE graph = $1 AND label = $2`, s.graph, label)
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO taskgraph_limits (graph, label, max) VALUES ($1, $2, $3)
			ON CONFLICT (graph, label) DO UPDATE SET max = excluded.max`, s.graph, label, n)
		return err
	})
}

// Limits implements taskgraph.Limiter.
func (s *Store) Limits(ctx context.Context) (map[string]int, error) {
	return readSettings(ctx, s, s.limits)
}

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// limits reads the graph's limits.
func (s *Store) limits(ctx context.Context, q querier) (map[string]int, error) {
	var n int32
	return perLabel(ctx, q, `SELECT label, max FROM taskgraph_limits WHERE graph = $1`, s.graph, []any{&n}, func() int { return int(n) })
}

// checkLimits refuses, with the Rulebook's *LimitError, a write that
// moves the tasks ts into in_progress at now beyond a limit. For each
// limited label they carry, in order, it takes the label's advisory lock
// until the transaction ends, then counts the other holders: those
// committed before the lock was granted are all seen, since each
// statement of a READ COMMITTED transaction takes a new snapshot.
func (s *Store) checkLimits(ctx context.Context, tx pgx.Tx, now time.Time, ts ...*taskgraph.Task) error {
	var labels []string
	for _, t := range ts {
		for _, l := range t.Labels {
			if !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
	}
	if len(labels) == 0 {
		return nil
	}
	slices.Sort(labels) // one order for every transaction: no deadlock
	// Every label's lock first (SetLimit takes it too), then the limits:
	// a limit that changes meanwhile is seen.
	for _, l := range labels {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.labelLockID(l)); err != nil {
			return err
		}
	}
	limits, err := s.limits(ctx, tx)
	if err != nil || len(limits) == 0 {
		return err
	}
	held := map[string]int{}
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = int64(t.ID)
	}
	for _, l := range labels {
		if _, ok := limits[l]; !ok {
			continue
		}
		var n int64
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM taskgraph_tasks t WHERE graph = $1 AND status = 'in_progress'
			AND labels @> ARRAY[$2::text] AND NOT (id = ANY($3)) AND (`+lapsesSQL+` IS NULL OR `+lapsesSQL+` > $4)`,
			s.graph, l, ids, now).Scan(&n); err != nil {
			return err
		}
		held[l] = int(n)
	}
	for _, t := range ts {
		if err := taskgraph.Rules.Limited(t, limits, func(l string) int { return held[l] }); err != nil {
			return err
		}
		for _, l := range t.Labels {
			held[l]++ // the next task of the write counts this one
		}
	}
	return nil
}

// labelLockID is the advisory lock of a label of this graph.
func (s *Store) labelLockID(label string) int64 {
	h := fnv.New64a()
	h.Write([]byte("taskgraph limit\x00" + s.graph + "\x00" + label))
	return int64(h.Sum64())
}

// Write keys (taskgraph.KeyRecorder): a keyed write records its key in
// its own transaction, in taskgraph_write_keys (migration 019).

package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskgraph-dev/taskgraph"
)

var _ taskgraph.KeyRecorder = (*Store)(nil)

// writeKeySQL records key $2 of graph $1 at $3 (see nowSQL) for the
// tasks $4 of the answer, with their revs as the transaction leaves
// them, and refused $5; it deletes up to 4 keys of the graph past the
// window ($6, in microseconds), so that the table holds about a window's
// keys.
var writeKeySQL = `WITH gone AS (
	DELETE FROM taskgraph_write_keys WHERE (graph, key) IN (
		SELECT graph, key FROM taskgraph_write_keys WHERE graph = $1 AND at < ` + nowSQL(3) + ` - make_interval(secs => $6::bigint / 1e6) LIMIT 4))
INSERT INTO taskgraph_write_keys (graph, key, at, tasks, revs, refused)
SELECT $1, $2, ` + nowSQL(3) + `, $4::bigint[],
	coalesce((SELECT array_agg(t.rev ORDER BY u.n) FROM unnest($4::bigint[]) WITH ORDINALITY u(id, n)
		JOIN taskgraph_tasks t ON t.graph = $1 AND t.id = u.id), '{}'), $5`

// queueWriteKey queues, in b, the record of the key in ctx, if any, for
// the tasks of the answer of tx (lazyTx.answer), and reports whether it
// did.
func (s *Store) queueWriteKey(ctx context.Context, b *pgx.Batch, tx *lazyTx) bool {
	key := taskgraph.WriteKeyOf(ctx)
	if key == "" {
		return false
	}
	b.Queue(writeKeySQL, s.graph, key, s.at(), int64s(tx.answer), tx.refused, taskgraph.WriteKeyWindow.Microseconds())
	return true
}

// writeKeyError is the error of a write whose key a write of the graph
// committed already: this one is rolled back, and the first stands.
func writeKeyError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "taskgraph_write_keys_pkey" {
		return fmt.Errorf("pgstore: a write with this key was committed already, by another attempt; this one was not applied (re-read): %w", taskgraph.ErrUnknownOutcome)
	}
	return err
}

// answerOf returns the tasks of a write's answer: what RecallWrite
// returns of it.
func answerOf(out any) []taskgraph.ID {
	switch v := out.(type) {
	case taskgraph.Task:
		if v.ID != 0 {
			return []taskgraph.ID{v.ID}
		}
	case []taskgraph.Task:
		ids := make([]taskgraph.ID, len(v))
		for i, t := range v {
			ids[i] = t.ID
		}
		return ids
	case taskgraph.Completion:
		if v.Task.ID != 0 {
			return []taskgraph.ID{v.Task.ID}
		}
	}
	return nil
}

// RecallWrite implements taskgraph.KeyRecorder: whether a write with key
// committed within taskgraph.WriteKeyWindow, from taskgraph_write_keys.
func (s *Store) RecallWrite(ctx context.Context, key string) (taskgraph.WriteRecord, error) {
	var r taskgraph.WriteRecord
	if err := s.usable(ctx); err != nil {
		return r, err
	}
	var at time.Time
	var tasks, revs []int64
	var refused bool
	err := retry(ctx, func() error {
		return s.pool.QueryRow(ctx, `SELECT at, tasks, revs, refused FROM taskgraph_write_keys
			WHERE graph = $1 AND key = $2 AND at >= `+nowSQL(3)+` - make_interval(secs => $4::bigint / 1e6)`,
			s.graph, key, s.at(), taskgraph.WriteKeyWindow.Microseconds()).Scan(&at, &tasks, &revs, &refused)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return r, nil
	case err != nil:
		return r, err
	case len(tasks) != len(revs):
		return r, fmt.Errorf("pgstore: the write key's row holds %d tasks and %d revs: %w", len(tasks), len(revs), taskgraph.ErrCorrupt)
	}
	r.Found, r.At, r.Refused = true, at.UTC(), refused
	for i := range tasks {
		r.Tasks = append(r.Tasks, taskgraph.ID(tasks[i]))
		r.Revs = append(r.Revs, revs[i])
	}
	return r, nil
}

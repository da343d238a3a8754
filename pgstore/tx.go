// How an operation runs its statements: in a transaction retried when
// PostgreSQL aborts it, under the graph's lock, at one time for them all.

package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// cleanupTimeout bounds the statements that clean up after an operation
// (releasing a lock, UNLISTEN): they run even when the operation's context
// is done, so they need a deadline of their own.
const cleanupTimeout = 5 * time.Second

// cleanupContext returns a context for cleaning up after an operation on
// ctx: not cancelled with ctx, bounded by cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
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

// transact runs the write fn in a transaction, as begin does, tells the
// watchers once it has committed (notifySQL), and returns what fn returned
// in the attempt that committed; on failure, the zero value and the
// error.
func transact[T any](ctx context.Context, s *Store, fn func(tx pgx.Tx) (T, error)) (T, error) {
	var out T
	var after afterCommit
	err := s.write(ctx, func(tx pgx.Tx) error {
		var err error
		after = afterCommit{} // a retried transaction decides again
		out, err = fn(tx)
		refused := errors.As(err, &after)
		if lt, ok := tx.(*lazyTx); ok {
			lt.answer, lt.refused = answerOf(out), refused
		}
		if refused {
			return nil // commit what fn wrote, then report after.err
		}
		return err
	})
	if err == nil {
		err = after.err
	}
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// afterCommit is an error that a transaction's function returns after
// writing what must stand: the transaction commits, and the operation
// returns err (a claim that failed its task because the lapse used its
// last attempt: taskgraph.ErrGaveUp).
type afterCommit struct{ err error }

func (a afterCommit) Error() string { return a.err.Error() }

// write runs the write fn in a transaction, as begin does, and tells the
// watchers once it has committed. Its BEGIN goes with its first statement
// (lazyTx), and its COMMIT with the notification (see notifySQL): a write
// costs a round trip per statement, no more.
func (s *Store) write(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	return retry(ctx, func() error {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release() // a connection left in a transaction is closed, not reused
		tx := &lazyTx{conn: conn.Conn()}
		if err := fn(tx); err != nil || tx.ended {
			if !tx.ended {
				cctx, cancel := cleanupContext(ctx)
				defer cancel()
				_ = tx.Rollback(cctx)
			}
			return err
		}
		b := &pgx.Batch{}
		keyed := false
		if tx.begun {
			keyed = s.queueWriteKey(ctx, b, tx)
			b.Queue(`COMMIT`)
		}
		b.Queue(notifySQL, s.graph)
		br := conn.SendBatch(ctx, b)
		defer br.Close()
		if !tx.begun {
			return nil
		}
		if keyed {
			if _, err := br.Exec(); err != nil {
				return writeKeyError(err) // the COMMIT rolls back
			}
		}
		ct, err := br.Exec()
		if err == nil && ct.String() == "ROLLBACK" { // as pgx's Commit
			err = pgx.ErrTxCommitRollback
		}
		return err // the notification's own result is not the write's
	})
}

// commit sends b, the last statements of the write tx, with its COMMIT
// and its notification (notifySQL), in one round trip (lazyTx.commitWith);
// the write's function returns after it, and write commits no more. In
// a transaction that is not a write's, it sends b alone.
func (s *Store) commit(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	if lt, ok := tx.(*lazyTx); ok {
		s.queueWriteKey(ctx, b, lt)
		return writeKeyError(lt.commitWith(ctx, b, notifySQL, s.graph))
	}
	return tx.SendBatch(ctx, b).Close()
}

// notifySQL wakes every watcher of the graph ($1: Watch, and so Work)
// after a write has committed. It is sent after the write's COMMIT, in the
// same round trip: the COMMIT ends the write's transaction there and then
// (its flush included), and the notification runs in a transaction of its
// own that writes nothing, so that the database-wide lock every notifying
// transaction takes at commit is held for no flush (migration 007). The
// write is done whatever happens to it: a notification that cannot be sent
// is not an error of the write; the watchers see its change at their next
// wake-up, which the next write gives.
const notifySQL = `SELECT pg_notify('taskgraph', $1)`

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

// A transaction whose BEGIN goes with its first statement.

package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskgraph-dev/taskgraph"
)

// lazyTx is a transaction on conn that sends its BEGIN in the same round
// trip as its first statement, not in one of its own: a write's first
// statement then costs one round trip, not two. The rest is conn's.
// Nested transactions and large objects are not supported (the package
// uses neither).
type lazyTx struct {
	conn  *pgx.Conn
	begun bool // BEGIN has been sent (whether or not what followed it failed)
	ended bool // committed by commitWith: nothing more may be sent
	// answer and refused are what the write's key records, if it has
	// one (queueWriteKey): the tasks of its answer, and whether it was
	// refused after writing. transact sets them.
	answer  []taskgraph.ID
	refused bool
}

var errLazyTx = errors.New("pgstore: not supported in a write's transaction")

// withBegin returns b with BEGIN first if it has not been sent yet, and
// whether it added it.
func (t *lazyTx) withBegin(b *pgx.Batch) (*pgx.Batch, bool) {
	if t.begun {
		return b, false
	}
	t.begun = true
	out := &pgx.Batch{QueuedQueries: append([]*pgx.QueuedQuery{{SQL: `BEGIN`}}, b.QueuedQueries...)}
	return out, true
}

// SendBatch sends b, after BEGIN if it is the first.
func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	b, begin := t.withBegin(b)
	br := t.conn.SendBatch(ctx, b)
	if begin {
		if _, err := br.Exec(); err != nil {
			return failedBatch{br, err}
		}
	}
	return br
}

// commitWith sends b, then COMMIT, then the notification notify (a
// statement that must not write: it runs in a transaction of its own once
// the COMMIT has ended this one), in one round trip, after BEGIN if b is
// the first: a write's last statements and its commit cost one round trip,
// not two. The functions of b's queries run as SendBatch's do.
//
// If a statement of b fails on the server, the rest of the batch is not
// run (the transaction is left failed, for the caller's rollback) and its
// error is returned. A function of b's queries that fails on what the
// server returned (a row that does not scan: not expected of rows this
// package wrote) fails too late to stop the COMMIT, which was sent with
// it: if the COMMIT went through, the error matches
// taskgraph.ErrUnknownOutcome, never one that says the write did not
// happen. So does any failure to hear back once the batch has gone out (a
// deadline passed, a connection dropped) unless the server was heard to
// refuse a statement or the COMMIT. The notification's own result is not
// the write's.
func (t *lazyTx) commitWith(ctx context.Context, b *pgx.Batch, notify string, args ...any) error {
	var fnErr error
	for _, q := range b.QueuedQueries {
		fn := q.Fn
		q.Fn = func(br pgx.BatchResults) error {
			if fn == nil {
				_, err := br.Exec()
				return err // a server error: the rest is not run
			}
			if err := fn(br); err != nil && fnErr == nil {
				fnErr = err // the rest is read: it has run
			}
			return nil
		}
	}
	committed := false
	var commitErr error // the server's answer to the COMMIT, when it did not commit
	b.Queue(`COMMIT`).Fn = func(br pgx.BatchResults) error {
		ct, err := br.Exec()
		switch {
		case err == nil && ct.String() == "ROLLBACK": // as pgx's Commit
			commitErr = pgx.ErrTxCommitRollback
		case err == nil:
			committed = true
		case unanswered(err):
			return err // no answer: what the COMMIT did is not known
		default:
			commitErr = err
		}
		return commitErr
	}
	b.Queue(notify, args...).Fn = func(br pgx.BatchResults) error {
		_, _ = br.Exec()
		return nil
	}
	err := t.SendBatch(ctx, b).Close()
	if committed {
		t.ended = true
		if fnErr != nil {
			return unreadAfterCommit(fnErr)
		}
		return nil
	}
	if commitErr == nil && unanswered(err) {
		// The batch went out, its COMMIT with it, and the answers were lost
		// on the way back (a deadline, a connection dropped): the server
		// may have run it all.
		t.ended = true
		return unreadAfterCommit(err)
	}
	if fnErr != nil {
		return fnErr
	}
	if commitErr != nil {
		return commitErr
	}
	if err == nil { // cannot be: nothing committed and nothing failed
		err = errors.New("pgstore: the transaction's COMMIT went unanswered")
	}
	return err
}

// unanswered reports whether err is a failure to hear back from a batch
// that went out: neither the server's refusal of a statement nor a
// failure before anything was sent.
func unanswered(err error) bool {
	var pe *pgconn.PgError
	return err != nil && !errors.As(err, &pe) && !pgconn.SafeToRetry(err)
}

// unreadAfterCommit is the error of a write whose result could not be read
// after its COMMIT was sent with it: the write may stand, so it matches
// taskgraph.ErrUnknownOutcome, never an error that says it did not happen.
func unreadAfterCommit(err error) error {
	return fmt.Errorf("%w: the write was sent with its commit, but its result could not be read (re-read the tasks): %w", taskgraph.ErrUnknownOutcome, err)
}

// Exec runs one statement.
func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.begun {
		return t.conn.Exec(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, b)
	ct, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return ct, err
}

// Query runs one statement that returns rows.
func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.begun {
		return t.conn.Query(ctx, sql, args...)
	}
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.SendBatch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return batchRows{rows, br}, nil
}

// QueryRow runs one statement that returns at most one row.
func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := t.Query(ctx, sql, args...)
	return oneRow{rows, err}
}

// start sends BEGIN alone, for what cannot go with it.
func (t *lazyTx) start(ctx context.Context) error {
	if t.begun {
		return nil
	}
	_, err := t.Exec(ctx, `SELECT`)
	return err
}

// CopyFrom implements pgx.Tx.
func (t *lazyTx) CopyFrom(ctx context.Context, table pgx.Identifier, columns []string, src pgx.CopyFromSource) (int64, error) {
	if err := t.start(ctx); err != nil {
		return 0, err
	}
	return t.conn.CopyFrom(ctx, table, columns, src)
}

// Prepare implements pgx.Tx.
func (t *lazyTx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.conn.Prepare(ctx, name, sql)
}

// Commit ends the transaction; write commits its own way (with the
// notification), so this is for completeness.
func (t *lazyTx) Commit(ctx context.Context) error {
	if !t.begun {
		return nil
	}
	ct, err := t.conn.Exec(ctx, `COMMIT`)
	if err == nil && ct.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	return err
}

// Rollback ends the transaction, if it was begun.
func (t *lazyTx) Rollback(ctx context.Context) error {
	if !t.begun {
		return nil
	}
	_, err := t.conn.Exec(ctx, `ROLLBACK`)
	return err
}

// Begin is not supported.
func (t *lazyTx) Begin(context.Context) (pgx.Tx, error) { return nil, errLazyTx }

// LargeObjects is not supported: its methods fail.
func (t *lazyTx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }

// Conn returns the transaction's connection.
func (t *lazyTx) Conn() *pgx.Conn { return t.conn }

// batchRows is the rows of a one-statement batch: closing them closes the
// batch.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r batchRows) Close() {
	r.Rows.Close()
	r.br.Close()
}

// oneRow is pgx.Row over rows, as pgx's QueryRow.
type oneRow struct {
	rows pgx.Rows
	err  error
}

func (r oneRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// failedBatch is the results of a batch whose BEGIN failed: every result
// is that error.
type failedBatch struct {
	pgx.BatchResults
	err error
}

func (f failedBatch) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, f.err }
func (f failedBatch) Query() (pgx.Rows, error)         { return nil, f.err }
func (f failedBatch) QueryRow() pgx.Row                { return oneRow{err: f.err} }
func (f failedBatch) Close() error {
	f.BatchResults.Close()
	return f.err
}

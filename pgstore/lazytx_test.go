package pgstore_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// TestResultUnreadAfterCommitIsUnknownOutcome: a write's last statements
// go with its COMMIT; a result that fails on the client after the COMMIT
// went through must not say the write did not happen.
func TestResultUnreadAfterCommitIsUnknownOutcome(t *testing.T) {
	p := pool(t)
	_, err := p.Exec(ctx, `CREATE TABLE IF NOT EXISTS pgstore_commitwith_test (n int)`)
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(ctx, `DROP TABLE IF EXISTS pgstore_commitwith_test`) })
	conn, err := p.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()

	b := &pgx.Batch{}
	unreadable := errors.New("a row that does not scan")
	b.Queue(`INSERT INTO pgstore_commitwith_test VALUES (7) RETURNING n`).Fn = func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return err
		}
		return unreadable
	}
	err = pgstore.CommitWith(ctx, conn.Conn(), b)
	require.ErrorIs(t, err, taskgraph.ErrUnknownOutcome)
	assert.ErrorIs(t, err, unreadable, "the cause is kept")
	var n int
	require.NoError(t, p.QueryRow(ctx, `SELECT count(*) FROM pgstore_commitwith_test WHERE n = 7`).Scan(&n))
	assert.Equal(t, 1, n, "the write did happen")

	// A statement that fails on the server: nothing committed, and the
	// error is the statement's.
	b = &pgx.Batch{}
	b.Queue(`INSERT INTO pgstore_commitwith_test VALUES ('not a number')`)
	err = pgstore.CommitWith(ctx, conn.Conn(), b)
	require.Error(t, err)
	assert.NotErrorIs(t, err, taskgraph.ErrUnknownOutcome)
	conn.Conn().Exec(ctx, `ROLLBACK`)
}

// TestClaimUnreadAfterCommitIsUnknownOutcome: ClaimNext's one-statement
// claim commits at its own Sync; a row that the client cannot read back
// (notes that are not a list, written by hand) must not make the call say
// the claim did not happen.
func TestClaimUnreadAfterCommitIsUnknownOutcome(t *testing.T) {
	p := pool(t)
	g := graphName(t)
	s := open(t, p, g)
	tk, err := s.Create(ctx, taskgraph.NewTask{Subject: "x"})
	require.NoError(t, err)
	_, err = p.Exec(ctx, `UPDATE taskgraph_tasks SET notes = '{"not": "a list"}'::jsonb WHERE graph = $1 AND id = $2`, g, int64(tk.ID))
	require.NoError(t, err)
	_, err = s.ClaimNext(ctx, "alice")
	require.ErrorIs(t, err, taskgraph.ErrUnknownOutcome)
	var status, owner string
	require.NoError(t, p.QueryRow(ctx, `SELECT status, owner FROM taskgraph_tasks WHERE graph = $1 AND id = $2`, g, int64(tk.ID)).Scan(&status, &owner))
	assert.Equal(t, "in_progress", status, "the claim did happen")
	assert.Equal(t, "alice", owner)
}

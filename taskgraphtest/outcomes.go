// This file holds the cases of the outcomes: Fail, Cancel, Reopen,
// Complete WithResult, and the stranded partition of the board.

package taskgraphtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func claimed(t *testing.T, s tg.Store, subject, owner string, blockedBy ...tg.ID) tg.Task {
	t.Helper()
	task := create(t, s, subject, blockedBy...)
	task, err := s.Claim(ctx, task.ID, owner)
	require.NoError(t, err)
	return task
}

func board(t *testing.T, s tg.Store, filters ...tg.Filter) tg.Board {
	t.Helper()
	b, err := s.Board(ctx, filters...)
	require.NoError(t, err)
	return b
}

// testFail: only the holder (or "") fails a task in progress, with a
// reason; the owner stays as the record; the task satisfies nothing.
func testFail(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	_, err := s.Fail(ctx, a.ID, "", "too early")
	assert.ErrorIs(t, err, tg.ErrInvalid, "a pending task is cancelled, not failed")
	a, err = s.Claim(ctx, a.ID, "alice", tg.WithLease(time.Hour))
	require.NoError(t, err)
	_, err = s.Fail(ctx, a.ID, "bob", "not mine")
	assert.ErrorIs(t, err, tg.ErrClaimed)
	_, err = s.Fail(ctx, a.ID, "alice", "")
	var inv *tg.InvalidError
	require.ErrorAs(t, err, &inv, "a reason is required")
	assert.Equal(t, "reason", inv.Field)
	_, err = s.Fail(ctx, a.ID, "alice", "bad \xff")
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = s.Fail(ctx, 99, "alice", "gone")
	assert.ErrorIs(t, err, tg.ErrNotFound)
	assert.Equal(t, a.Rev, get(t, s, a.ID).Rev, "refused fails change nothing")

	got, err := s.Fail(ctx, a.ID, "alice", "the tests crashed")
	require.NoError(t, err)
	assert.Equal(t, tg.Failed, got.Status)
	assert.Equal(t, "the tests crashed", got.Reason)
	assert.Equal(t, "alice", got.Owner, "the owner stays as the record of who tried")
	assert.True(t, got.LeaseExpiresAt.IsZero(), "a failed task holds no lease")
	assert.Equal(t, a.Rev+1, got.Rev)
	assert.Equal(t, got, get(t, s, a.ID))

	for name, write := range map[string]func() error{
		"fail again": func() error { _, err := s.Fail(ctx, a.ID, "alice", "again"); return err },
		"complete":   func() error { _, err := s.Complete(ctx, a.ID, "alice"); return err },
		"release":    func() error { _, err := s.Release(ctx, a.ID, "alice"); return err },
		"renew":      func() error { _, err := s.Renew(ctx, a.ID, "alice", time.Hour); return err },
		"claim":      func() error { _, err := s.Claim(ctx, a.ID, "alice"); return err },
		"cancel":     func() error { _, err := s.Cancel(ctx, a.ID, "x"); return err },
	} {
		err := write()
		require.ErrorIs(t, err, tg.ErrInvalid, name)
	}
	_, err = s.Claim(ctx, a.ID, "alice")
	assert.Contains(t, err.Error(), "reopen", "the error says what to do")

	// "" fails whoever holds it, as for Complete.
	b := claimed(t, s, "b", "carol")
	got, err = s.Fail(ctx, b.ID, "", "gave up")
	require.NoError(t, err)
	assert.Equal(t, "carol", got.Owner)
}

// testCancel: a pending or in-progress task is cancelled with a reason;
// a finished one is not.
func testCancel(t *testing.T, s tg.Store) {
	a := create(t, s, "pending")
	b := claimed(t, s, "held", "alice")
	c := claimed(t, s, "done", "alice")
	_, err := s.Complete(ctx, c.ID, "alice")
	require.NoError(t, err)

	_, err = s.Cancel(ctx, a.ID, "")
	assert.ErrorIs(t, err, tg.ErrInvalid, "a reason is required")
	got, err := s.Cancel(ctx, a.ID, "not needed")
	require.NoError(t, err)
	assert.Equal(t, tg.Cancelled, got.Status)
	assert.Equal(t, "not needed", got.Reason)
	got, err = s.Cancel(ctx, b.ID, "superseded")
	require.NoError(t, err, "a task in progress may be cancelled")
	assert.Equal(t, tg.Cancelled, got.Status)
	assert.Equal(t, "alice", got.Owner)

	_, err = s.Cancel(ctx, c.ID, "too late")
	assert.ErrorIs(t, err, tg.ErrInvalid, "a completed task is not cancelled")
	_, err = s.Cancel(ctx, a.ID, "twice")
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = s.Cancel(ctx, 42, "x")
	assert.ErrorIs(t, err, tg.ErrNotFound)

	bd := board(t, s)
	assert.Equal(t, []tg.ID{a.ID, b.ID}, ids(bd.Cancelled))
	assert.Equal(t, []tg.ID{c.ID}, ids(bd.Completed))
	assert.True(t, bd.Finished(), "nothing is left that can run")
	_, err = s.ClaimNext(ctx, "w")
	assert.ErrorIs(t, err, tg.ErrNoReady, "a cancelled task is never claimed")
}

// testStranded: a failed or cancelled blocker strands its dependents,
// transitively through pending tasks, each with the lowest cause named;
// they are neither ready nor blocked, and do not keep the graph
// unfinished.
func testStranded(t *testing.T, s tg.Store) {
	a := claimed(t, s, "a", "w")       // 1: fails
	b := create(t, s, "b", a.ID)       // 2: stranded by 1
	c := create(t, s, "c", b.ID)       // 3: stranded by 1, through 2
	d := create(t, s, "d")             // 4: cancelled
	e := create(t, s, "e", c.ID, d.ID) // 5: stranded by 1 (the lowest cause)
	f := create(t, s, "f", d.ID)       // 6: stranded by 4
	g := create(t, s, "g")             // 7: ready
	h := create(t, s, "h", g.ID)       // 8: blocked, not stranded
	_, err := s.Fail(ctx, a.ID, "w", "broken")
	require.NoError(t, err)
	_, err = s.Cancel(ctx, d.ID, "dropped")
	require.NoError(t, err)

	bd := board(t, s)
	assert.Equal(t, []tg.ID{b.ID, c.ID, e.ID, f.ID}, ids(bd.Stranded))
	assert.Equal(t, map[tg.ID]tg.ID{b.ID: a.ID, c.ID: a.ID, e.ID: a.ID, f.ID: d.ID}, bd.StrandedBy)
	assert.Equal(t, []tg.ID{a.ID}, ids(bd.Failed))
	assert.Equal(t, []tg.ID{d.ID}, ids(bd.Cancelled))
	assert.Equal(t, []tg.ID{g.ID}, ids(bd.Ready))
	assert.Equal(t, []tg.ID{h.ID}, ids(bd.Blocked), "blocked lists no stranded task")
	assert.False(t, bd.Finished())

	_, err = s.Claim(ctx, b.ID, "w")
	var be *tg.BlockedError
	require.ErrorAs(t, err, &be, "a stranded task cannot start")
	assert.Equal(t, []tg.ID{a.ID}, be.Failed)
	assert.Contains(t, err.Error(), "reopen")

	for _, id := range []tg.ID{g.ID, h.ID} {
		_, err := s.Claim(ctx, id, "w")
		require.NoError(t, err)
		_, err = s.Complete(ctx, id, "w")
		require.NoError(t, err)
	}
	bd = board(t, s)
	assert.True(t, bd.Finished(), "only stranded work is left: nothing can run")
	assert.Len(t, bd.Stranded, 4)

	// The tasks of a Resolve agree with the store.
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, bd, tg.Resolve(all))
}

// testReopen: a failed, cancelled or completed task returns to pending,
// cleared; its dependents are freed; a completed one is not reopened under
// a dependent that has started.
func testReopen(t *testing.T, s tg.Store) {
	a := claimed(t, s, "a", "alice")
	b := create(t, s, "b", a.ID)
	_, err := s.Reopen(ctx, a.ID)
	assert.ErrorIs(t, err, tg.ErrInvalid, "a task in progress is not reopened")
	_, err = s.Reopen(ctx, b.ID)
	assert.ErrorIs(t, err, tg.ErrInvalid, "nor a pending one")
	_, err = s.Reopen(ctx, 77)
	assert.ErrorIs(t, err, tg.ErrNotFound)

	_, err = s.Fail(ctx, a.ID, "alice", "flaky")
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{b.ID}, ids(board(t, s).Stranded))
	got, err := s.Reopen(ctx, a.ID)
	requireStatusOwner(t, got, err, tg.Pending, "")
	assert.Equal(t, "", got.Reason)
	assert.True(t, got.ClaimedAt.IsZero())
	bd := board(t, s)
	assert.Empty(t, bd.Stranded)
	assert.Equal(t, []tg.ID{a.ID}, ids(bd.Ready))
	assert.Equal(t, []tg.ID{b.ID}, ids(bd.Blocked))
	next, err := s.ClaimNext(ctx, "bob")
	require.NoError(t, err)
	assert.Equal(t, a.ID, next.ID, "a reopened task is claimed again")

	c, err := s.Complete(ctx, a.ID, "bob", tg.WithResult("built"))
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{b.ID}, ids(c.Unblocked))
	_, err = s.Claim(ctx, b.ID, "carol")
	require.NoError(t, err)
	_, err = s.Reopen(ctx, a.ID)
	var inv *tg.InvalidError
	require.ErrorAs(t, err, &inv, "b started after a: reopening a would break the order")
	assert.Contains(t, err.Error(), "[2]", "the error names the dependent")
	assert.Equal(t, tg.Completed, get(t, s, a.ID).Status)
	_, err = s.Release(ctx, b.ID, "carol")
	require.NoError(t, err)
	got, err = s.Reopen(ctx, a.ID)
	require.NoError(t, err, "with b pending again, a may be reopened")
	assert.Equal(t, "", got.Result, "the result of the undone completion is cleared")
	assert.Equal(t, []tg.ID{b.ID}, ids(board(t, s).Blocked))

	d := create(t, s, "d")
	_, err = s.Cancel(ctx, d.ID, "maybe later")
	require.NoError(t, err)
	got, err = s.Reopen(ctx, d.ID)
	require.NoError(t, err)
	assert.Equal(t, tg.Pending, got.Status)
	assert.Equal(t, "", got.Reason)
}

// testCompleteResult: Complete WithResult records the text; its text is
// validated like any other.
func testCompleteResult(t *testing.T, s tg.Store) {
	a := claimed(t, s, "a", "alice")
	_, err := s.Complete(ctx, a.ID, "alice", tg.WithResult("nul\x00"))
	var inv *tg.InvalidError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, "result", inv.Field)
	c, err := s.Complete(ctx, a.ID, "alice", tg.WithResult("schema in db/schema.sql; «migrations» applied"))
	require.NoError(t, err)
	assert.Equal(t, "schema in db/schema.sql; «migrations» applied", c.Task.Result)
	assert.Equal(t, c.Task.Result, get(t, s, a.ID).Result)
	b := claimed(t, s, "b", "alice")
	c, err = s.Complete(ctx, b.ID, "alice")
	require.NoError(t, err)
	assert.Equal(t, "", c.Task.Result, "no result, none recorded")
}

// testUpdateOutcomes: Update never sets failed or cancelled (they need a
// reason), and takes a failed or cancelled task only back to pending.
func testUpdateOutcomes(t *testing.T, s tg.Store) {
	a := claimed(t, s, "a", "alice")
	for _, st := range []tg.Status{tg.Failed, tg.Cancelled} {
		_, err := s.Update(ctx, a.ID, tg.Patch{Status: ptr(st)})
		var inv *tg.InvalidError
		require.ErrorAs(t, err, &inv, "%s", st)
		assert.Equal(t, "status", inv.Field)
	}
	_, err := s.Fail(ctx, a.ID, "alice", "crashed")
	require.NoError(t, err)
	for _, st := range []tg.Status{tg.InProgress, tg.Completed} {
		_, err := s.Update(ctx, a.ID, tg.Patch{Status: ptr(st), Owner: ptr("bob")})
		require.ErrorIs(t, err, tg.ErrInvalid, "%s", st)
		assert.Contains(t, err.Error(), "reopen")
	}
	got, err := s.Update(ctx, a.ID, tg.Patch{Status: ptr(tg.Pending)})
	require.NoError(t, err, "pending reopens it")
	assert.Equal(t, tg.Pending, got.Status)
	assert.Equal(t, "", got.Reason)
	assert.Equal(t, "", got.Owner)
	_, err = s.Update(ctx, a.ID, tg.Patch{Status: ptr(tg.Status("done"))})
	assert.ErrorIs(t, err, tg.ErrInvalid)
	assert.Contains(t, err.Error(), "failed or cancelled", "the error lists the five statuses")
}

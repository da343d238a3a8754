// Conformance cases for a task's schedule: deferred tasks, retries with
// backoff, attempts used up by failures and by lapsed leases, due times.

package taskgraphtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// near asserts that got is within a minute of want.
func near(t *testing.T, want, got time.Time, msg string) {
	t.Helper()
	assert.WithinDuration(t, want, got, time.Minute, msg)
}

// testDeferred: a task whose NotBefore is to come is deferred — on the
// board, not claimed by ClaimNext, refused by Claim and by an update to
// in_progress — and ready once its time has come (here: once it is moved).
func testDeferred(t *testing.T, s tg.Store) {
	later := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	due := later.Add(24 * time.Hour)
	a, err := s.Create(ctx, tg.NewTask{Subject: "after lunch", NotBefore: later, Due: due})
	require.NoError(t, err)
	assert.True(t, later.Equal(a.NotBefore))
	assert.True(t, due.Equal(a.Due))
	b, err := s.Create(ctx, tg.NewTask{Subject: "after it", BlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err)

	bd, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{a.ID}, ids(bd.Deferred))
	assert.Empty(t, bd.Ready)
	assert.Equal(t, []tg.ID{b.ID}, ids(bd.Blocked))
	assert.False(t, bd.Finished(), "a deferred task is work still to come")
	_, err = s.ClaimNext(ctx, "alice")
	assert.ErrorIs(t, err, tg.ErrNoReady)
	_, err = s.Claim(ctx, a.ID, "alice")
	var de *tg.DeferredError
	require.ErrorAs(t, err, &de)
	assert.True(t, later.Equal(de.Until))
	inProgress, owner := tg.InProgress, "alice"
	_, err = s.Update(ctx, a.ID, tg.Patch{Status: &inProgress, Owner: &owner})
	assert.ErrorIs(t, err, tg.ErrDeferred)
	ready, err := s.List(ctx, tg.ReadyOnly())
	require.NoError(t, err)
	assert.Empty(t, ready, "ReadyOnly leaves deferred tasks out")

	all, err := s.List(ctx)
	require.NoError(t, err)
	ex, err := tg.Explain(all, a.ID, time.Now())
	require.NoError(t, err)
	assert.Equal(t, tg.StateDeferred, ex.State)
	assert.Contains(t, ex.Text, "deferred")
	assert.False(t, a.Overdue(time.Now()))
	assert.True(t, a.Overdue(due.Add(time.Second)))

	past := time.Now().Add(-time.Minute)
	_, err = s.Update(ctx, a.ID, tg.Patch{NotBefore: &past})
	require.NoError(t, err)
	got, err := s.ClaimNext(ctx, "alice")
	require.NoError(t, err, "its time has come")
	assert.Equal(t, a.ID, got.ID)
	assert.True(t, due.Equal(got.Due), "the due time is kept, never enforced")
}

// testRetries: a task with MaxAttempts retries a failure after its
// backoff, doubled at each attempt, its dependents waiting; the last
// failure is final, its reason naming the attempts, and strands them;
// Reopen gives every attempt again.
func testRetries(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "flaky upload", MaxAttempts: 3, Backoff: time.Hour})
	require.NoError(t, err)
	assert.Equal(t, 3, a.MaxAttempts)
	assert.Equal(t, time.Hour, a.Backoff)
	dep := create(t, s, "publish", a.ID)
	zero := time.Time{}
	for attempt := 1; attempt <= 2; attempt++ {
		_, err = s.Claim(ctx, a.ID, "alice")
		require.NoError(t, err, "attempt %d", attempt)
		failed, err := s.Fail(ctx, a.ID, "alice", "timeout")
		require.NoError(t, err)
		assert.Equal(t, tg.Pending, failed.Status, "attempts remain: pending again")
		assert.Equal(t, attempt, failed.Attempts)
		assert.Empty(t, failed.Owner)
		assert.Empty(t, failed.Reason)
		near(t, time.Now().Add(tg.RetryDelay(time.Hour, attempt)), failed.NotBefore, "deferred by the backoff, doubled")
		bd, err := s.Board(ctx)
		require.NoError(t, err)
		assert.Equal(t, []tg.ID{a.ID}, ids(bd.Deferred))
		assert.Equal(t, []tg.ID{dep.ID}, ids(bd.Blocked), "its dependents wait; they are not stranded")
		_, err = s.Claim(ctx, a.ID, "alice")
		assert.ErrorIs(t, err, tg.ErrDeferred, "not before its backoff")
		_, err = s.Update(ctx, a.ID, tg.Patch{NotBefore: &zero}) // a person lets it retry now
		require.NoError(t, err)
	}
	_, err = s.Claim(ctx, a.ID, "alice")
	require.NoError(t, err)
	failed, err := s.Fail(ctx, a.ID, "alice", "timeout again")
	require.NoError(t, err)
	assert.Equal(t, tg.Failed, failed.Status, "the last attempt's failure is final")
	assert.Equal(t, 3, failed.Attempts)
	assert.Equal(t, "gave up after 3 attempts; the last: timeout again", failed.Reason)
	bd, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{dep.ID}, ids(bd.Stranded))
	assert.Equal(t, []tg.HistoryEvent{tg.HistoryClaimed, tg.HistoryFailed, tg.HistoryEdited, tg.HistoryClaimed, tg.HistoryFailed,
		tg.HistoryEdited, tg.HistoryClaimed, tg.HistoryFailed}, events(failed.History))
	assert.Contains(t, failed.History[1].Detail, "attempt 1 of 3")

	reopened, err := s.Reopen(ctx, a.ID)
	require.NoError(t, err)
	assert.Zero(t, reopened.Attempts, "a reopened task has every attempt again")
	assert.True(t, reopened.NotBefore.IsZero())

	for _, nt := range []tg.NewTask{{Subject: "x", MaxAttempts: -1}, {Subject: "x", MaxAttempts: tg.MaxAttemptsLimit + 1},
		{Subject: "x", Backoff: -time.Second}, {Subject: "x", Backoff: tg.MaxBackoff + 1}} {
		_, err := s.Create(ctx, nt)
		assert.ErrorIs(t, err, tg.ErrInvalid, "%+v", nt)
	}
	bad := -2
	_, err = s.Update(ctx, a.ID, tg.Patch{MaxAttempts: &bad})
	assert.ErrorIs(t, err, tg.ErrInvalid)
}

// testLapsedAttempts: a lapsed lease uses an attempt, counted by the
// claim that takes the task over; the claim that would be one too many
// fails the task instead — Claim says so with ErrGaveUp, ClaimNext goes
// on to other work (or finds none) — and the failure is stored.
func testLapsedAttempts(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "crashy job", MaxAttempts: 2})
	require.NoError(t, err)
	dep := create(t, s, "after it", a.ID)
	held, err := s.Claim(ctx, a.ID, "w1", tg.WithLease(time.Nanosecond))
	require.NoError(t, err)
	lapse(held) // on a clock as coarse as Windows', a nanosecond may not have passed yet
	got, err := s.ClaimNext(ctx, "w2", tg.WithLease(time.Nanosecond))
	require.NoError(t, err, "the first lapse leaves one attempt")
	lapse(got) // on a clock as coarse as Windows', a nanosecond may not have passed yet
	assert.Equal(t, a.ID, got.ID)
	assert.Equal(t, 1, got.Attempts)
	assert.Equal(t, "w1", got.PrevOwner)

	_, err = s.ClaimNext(ctx, "w3")
	assert.ErrorIs(t, err, tg.ErrNoReady, "the second lapse used the last attempt: nothing to claim")
	failed := get(t, s, a.ID)
	assert.Equal(t, tg.Failed, failed.Status, "the claim failed the task instead")
	assert.Equal(t, 2, failed.Attempts)
	assert.Equal(t, "gave up after 2 attempts; the last: the lease of w2 lapsed", failed.Reason)
	bd, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{dep.ID}, ids(bd.Stranded))

	b, err := s.Create(ctx, tg.NewTask{Subject: "one shot", MaxAttempts: 1})
	require.NoError(t, err)
	held, err = s.Claim(ctx, b.ID, "w1", tg.WithLease(time.Nanosecond))
	require.NoError(t, err)
	lapse(held) // on a clock as coarse as Windows', a nanosecond may not have passed yet
	_, err = s.Claim(ctx, b.ID, "w2")
	var gu *tg.GaveUpError
	require.ErrorAs(t, err, &gu)
	assert.ErrorIs(t, err, tg.ErrGaveUp)
	assert.Equal(t, 1, gu.Attempts)
	assert.Equal(t, tg.Failed, get(t, s, b.ID).Status, "the failure stands, though Claim returned an error")

	// Without MaxAttempts a lapse counts nothing, as before.
	c := create(t, s, "plain")
	held, err = s.Claim(ctx, c.ID, "w1", tg.WithLease(time.Nanosecond))
	require.NoError(t, err)
	lapse(held) // on a clock as coarse as Windows', a nanosecond may not have passed yet
	got, err = s.Claim(ctx, c.ID, "w2")
	require.NoError(t, err)
	assert.Zero(t, got.Attempts)
}

// testWatchUndeferred: a store that can be watched reports a deferred
// task's time coming (Undeferred), with no write, so that waiting agents
// wake then without polling.
//
// A watch tracks a deferred task from the moment it sees it created; one
// that sees it only once its time has passed (a loaded machine, a store
// behind a network) has nothing to report, and rightly: the task was
// ready when it learned of it. So the test counts only a task whose
// Created event arrived before its time, which the watch therefore saw
// deferred; when the event comes later it tries again with a deferral
// twice as long.
func testWatchUndeferred(t *testing.T, s tg.Store) {
	w, ok := s.(tg.Watcher)
	if !ok {
		t.Skipf("%T is not a Watcher: nothing to test", s)
	}
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	events, err := w.Watch(wctx)
	require.NoError(t, err)
	for delay := 300 * time.Millisecond; delay <= 10*time.Second; delay *= 2 {
		a, err := s.Create(ctx, tg.NewTask{Subject: "at noon", NotBefore: time.Now().Add(delay)})
		require.NoError(t, err)
	attempt:
		for e := range events {
			require.NotEqual(t, tg.Ended, e.Kind, "the watch ended: %v", e.Err)
			switch {
			case e.Task.ID != a.ID:
				// an earlier attempt's task: its Undeferred proves nothing more
			case e.Kind == tg.Created && !time.Now().Before(a.NotBefore):
				t.Logf("the watch saw task %d created %v after its time: trying again with a deferral of %v", a.ID, time.Since(a.NotBefore), 2*delay)
				break attempt
			case e.Kind == tg.Undeferred:
				assert.False(t, time.Now().Add(50*time.Millisecond).Before(a.NotBefore), "reported when its time came, not before")
				return
			}
		}
		if wctx.Err() != nil {
			break
		}
	}
	t.Fatal("no Undeferred event before the watch ended")
}

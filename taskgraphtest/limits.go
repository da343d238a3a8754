// Conformance cases for concurrency limits per label.

package taskgraphtest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// limiter returns s as a Limiter, failing the test if it is not one.
func limiter(t *testing.T, s tg.Store) tg.Limiter {
	t.Helper()
	l, ok := s.(tg.Limiter)
	require.True(t, ok, "%T does not implement taskgraph.Limiter", s)
	return l
}

// testLimits: no way into in_progress leaves more than a label's limit of
// tasks carrying it in progress; ClaimNext passes over the tasks held back
// (on the board as Limited) to other work; a lapsed lease does not count;
// removing the limit frees them.
func testLimits(t *testing.T, s tg.Store) {
	l := limiter(t, s)
	require.NoError(t, l.SetLimit(ctx, "gpu", 2))
	got, err := l.Limits(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"gpu": 2}, got)
	var gpu []tg.ID
	for range 4 {
		task, err := s.Create(ctx, tg.NewTask{Subject: "train", Labels: []string{"gpu", "ml"}, Priority: tg.P1})
		require.NoError(t, err)
		gpu = append(gpu, task.ID)
	}
	cpu := create(t, s, "tokenize")

	a, err := s.ClaimNext(ctx, "a")
	require.NoError(t, err)
	b, err := s.ClaimNext(ctx, "b", tg.WithLease(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, gpu[:2], []tg.ID{a.ID, b.ID})
	c, err := s.ClaimNext(ctx, "c")
	require.NoError(t, err)
	assert.Equal(t, cpu.ID, c.ID, "the more urgent gpu tasks are held back: the next task that fits")
	_, err = s.ClaimNext(ctx, "d")
	assert.ErrorIs(t, err, tg.ErrNoReady)
	_, err = s.Claim(ctx, gpu[2], "d")
	var le *tg.LimitError
	require.ErrorAs(t, err, &le)
	assert.ErrorIs(t, err, tg.ErrLimited)
	assert.Equal(t, "gpu", le.Label)
	assert.Equal(t, 2, le.Held)
	inProgress, owner := tg.InProgress, "d"
	_, err = s.Update(ctx, gpu[2], tg.Patch{Status: &inProgress, Owner: &owner})
	assert.ErrorIs(t, err, tg.ErrLimited)
	bd, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, gpu[2:], ids(bd.Limited))
	assert.Empty(t, bd.Ready)
	assert.False(t, bd.Finished(), "held back by a limit is work to come")
	ready, err := s.List(ctx, tg.ReadyOnly())
	require.NoError(t, err)
	assert.Empty(t, ready, "a task held back by a limit is not ready")

	// A holder finishes: one more may start.
	_, err = s.Complete(ctx, a.ID, "a")
	require.NoError(t, err)
	next, err := s.ClaimNext(ctx, "d", tg.WithLease(time.Nanosecond))
	require.NoError(t, err)
	lapse(next) // on a clock as coarse as Windows', a nanosecond may not have passed yet
	assert.Equal(t, gpu[2], next.ID)
	// Its lease lapsed: it no longer counts.
	last, err := s.Claim(ctx, gpu[3], "e")
	require.NoError(t, err, "a lapsed lease does not count against the limit")
	assert.Equal(t, tg.InProgress, last.Status)

	// A lower limit keeps what is in progress, and holds back the rest.
	require.NoError(t, l.SetLimit(ctx, "ml", 1))
	_, err = s.Claim(ctx, gpu[2], "f") // taking over the lapsed task: it enters again
	assert.ErrorIs(t, err, tg.ErrLimited)
	require.NoError(t, l.SetLimit(ctx, "ml", 0), "0 removes a limit")
	require.NoError(t, l.SetLimit(ctx, "gpu", 0))
	got, err = l.Limits(ctx)
	require.NoError(t, err)
	assert.Empty(t, got)
	_, err = s.Claim(ctx, gpu[2], "f")
	require.NoError(t, err)

	// A lapsed claim that is renewed comes back: it must fit the limit
	// again. A task in progress that gains a limited label must fit too.
	require.NoError(t, l.SetLimit(ctx, "x", 1))
	p, err := s.Create(ctx, tg.NewTask{Subject: "p", Labels: []string{"x"}})
	require.NoError(t, err)
	q, err := s.Create(ctx, tg.NewTask{Subject: "q", Labels: []string{"x"}})
	require.NoError(t, err)
	r := create(t, s, "r")
	held, err := s.Claim(ctx, p.ID, "A", tg.WithLease(time.Nanosecond))
	require.NoError(t, err)
	lapse(held)
	_, err = s.Claim(ctx, q.ID, "B")
	require.NoError(t, err, "p's lease lapsed: it does not count")
	_, err = s.Renew(ctx, p.ID, "A", time.Hour)
	assert.ErrorIs(t, err, tg.ErrLimited, "renewing the lapsed claim would make two")
	_, err = s.Claim(ctx, r.ID, "C")
	require.NoError(t, err)
	_, err = s.Update(ctx, r.ID, tg.Patch{Labels: &[]string{"x"}})
	assert.ErrorIs(t, err, tg.ErrLimited, "gaining the label would make two")

	for _, c := range []struct {
		label string
		n     int
	}{{"Bad Label", 1}, {"", 1}, {"gpu", -1}, {"gpu", tg.MaxLimit + 1}} {
		assert.ErrorIs(t, l.SetLimit(ctx, c.label, c.n), tg.ErrInvalid, "%q %d", c.label, c.n)
	}
}

// testLimitsRace: eight agents claim at once from ten tasks of a label
// limited to 2: exactly two are granted, whatever the interleaving.
func testLimitsRace(t *testing.T, s tg.Store) {
	require.NoError(t, limiter(t, s).SetLimit(ctx, "db", 2))
	for range 10 {
		_, err := s.Create(ctx, tg.NewTask{Subject: "migrate", Labels: []string{"db"}})
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	granted, refused := 0, 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.ClaimNext(ctx, "agent-"+string(rune('a'+i)), tg.WithLease(time.Hour))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				granted++
			case errors.Is(err, tg.ErrNoReady):
				refused++
			default:
				t.Errorf("agent %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 2, granted)
	assert.Equal(t, 6, refused)
	bd, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Len(t, bd.InProgress, 2)
	assert.Len(t, bd.Limited, 8)
}

// testAwaitRaisedLimit: AwaitRaisedLimit with the limit raised through
// the waiting store itself.
func testAwaitRaisedLimit(t *testing.T, s tg.Store) { AwaitRaisedLimit(t, s, limiter(t, s)) }

// AwaitRaisedLimit checks that an agent waiting (taskgraph.Await) on
// waiting for work that a concurrency limit holds back wakes when raiser
// — the same store, or another on the same graph, as another process
// would be — raises the limit: a change to no task, of which no event
// tells; it then sees the task ready. waiting must be empty.
func AwaitRaisedLimit(t *testing.T, waiting tg.Store, raiser tg.Limiter) {
	require.NoError(t, raiser.SetLimit(ctx, "gpu", 1))
	for _, subject := range []string{"a", "b"} {
		_, err := waiting.Create(ctx, tg.NewTask{Subject: subject, Labels: []string{"gpu"}})
		require.NoError(t, err)
	}
	_, err := waiting.ClaimNext(ctx, "first")
	require.NoError(t, err)
	raised := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		raised <- raiser.SetLimit(ctx, "gpu", 2)
	}()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	board, err := tg.Await(wctx, waiting, tg.WorkPoll(time.Hour))
	require.NoError(t, <-raised)
	require.NoError(t, err, "a raised limit must end the wait")
	assert.Len(t, board.Ready, 1)
}

// testLimitedBySelection: a Board filtered by labels or Under holds a task
// back (Limited) only for the ready tasks a ClaimNext with the same
// WithLabels or WithUnder would take first — not for more urgent ready
// work elsewhere that it would not take — so an agent waiting (Await)
// inside an epic, or with a role, sees at once the task its ClaimNext
// claims.
func testLimitedBySelection(t *testing.T, s tg.Store) {
	l := limiter(t, s)
	require.NoError(t, l.SetLimit(ctx, "gpu", 1))
	epic, err := s.Create(ctx, tg.NewTask{Subject: "epic"})
	require.NoError(t, err)
	elsewhere, err := s.Create(ctx, tg.NewTask{Subject: "elsewhere", Labels: []string{"gpu"}, Priority: tg.P0})
	require.NoError(t, err)
	inside, err := s.Create(ctx, tg.NewTask{Subject: "inside", Labels: []string{"gpu", "ml"}, Priority: tg.P3, Parent: epic.ID})
	require.NoError(t, err)

	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{inside.ID}, ids(b.Limited), "the whole graph's ClaimNext takes elsewhere first")
	for _, f := range []tg.Filter{tg.Under(epic.ID), tg.HasLabels("ml")} {
		b, err := s.Board(ctx, f)
		require.NoError(t, err)
		assert.Equal(t, []tg.ID{inside.ID}, ids(b.Ready))
		assert.Empty(t, b.Limited)
	}
	for _, opts := range [][]tg.WorkOption{{tg.WorkUnder(epic.ID)}, {tg.WorkLabels("ml")}} {
		wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		b, err := tg.Await(wctx, s, opts...)
		cancel()
		require.NoError(t, err, "a task this agent can claim is ready: no wait")
		assert.Equal(t, []tg.ID{inside.ID}, ids(b.Ready))
	}
	got, err := s.ClaimNext(ctx, "me", tg.WithUnder(epic.ID))
	require.NoError(t, err)
	assert.Equal(t, inside.ID, got.ID)
	_, err = s.ClaimNext(ctx, "other")
	assert.ErrorIs(t, err, tg.ErrNoReady, "gpu is at its limit")
	b, err = s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{elsewhere.ID}, ids(b.Limited))
}

// testLimitsClaimOrder: ClaimNext passes over the tasks a reached limit
// holds back and takes the next in claim order — ties in priority broken
// by creation, alone, with WithUnder and with WithLabels — and takes a
// held-back task again, in its place in the order, once it loses the
// limited label or the limit is raised (no holder finishing).
func testLimitsClaimOrder(t *testing.T, s tg.Store) {
	l := limiter(t, s)
	require.NoError(t, l.SetLimit(ctx, "gpu", 1))
	epic := create(t, s, "epic")
	mk := func(subject string, p tg.Priority, parent tg.ID, labels ...string) tg.Task {
		task, err := s.Create(ctx, tg.NewTask{Subject: subject, Priority: p, Parent: parent, Labels: labels})
		require.NoError(t, err)
		return task
	}
	g1 := mk("g1", tg.P1, epic.ID, "gpu")
	g2 := mk("g2", tg.P1, epic.ID, "gpu")
	x1 := mk("x1", tg.P1, epic.ID) // ties with g1 and g2, created after them
	y := mk("y", tg.P0, 0, "gpu", "ml")
	z := mk("z", tg.P2, 0)
	next := func(owner string, opts ...tg.ClaimOption) tg.ID {
		t.Helper()
		task, err := s.ClaimNext(ctx, owner, opts...)
		require.NoError(t, err)
		return task.ID
	}
	release := func(id tg.ID, owner string) {
		t.Helper()
		_, err := s.Release(ctx, id, owner)
		require.NoError(t, err)
	}

	assert.Equal(t, y.ID, next("holder"), "the most urgent; gpu's limit is now reached")
	assert.Equal(t, x1.ID, next("w", tg.WithUnder(epic.ID)), "g1 and g2, as urgent and older, are held back")
	release(x1.ID, "w")
	_, err := s.ClaimNext(ctx, "w", tg.WithLabels("gpu"))
	assert.ErrorIs(t, err, tg.ErrNoReady, "every ready gpu task is held back")
	assert.Equal(t, x1.ID, next("w"))
	release(x1.ID, "w")

	_, err = s.Update(ctx, g2.ID, tg.Patch{Labels: &[]string{}})
	require.NoError(t, err)
	assert.Equal(t, g2.ID, next("w"), "without the label it is not held back, and older than x1")
	release(g2.ID, "w")

	require.NoError(t, l.SetLimit(ctx, "gpu", 2))
	assert.Equal(t, []tg.ID{g1.ID, g2.ID, x1.ID, z.ID}, []tg.ID{next("a"), next("b"), next("c"), next("d")},
		"the limit raised: g1 first again, then the claim order")
}

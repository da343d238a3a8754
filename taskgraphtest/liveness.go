// Conformance cases for progress-aware liveness: a claim ends at its
// MaxRuntime, or after its no-progress window, however its lease is
// renewed; a note is progress.

package taskgraphtest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// lapseOf waits until the wall clock is past the lapse of task's claim.
func lapseOf(task tg.Task) {
	at := task.LapsesAt()
	for !time.Now().After(at) {
		time.Sleep(time.Millisecond)
	}
}

// testLivenessFields: MaxRuntime and ProgressWindow are stored as given,
// in whole microseconds, set and cleared by Update, refused out of range
// by Create and Update alike, and a task without them has no Extra.
func testLivenessFields(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "capped", MaxRuntime: 2*time.Hour + time.Nanosecond, ProgressWindow: 30 * time.Minute})
	require.NoError(t, err)
	require.NotNil(t, a.Extra)
	assert.Equal(t, 2*time.Hour, a.Extra.MaxRuntime, "kept in whole microseconds, as every store keeps it")
	assert.Equal(t, 30*time.Minute, a.Extra.ProgressWindow)
	got, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, a.Extra, got.Extra)

	plain, err := s.Create(ctx, tg.NewTask{Subject: "plain"})
	require.NoError(t, err)
	assert.Nil(t, plain.Extra, "a task without limits has no Extra")

	for _, nt := range []tg.NewTask{
		{Subject: "x", MaxRuntime: -time.Second},
		{Subject: "x", MaxRuntime: tg.MaxLiveness + time.Second},
		{Subject: "x", ProgressWindow: -time.Second},
		{Subject: "x", ProgressWindow: tg.MaxLiveness + time.Second},
	} {
		_, err := s.Create(ctx, nt)
		var inv *tg.InvalidError
		require.ErrorAs(t, err, &inv, "%+v", nt)
	}
	bad := -time.Minute
	_, err = s.Update(ctx, a.ID, tg.Patch{ProgressWindow: &bad})
	assert.ErrorIs(t, err, tg.ErrInvalid)

	zero, hour := time.Duration(0), time.Hour
	u, err := s.Update(ctx, a.ID, tg.Patch{MaxRuntime: &zero})
	require.NoError(t, err)
	require.NotNil(t, u.Extra)
	assert.Equal(t, time.Duration(0), u.Extra.MaxRuntime)
	u, err = s.Update(ctx, a.ID, tg.Patch{ProgressWindow: &zero})
	require.NoError(t, err)
	assert.Nil(t, u.Extra, "both limits cleared: no Extra, as a task that never had them")
	u, err = s.Update(ctx, plain.ID, tg.Patch{MaxRuntime: &hour})
	require.NoError(t, err)
	require.NotNil(t, u.Extra)
	assert.Equal(t, time.Hour, u.Extra.MaxRuntime)
	last := u.History[len(u.History)-1]
	assert.Equal(t, tg.HistoryEdited, last.Event)
	assert.Equal(t, "maxRuntime", last.Detail)
}

// testMaxRuntime: a claim lapses at ClaimedAt plus MaxRuntime although its
// lease runs on; its holder's renewal is refused (ErrLapsed, naming the
// runtime clock); it no longer holds its label's limit; ClaimNext takes
// the task over, counting the attempt, and the history says why.
func testMaxRuntime(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "runs long", MaxRuntime: 300 * time.Millisecond, MaxAttempts: 3})
	require.NoError(t, err)
	c, err := s.Claim(ctx, a.ID, "ann", tg.WithLease(time.Hour))
	require.NoError(t, err)
	at, clock := c.Lapse()
	assert.Equal(t, tg.ClockRuntime, clock, "the runtime ends the claim before its hour of lease")
	assert.True(t, c.ClaimedAt.Add(300*time.Millisecond).Equal(at))
	assert.True(t, c.Holds(c.ClaimedAt))
	_, err = s.ClaimNext(ctx, "bob")
	assert.ErrorIs(t, err, tg.ErrNoReady, "held until its runtime is up")

	lapseOf(c)
	assert.False(t, c.Holds(time.Now()))
	_, err = s.Renew(ctx, a.ID, "ann", time.Hour)
	var le *tg.LapsedError
	require.ErrorAs(t, err, &le, "no renewal brings back a claim past its MaxRuntime")
	assert.Equal(t, tg.ClockRuntime, le.Clock)
	assert.Equal(t, a.ID, le.ID)
	assert.True(t, errors.Is(err, tg.ErrLapsed))

	b, err := s.ClaimNext(ctx, "bob", tg.WithLease(time.Hour))
	require.NoError(t, err, "a claim past its MaxRuntime is taken over as a lapsed lease is")
	assert.Equal(t, a.ID, b.ID)
	assert.Equal(t, "bob", b.Owner)
	assert.Equal(t, "ann", b.PrevOwner)
	assert.Equal(t, 1, b.Attempts, "the attempt that ran too long is counted")
	h := b.History[len(b.History)-2]
	assert.Equal(t, tg.HistoryLapsed, h.Event)
	assert.Equal(t, "ann", h.By)
	assert.Equal(t, "ran past its max runtime of 300ms", h.Detail)
	assert.True(t, at.Equal(h.At), "the lapse is recorded at the time it happened")
	assert.True(t, b.ClaimedAt.Add(300*time.Millisecond).Equal(b.LapsesAt()), "the new attempt has its own runtime")
}

// testProgressWindow: a claim lapses once it has gone its window without
// progress, whatever renews its lease; a note is progress, and moves the
// clock; past the window, the renewal is refused and another agent takes
// the task, the history saying "no progress for".
func testProgressWindow(t *testing.T, s tg.Store) {
	n := noter(t, s)
	const window = 400 * time.Millisecond
	a, err := s.Create(ctx, tg.NewTask{Subject: "may hang", ProgressWindow: window})
	require.NoError(t, err)
	c, err := s.Claim(ctx, a.ID, "ann", tg.WithLease(time.Hour))
	require.NoError(t, err)
	at, clock := c.Lapse()
	assert.Equal(t, tg.ClockProgress, clock)
	assert.True(t, c.ClaimedAt.Add(window).Equal(at), "the claim is progress")

	r, err := s.Renew(ctx, a.ID, "ann", time.Hour)
	require.NoError(t, err)
	assert.True(t, at.Equal(r.LapsesAt()), "a renewal is not progress")

	noted, err := n.Note(ctx, a.ID, "ann", "ran the tests: 3 failures left")
	require.NoError(t, err)
	assert.True(t, noted.Notes[len(noted.Notes)-1].At.Equal(noted.Progress()))
	at, clock = noted.Lapse()
	assert.Equal(t, tg.ClockProgress, clock)
	assert.True(t, noted.Progress().Add(window).Equal(at), "a note moves the progress clock")

	lapseOf(noted)
	_, err = s.Renew(ctx, a.ID, "ann", time.Hour)
	var le *tg.LapsedError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, tg.ClockProgress, le.Clock)
	all, err := s.List(ctx)
	require.NoError(t, err)
	ex, err := tg.Explain(all, a.ID, time.Now())
	require.NoError(t, err)
	assert.Contains(t, ex.Text, "no-progress window", "explain says which clock ran out")

	b, err := s.ClaimNext(ctx, "bob")
	require.NoError(t, err)
	assert.Equal(t, a.ID, b.ID)
	h := b.History[len(b.History)-2]
	assert.Equal(t, tg.HistoryLapsed, h.Event)
	assert.Equal(t, "no progress for 400ms", h.Detail)
	assert.True(t, at.Equal(h.At))
}

// testLivenessDefaults: a label's default liveness, kept by the store,
// applies to the tasks created with the label (Create and CreatePlan)
// that set none of their own, the shortest of several labels' winning; a
// task's own value wins; removing a default leaves the tasks as they are;
// bad arguments are refused.
func testLivenessDefaults(t *testing.T, s tg.Store) {
	ld, ok := s.(tg.LivenessDefaulter)
	require.True(t, ok, "%T does not implement taskgraph.LivenessDefaulter", s)
	require.NoError(t, ld.SetLivenessDefault(ctx, "slow", tg.LivenessDefault{MaxRuntime: time.Hour}))
	require.NoError(t, ld.SetLivenessDefault(ctx, "gpu", tg.LivenessDefault{MaxRuntime: 30 * time.Minute, ProgressWindow: 10 * time.Minute}))
	got, err := ld.LivenessDefaults(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]tg.LivenessDefault{"slow": {MaxRuntime: time.Hour}, "gpu": {MaxRuntime: 30 * time.Minute, ProgressWindow: 10 * time.Minute}}, got)

	both, err := s.Create(ctx, tg.NewTask{Subject: "both", Labels: []string{"slow", "gpu"}})
	require.NoError(t, err)
	require.NotNil(t, both.Extra)
	assert.Equal(t, tg.Extra{MaxRuntime: 30 * time.Minute, ProgressWindow: 10 * time.Minute}, *both.Extra, "the shortest of its labels' defaults")
	own, err := s.Create(ctx, tg.NewTask{Subject: "own", Labels: []string{"gpu"}, MaxRuntime: 2 * time.Hour})
	require.NoError(t, err)
	assert.Equal(t, tg.Extra{MaxRuntime: 2 * time.Hour, ProgressWindow: 10 * time.Minute}, *own.Extra, "its own value wins")
	plain, err := s.Create(ctx, tg.NewTask{Subject: "no label"})
	require.NoError(t, err)
	assert.Nil(t, plain.Extra)
	planned, err := s.CreatePlan(ctx, []tg.NewTask{{Subject: "planned", Key: "p1", Labels: []string{"slow"}}})
	require.NoError(t, err)
	assert.Equal(t, tg.Extra{MaxRuntime: time.Hour}, *planned[0].Extra, "a plan's tasks get them too")

	require.NoError(t, ld.SetLivenessDefault(ctx, "gpu", tg.LivenessDefault{}))
	got, err = ld.LivenessDefaults(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]tg.LivenessDefault{"slow": {MaxRuntime: time.Hour}}, got, "the zero value removes a default")
	again, err := s.Get(ctx, both.ID)
	require.NoError(t, err)
	assert.Equal(t, both.Extra, again.Extra, "a task keeps what it was created with")
	later, err := s.Create(ctx, tg.NewTask{Subject: "later", Labels: []string{"gpu"}})
	require.NoError(t, err)
	assert.Nil(t, later.Extra)

	for _, c := range []struct {
		label string
		d     tg.LivenessDefault
	}{{"Not A Label", tg.LivenessDefault{MaxRuntime: time.Hour}}, {"gpu", tg.LivenessDefault{MaxRuntime: -time.Second}}, {"gpu", tg.LivenessDefault{ProgressWindow: tg.MaxLiveness + 1}}} {
		err := ld.SetLivenessDefault(ctx, c.label, c.d)
		assert.ErrorIs(t, err, tg.ErrInvalid, "%q %+v", c.label, c.d)
	}
}

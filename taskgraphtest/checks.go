// Conformance cases for verified completion: a task names a check (never
// a command) and acceptance items; Complete of such a task needs passing
// evidence of its check or SkipCheck, and records either in the history.

package taskgraphtest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// passing is evidence that check name passed.
func passing(name string) tg.Evidence {
	return tg.Evidence{Check: name, Duration: 1500 * time.Millisecond, Digest: "sha256:" + strings.Repeat("ab", 32), Tail: "ok\n", Commit: strings.Repeat("c", 40)}
}

// testCheckFields: a check and acceptance items are stored as given, set
// and cleared by Update, refused malformed by Create and Update alike
// (nothing written), and a task without them has no Extra.
func testCheckFields(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "checked", Check: "unit-tests", Acceptance: []string{"the tests pass", "no new lint"}})
	require.NoError(t, err)
	require.NotNil(t, a.Extra)
	assert.Equal(t, "unit-tests", a.Extra.Check)
	assert.Equal(t, []string{"the tests pass", "no new lint"}, a.Extra.Acceptance)
	got, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, a.Extra, got.Extra)

	for _, nt := range []tg.NewTask{
		{Subject: "x", Check: "go test ./..."}, // a command is not a name
		{Subject: "x", Check: strings.Repeat("c", tg.MaxLabel+1)},
		{Subject: "x", Acceptance: []string{""}},
		{Subject: "x", Acceptance: []string{strings.Repeat("a", tg.MaxAcceptanceItem+1)}},
		{Subject: "x", Acceptance: slices.Repeat([]string{"a"}, tg.MaxAcceptance+1)},
		{Subject: "x", Acceptance: []string{"bad\x00"}},
	} {
		_, err := s.Create(ctx, nt)
		var inv *tg.InvalidError
		require.ErrorAs(t, err, &inv, "%+v", nt)
	}
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1, "a refused create writes nothing")

	bad := "rm -rf /"
	_, err = s.Update(ctx, a.ID, tg.Patch{Check: &bad})
	assert.ErrorIs(t, err, tg.ErrInvalid)

	lint, none := "lint", []string{}
	u, err := s.Update(ctx, a.ID, tg.Patch{Check: &lint, Acceptance: &none})
	require.NoError(t, err)
	assert.Equal(t, &tg.Extra{Check: "lint"}, u.Extra)
	empty := ""
	u, err = s.Update(ctx, a.ID, tg.Patch{Check: &empty})
	require.NoError(t, err)
	assert.Nil(t, u.Extra, "a task whose check is cleared is stored as one that never had it")
}

// testVerifiedComplete: Complete of a task with a check is refused
// (ErrUnverified, nothing written) without evidence, with failing
// evidence or evidence of another check, and by an Update to completed;
// with passing evidence it completes, records the evidence in the
// history and readies its dependents; SkipCheck completes it and records
// the skip. A task without a check completes as ever, with evidence
// recorded if given.
func testVerifiedComplete(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "checked", Check: "test"})
	require.NoError(t, err)
	dep := create(t, s, "after", a.ID)
	claimed, err := s.Claim(ctx, a.ID, "w")
	require.NoError(t, err)

	failed := passing("test")
	failed.Exit = 1
	timedOut := passing("test")
	timedOut.TimedOut, timedOut.Exit = true, -1
	for name, opts := range map[string][]tg.CompleteOption{
		"no evidence":      nil,
		"failed":           {tg.WithEvidence(failed)},
		"timed out":        {tg.WithEvidence(timedOut)},
		"another check":    {tg.WithEvidence(passing("lint"))},
		"only a result":    {tg.WithResult("done, trust me")},
		"owner any, empty": nil,
	} {
		owner := "w"
		if name == "owner any, empty" {
			owner = ""
		}
		_, err := s.Complete(ctx, a.ID, owner, opts...)
		var ue *tg.UnverifiedError
		require.ErrorAs(t, err, &ue, name)
		assert.ErrorIs(t, err, tg.ErrUnverified, name)
		assert.Equal(t, a.ID, ue.ID, name)
		assert.Equal(t, "test", ue.Check, name)
	}
	done := tg.Completed
	_, err = s.Update(ctx, a.ID, tg.Patch{Status: &done})
	assert.ErrorIs(t, err, tg.ErrUnverified, "an edit does not complete a task with a check")
	now, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, claimed.Rev, now.Rev, "a refused completion writes nothing")
	assert.Equal(t, tg.InProgress, now.Status)

	for _, ev := range []tg.Evidence{
		{Check: "Not A Name"},
		{Check: "test", Tail: strings.Repeat("x", tg.MaxEvidenceTail+1)},
		{Check: "test", Duration: -time.Second},
		{Check: "test", Tail: "\xff"},
	} {
		_, err := s.Complete(ctx, a.ID, "w", tg.WithEvidence(ev))
		assert.ErrorIs(t, err, tg.ErrInvalid, "%+v", ev)
	}
	_, err = s.Complete(ctx, a.ID, "w", tg.WithEvidence(passing("test")), tg.SkipCheck())
	assert.ErrorIs(t, err, tg.ErrInvalid, "evidence and a skip at once")

	ev := passing("test")
	c, err := s.Complete(ctx, a.ID, "w", tg.WithEvidence(ev), tg.WithResult("green"))
	require.NoError(t, err)
	assert.Equal(t, tg.Completed, c.Task.Status)
	assert.Equal(t, []tg.ID{dep.ID}, ids(c.Unblocked), "its dependents become ready")
	h := c.Task.History
	require.GreaterOrEqual(t, len(h), 2)
	assert.Equal(t, tg.HistoryVerified, h[len(h)-2].Event)
	assert.Equal(t, ev.String(), h[len(h)-2].Detail, "the evidence, as reported")
	assert.Equal(t, "w", h[len(h)-2].By)
	assert.Contains(t, h[len(h)-2].Detail, "exit 0")
	assert.Contains(t, h[len(h)-2].Detail, ev.Digest)
	assert.Contains(t, h[len(h)-2].Detail, ev.Commit)
	assert.Equal(t, tg.HistoryCompleted, h[len(h)-1].Event)
	stored, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, c.Task.History, stored.History)

	// A person's skip.
	b, err := s.Create(ctx, tg.NewTask{Subject: "checked too", Check: "test"})
	require.NoError(t, err)
	dep2 := create(t, s, "after b", b.ID)
	_, err = s.Claim(ctx, b.ID, "alice")
	require.NoError(t, err)
	c, err = s.Complete(ctx, b.ID, "alice", tg.SkipCheck())
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{dep2.ID}, ids(c.Unblocked))
	h = c.Task.History
	require.GreaterOrEqual(t, len(h), 2)
	assert.Equal(t, tg.HistorySkipped, h[len(h)-2].Event)
	assert.Contains(t, h[len(h)-2].Detail, "test")

	// Without a check: as ever, and evidence given is recorded.
	p := create(t, s, "plain")
	_, err = s.Claim(ctx, p.ID, "w")
	require.NoError(t, err)
	c, err = s.Complete(ctx, p.ID, "w", tg.WithEvidence(passing("lint")))
	require.NoError(t, err)
	assert.Equal(t, tg.HistoryVerified, c.Task.History[len(c.Task.History)-2].Event)
	q := create(t, s, "plain too")
	_, err = s.Claim(ctx, q.ID, "w")
	require.NoError(t, err)
	_, err = s.Complete(ctx, q.ID, "w")
	require.NoError(t, err)
}

// Conformance cases for notes and history: what an agent that takes a
// task over can read of the ones before it.

package taskgraphtest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// noter returns s as a Noter, failing the test if it is not one.
func noter(t *testing.T, s tg.Store) tg.Noter {
	t.Helper()
	n, ok := s.(tg.Noter)
	require.True(t, ok, "%T does not implement taskgraph.Noter", s)
	return n
}

// events returns the kinds of h, in order.
func events(h []tg.Transition) []tg.HistoryEvent {
	out := make([]tg.HistoryEvent, len(h))
	for i, e := range h {
		out[i] = e.Event
	}
	return out
}

// testNotes: notes are kept in order with author and time, on a task in
// any status; invalid notes are refused and change nothing; the oldest
// past MaxNotes are dropped; whoever takes the task over after a lapse
// sees the last note.
func testNotes(t *testing.T, s tg.Store) {
	n := noter(t, s)
	a := create(t, s, "flaky migration")
	held, err := s.Claim(ctx, a.ID, "alice", tg.WithLease(time.Nanosecond))
	require.NoError(t, err)
	lapse(held) // on a clock as coarse as Windows', a nanosecond may not have passed yet
	before := time.Now().Add(-time.Minute)
	noted, err := n.Note(ctx, a.ID, "alice", "tried raising the timeout: no change; the lock is held by «cron»")
	require.NoError(t, err)
	require.Len(t, noted.Notes, 1)
	assert.Equal(t, "alice", noted.Notes[0].Author)
	assert.True(t, noted.Notes[0].At.After(before))
	assert.Equal(t, tg.InProgress, noted.Status, "a note changes no status")

	// The lease lapsed: the next agent takes the task and reads the note.
	got, err := s.ClaimNext(ctx, "bob")
	require.NoError(t, err)
	require.Equal(t, a.ID, got.ID)
	last, ok := got.LastNote()
	require.True(t, ok)
	assert.Equal(t, "tried raising the timeout: no change; the lock is held by «cron»", last.Text)
	assert.Equal(t, "alice", last.Author)

	for _, c := range []struct{ author, text string }{{"", "x"}, {"bob", ""}, {"bob", "nul\x00"}, {"bob", strings.Repeat("x", tg.MaxNoteText+1)}} {
		_, err := n.Note(ctx, a.ID, c.author, c.text)
		assert.ErrorIs(t, err, tg.ErrInvalid, "author %q, text of %d bytes", c.author, len(c.text))
	}
	_, err = n.Note(ctx, 999, "bob", "x")
	assert.ErrorIs(t, err, tg.ErrNotFound)
	assert.Len(t, get(t, s, a.ID).Notes, 1, "refused notes change nothing")

	_, err = s.Complete(ctx, a.ID, "bob")
	require.NoError(t, err)
	for i := range tg.MaxNotes + 3 {
		_, err = n.Note(ctx, a.ID, "carol", "note "+string(rune('a'+i)))
		require.NoError(t, err, "a completed task takes notes too")
	}
	notes := get(t, s, a.ID).Notes
	require.Len(t, notes, tg.MaxNotes, "the oldest notes are dropped")
	assert.Equal(t, "note d", notes[0].Text)
	assert.Equal(t, "note "+string(rune('a'+tg.MaxNotes+2)), notes[len(notes)-1].Text)
}

// testHistory: every transition is recorded with who and when — a claim
// with its lease, the lapse (by the claim that took the task over), a
// failure with its reason, a reopening, an edit with its fields, a note, a
// release, a completion with its result — and renewals are not; past
// MaxHistory the oldest are summarised.
func testHistory(t *testing.T, s tg.Store) {
	a := create(t, s, "deploy")
	assert.Empty(t, a.History, "a new task's history is its CreatedAt")
	held, err := s.Claim(ctx, a.ID, "alice", tg.WithLease(time.Nanosecond))
	require.NoError(t, err)
	lapse(held) // on a clock as coarse as Windows', a nanosecond may not have passed yet
	got, err := s.Claim(ctx, a.ID, "bob", tg.WithLease(time.Hour))
	require.NoError(t, err)
	_, err = s.Renew(ctx, a.ID, "bob", 2*time.Hour)
	require.NoError(t, err)
	_, err = s.Fail(ctx, a.ID, "bob", "the registry timed out")
	require.NoError(t, err)
	_, err = s.Reopen(ctx, a.ID)
	require.NoError(t, err)
	subject := "deploy v2"
	_, err = s.Update(ctx, a.ID, tg.Patch{Subject: &subject, Labels: &[]string{"ops"}})
	require.NoError(t, err)
	_, err = noter(t, s).Note(ctx, a.ID, "carol", "use the mirror")
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "carol")
	require.NoError(t, err)
	_, err = s.Release(ctx, a.ID, "carol")
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "dave")
	require.NoError(t, err)
	done, err := s.Complete(ctx, a.ID, "dave", tg.WithResult("deployed from the mirror"))
	require.NoError(t, err)

	h := done.Task.History
	assert.Equal(t, []tg.HistoryEvent{tg.HistoryClaimed, tg.HistoryLapsed, tg.HistoryClaimed, tg.HistoryFailed, tg.HistoryReopened,
		tg.HistoryEdited, tg.HistoryNoted, tg.HistoryClaimed, tg.HistoryReleased, tg.HistoryClaimed, tg.HistoryCompleted}, events(h))
	by := make([]string, len(h))
	for i, e := range h {
		by[i] = e.By
	}
	assert.Equal(t, []string{"alice", "alice", "bob", "bob", "", "", "carol", "carol", "carol", "dave", "dave"}, by)
	assert.Equal(t, "lease 1ns", h[0].Detail)
	assert.Equal(t, "lease 1h0m0s", h[2].Detail)
	assert.Equal(t, "the registry timed out", h[3].Detail)
	assert.Equal(t, "was failed", h[4].Detail)
	assert.Equal(t, "subject, labels", h[5].Detail)
	assert.Equal(t, "deployed from the mirror", h[10].Detail)
	assert.False(t, h[1].At.After(got.ClaimedAt), "the lapse is dated when the lease expired, before the claim that took over")
	for i := 1; i < len(h); i++ {
		assert.False(t, h[i].At.Before(h[i-1].At), "entry %d is not older than the one before", i)
	}

	// Past MaxHistory the oldest entries are folded into one summary.
	b := create(t, s, "churn")
	for range tg.MaxHistory {
		_, err := s.Claim(ctx, b.ID, "erin")
		require.NoError(t, err)
		_, err = s.Release(ctx, b.ID, "erin")
		require.NoError(t, err)
	}
	h = get(t, s, b.ID).History
	require.Len(t, h, tg.MaxHistory)
	assert.Equal(t, tg.HistoryEarlier, h[0].Event)
	assert.Equal(t, tg.MaxHistory+1, h[0].Count, "2×MaxHistory transitions, MaxHistory-1 kept after the summary")
	assert.Equal(t, tg.HistoryReleased, h[len(h)-1].Event)
	_, err = s.ClaimNext(ctx, "frank")
	require.NoError(t, err, "a claim of a task whose history is full")
	h = get(t, s, b.ID).History
	require.Len(t, h, tg.MaxHistory)
	assert.Equal(t, tg.MaxHistory+2, h[0].Count)
	assert.Equal(t, tg.HistoryClaimed, h[len(h)-1].Event)
}

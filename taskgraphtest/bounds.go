// The conformance case for the bounds of names and counts: what no write
// stores, every store refuses alike, Load included.

package taskgraphtest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// testBounds: an owner longer than MaxOwner and an author longer than
// MaxAuthor are refused with an *InvalidError naming the field, by every
// write that would store one, and so is a loaded task out of the bounds
// of Rules.Bounded; names at the limits are kept, through a claim, a note
// and a completion that records them again. A refused write stores
// nothing.
func testBounds(t *testing.T, s tg.Store) {
	owner, author := strings.Repeat("o", tg.MaxOwner), strings.Repeat("a", tg.MaxAuthor)
	long, longAuthor := owner+"o", author+"a"
	a := create(t, s, "a")
	refused := []struct {
		field string
		do    func() error
	}{
		{"owner", func() error { _, err := s.Create(ctx, tg.NewTask{Subject: "x", Owner: long}); return err }},
		{"owner", func() error { _, err := s.Update(ctx, a.ID, tg.Patch{Owner: &long}); return err }},
		{"owner", func() error { _, err := s.Claim(ctx, a.ID, long); return err }},
		{"owner", func() error { _, err := s.ClaimNext(ctx, long); return err }},
		{"author", func() error { _, err := noter(t, s).Note(ctx, a.ID, longAuthor, "text"); return err }},
	}
	if l, ok := s.(tg.Loader); ok {
		at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for _, c := range []struct {
			field string
			edit  func(*tg.Task)
		}{
			{"tasks[0].owner", func(t *tg.Task) { t.Status, t.Owner = tg.InProgress, long }},
			{"tasks[0].prevOwner", func(t *tg.Task) { t.PrevOwner = long }},
			{"tasks[0].notes[0].author", func(t *tg.Task) { t.Notes = []tg.Note{{At: at, Author: longAuthor, Text: "t"}} }},
			{"tasks[0].history[0].by", func(t *tg.Task) { t.History = []tg.Transition{{At: at, Event: tg.HistoryNoted, By: longAuthor}} }},
			{"tasks[0].attempts", func(t *tg.Task) { t.MaxAttempts, t.Attempts = 3, tg.MaxAttemptsLimit+1 }},
			{"tasks[0].maxAttempts", func(t *tg.Task) { t.MaxAttempts = tg.MaxAttemptsLimit + 1 }},
			{"tasks[0].backoff", func(t *tg.Task) { t.Backoff = tg.MaxBackoff + time.Second }},
			{"tasks[0].history[0].count", func(t *tg.Task) { t.History = []tg.Transition{{At: at, Event: tg.HistoryEarlier, Count: -1}} }},
		} {
			task := tg.Task{ID: 100, Subject: "loaded", Status: tg.Pending}
			c.edit(&task)
			refused = append(refused, struct {
				field string
				do    func() error
			}{c.field, func() error { return l.Load(ctx, []tg.Task{task}) }})
		}
	}
	for i, w := range refused {
		err := w.do()
		require.ErrorIs(t, err, tg.ErrInvalid, "write %d", i)
		var inv *tg.InvalidError
		require.ErrorAs(t, err, &inv, "write %d", i)
		assert.Equal(t, w.field, inv.Field, "write %d", i)
	}
	all, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1, "no refused write stored anything")
	assert.Equal(t, a.Rev, all[0].Rev)

	claimed, err := s.Claim(ctx, a.ID, owner)
	require.NoError(t, err, "an owner of MaxOwner bytes")
	_, err = noter(t, s).Note(ctx, a.ID, author, "a note by an author of MaxAuthor bytes")
	require.NoError(t, err)
	done, err := s.Complete(ctx, a.ID, owner)
	require.NoError(t, err)
	got := get(t, s, a.ID)
	assert.Equal(t, owner, got.Owner)
	assert.Equal(t, author, got.Notes[0].Author)
	assert.Equal(t, []string{owner, author, owner}, []string{got.History[0].By, got.History[1].By, got.History[2].By})
	assert.Equal(t, done.Task.Rev, got.Rev)
	assert.Greater(t, got.Rev, claimed.Rev)
}

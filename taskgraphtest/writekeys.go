package taskgraphtest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// RecallWrites checks a store that records write keys (tg.KeyRecorder):
// each keyed write is recalled with the tasks of its answer, in order,
// and the revs they had right after it; a write that was refused, or made
// without a key, records nothing; a second write with a key already
// recorded is refused with an error matching tg.ErrUnknownOutcome, and
// applies nothing. newStore returns a new, empty store.
func RecallWrites(t *testing.T, newStore func(t *testing.T) tg.Store) {
	ctx := context.Background()
	s := newStore(t)
	kr, ok := s.(tg.KeyRecorder)
	require.True(t, ok, "%T records no write keys", s)
	key := func(k string) context.Context { return tg.WithWriteKey(ctx, k) }
	recall := func(k string) tg.WriteRecord {
		t.Helper()
		r, err := kr.RecallWrite(ctx, k)
		require.NoError(t, err)
		return r
	}

	a, err := s.Create(key("create"), tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	r := recall("create")
	require.True(t, r.Found)
	require.False(t, r.Refused)
	require.Equal(t, []tg.ID{a.ID}, r.Tasks)
	require.Equal(t, []int64{a.Rev}, r.Revs)

	plan, err := s.CreatePlan(key("plan"), []tg.NewTask{{Key: "x", Subject: "x", Blocks: []tg.ID{a.ID}}, {Key: "y", Subject: "y"}})
	require.NoError(t, err)
	r = recall("plan")
	require.Equal(t, []tg.ID{plan[0].ID, plan[1].ID}, r.Tasks, "the plan's tasks in input order, not the task it blocks")
	require.Equal(t, []int64{plan[0].Rev, plan[1].Rev}, r.Revs)

	claimed, err := s.ClaimNext(key("claim"), "me")
	require.NoError(t, err)
	require.Equal(t, []tg.ID{claimed.ID}, recall("claim").Tasks)
	done, err := s.Complete(key("complete"), claimed.ID, "me")
	require.NoError(t, err)
	r = recall("complete")
	require.Equal(t, []tg.ID{claimed.ID}, r.Tasks)
	require.Equal(t, []int64{done.Task.Rev}, r.Revs)

	_, err = s.Complete(key("refused"), a.ID, "me")
	require.Error(t, err, "a is pending, blocked")
	require.False(t, recall("refused").Found, "a refused write records nothing")
	desc := "no key"
	_, err = s.Update(ctx, a.ID, tg.Patch{Description: &desc})
	require.NoError(t, err)
	require.False(t, recall("").Found)
	require.False(t, recall("never").Found)

	// A second write with a recorded key applies nothing.
	before, err := s.Get(ctx, claimed.ID)
	require.NoError(t, err)
	desc = "again"
	_, err = s.Update(key("complete"), claimed.ID, tg.Patch{Description: &desc})
	require.ErrorIs(t, err, tg.ErrUnknownOutcome)
	after, err := s.Get(ctx, claimed.ID)
	require.NoError(t, err)
	require.Equal(t, before.Rev, after.Rev, "not applied")
}

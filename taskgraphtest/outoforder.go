// Conformance cases for work begun before its blockers were done, as a
// merge of two branches of a graph kept in git can leave it.

package taskgraphtest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// testOutOfOrder: no write makes a task in progress or completed wait on
// one that is not completed (Rules.Wait: an edge, a new task that blocks
// it, a new child of a completed parent). A graph loaded so, as a merge of
// two branches leaves it, follows Rules.OutOfOrder: a completed task whose
// blocker is unfinished counts as unfinished for its dependents —
// ClaimNext takes its blocker, not them; Claim refuses them naming it; a
// failed blocker strands them through it — until that blocker is
// completed; a task in progress so is not completed, and its lapsed lease
// not taken over, until its blocker is.
func testOutOfOrder(t *testing.T, s tg.Store) {
	done := func(id tg.ID) {
		t.Helper()
		_, err := s.Claim(ctx, id, "w")
		require.NoError(t, err)
		_, err = s.Complete(ctx, id, "w")
		require.NoError(t, err)
	}

	// Refused in one store.
	open := create(t, s, "open")
	finished := create(t, s, "finished")
	done(finished.ID)
	_, err := s.Update(ctx, finished.ID, tg.Patch{AddBlockedBy: []tg.ID{open.ID}})
	assert.ErrorIs(t, err, tg.ErrInvalid, "a completed task gains an unfinished blocker")
	assert.ErrorContains(t, err, "reopen it first")
	_, err = s.Update(ctx, open.ID, tg.Patch{AddBlocks: []tg.ID{finished.ID}})
	assert.ErrorIs(t, err, tg.ErrInvalid, "the same edge from the other side")
	_, err = s.Create(ctx, tg.NewTask{Subject: "late child", Parent: finished.ID})
	assert.ErrorIs(t, err, tg.ErrInvalid, "a new child of a completed parent")
	_, err = s.CreatePlan(ctx, []tg.NewTask{{Key: "late", Subject: "late", Blocks: []tg.ID{finished.ID}}})
	assert.ErrorIs(t, err, tg.ErrInvalid, "a plan's task blocking a completed one")
	held, err := s.Claim(ctx, open.ID, "ann")
	require.NoError(t, err)
	other := create(t, s, "other")
	_, err = s.Update(ctx, held.ID, tg.Patch{AddBlockedBy: []tg.ID{other.ID}})
	assert.ErrorIs(t, err, tg.ErrInvalid, "a task in progress gains an unfinished blocker")
	assert.ErrorContains(t, err, "release it first")
	_, err = s.Update(ctx, held.ID, tg.Patch{AddBlockedBy: []tg.ID{finished.ID}})
	assert.NoError(t, err, "a completed blocker is fine")
	assert.Empty(t, get(t, s, finished.ID).BlockedBy, "nothing changed")

	// Loaded so, as a merge leaves it.
	l, ok := s.(tg.Loader)
	if !ok {
		t.Skip("the store does not implement taskgraph.Loader, which is optional: no write makes the state the rest of the case needs")
	}
	n := other.ID + 1
	a, b, c, d, x, y, z := n, n+1, n+2, n+3, n+4, n+5, n+6
	past := time.Now().Add(-time.Hour)
	require.NoError(t, l.Load(ctx, []tg.Task{
		{ID: a, Subject: "reopened on one branch", Status: tg.Pending},
		{ID: b, Subject: "completed on the other", Status: tg.Completed, Owner: "bob", BlockedBy: []tg.ID{a}},
		{ID: c, Subject: "after b", Status: tg.Pending, BlockedBy: []tg.ID{b}},
		{ID: d, Subject: "claimed on the other", Status: tg.InProgress, Owner: "ann", ClaimedAt: past, LeaseExpiresAt: past, BlockedBy: []tg.ID{a}},
		{ID: x, Subject: "x", Status: tg.Pending},
		{ID: y, Subject: "completed before x", Status: tg.Completed, BlockedBy: []tg.ID{x}},
		{ID: z, Subject: "after y", Status: tg.Pending, BlockedBy: []tg.ID{y}},
	}))

	bd, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{other.ID, a, x}, ids(bd.Ready), "c and z wait: b and y were completed before their blockers")
	assert.Equal(t, []tg.ID{c, z}, ids(bd.Blocked))
	ready, err := s.List(ctx, tg.ReadyOnly())
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{other.ID, a, x}, ids(ready))
	_, err = s.Claim(ctx, c, "w")
	var be *tg.BlockedError
	require.True(t, errors.As(err, &be), "%v", err)
	assert.Equal(t, []tg.ID{b}, be.By)
	assert.Equal(t, []tg.ID{b}, be.OutOfOrder)

	for _, want := range []tg.ID{other.ID, a, x} {
		got, err := s.ClaimNext(ctx, "w")
		require.NoError(t, err)
		assert.Equal(t, want, got.ID, "the ready tasks, blockers first")
	}
	_, err = s.ClaimNext(ctx, "w")
	assert.ErrorIs(t, err, tg.ErrNoReady, "neither c, z, nor d's lapsed claim")
	_, err = s.Complete(ctx, d, "")
	assert.ErrorIs(t, err, tg.ErrBlocked, "d is not completed before a")

	_, err = s.Complete(ctx, a, "w")
	require.NoError(t, err)
	got, err := s.ClaimNext(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, c, got.ID, "b counts again once a is completed")
	got, err = s.ClaimNext(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, d, got.ID, "the lapsed claim, now that its blocker is done")
	for _, id := range []tg.ID{other.ID, held.ID, c, d} {
		_, err = s.Complete(ctx, id, "")
		require.NoError(t, err)
	}

	// A failed blocker strands the dependents of a task completed before
	// it, through it.
	_, err = s.Fail(ctx, x, "w", "broken")
	require.NoError(t, err)
	bd, err = s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{z}, ids(bd.Stranded))
	assert.Equal(t, x, bd.StrandedBy[z])
	assert.True(t, bd.Finished(), "nothing can run: the graph is finished, stalled")
}

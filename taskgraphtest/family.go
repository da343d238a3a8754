// Conformance cases for parents and children.

package taskgraphtest

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// testParents: a parent waits on its children (they are in its
// BlockedBy), becomes ready once every child is completed and is stranded
// by a failed one; the rollup is derived; ClaimNext WithUnder and the
// Under filter keep to the tree; a plan names parents by key; a parent
// link that would close a cycle is refused, and a child of a completed
// parent is not reopened.
func testParents(t *testing.T, s tg.Store) {
	epic := create(t, s, "ship the API")
	a, err := s.Create(ctx, tg.NewTask{Subject: "schema", Parent: epic.ID})
	require.NoError(t, err)
	assert.Equal(t, epic.ID, a.Parent)
	b, err := s.Create(ctx, tg.NewTask{Subject: "endpoints", Under: "#" + itoa(epic.ID), BlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err)
	assert.Equal(t, epic.ID, b.Parent)
	grand, err := s.Create(ctx, tg.NewTask{Subject: "auth endpoint", Parent: b.ID})
	require.NoError(t, err)
	other := create(t, s, "unrelated")
	e := get(t, s, epic.ID)
	assert.ElementsMatch(t, []tg.ID{a.ID, b.ID}, e.BlockedBy, "the parent waits on its children")

	all, err := s.List(ctx)
	require.NoError(t, err)
	r, children := tg.RollupOf(all, epic.ID)
	assert.Equal(t, tg.Rollup{Total: 2}, r)
	assert.Equal(t, []tg.ID{a.ID, b.ID}, children)
	under, err := s.List(ctx, tg.Under(epic.ID))
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{a.ID, b.ID, grand.ID}, ids(under), "children and their children")
	bd, err := s.Board(ctx, tg.Under(epic.ID))
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{a.ID, grand.ID}, ids(bd.Ready))
	leaf, err := s.Board(ctx, tg.Under(other.ID))
	require.NoError(t, err)
	for _, l := range leaf.Lists() {
		assert.Empty(t, l.Tasks, "nothing under a task without children: %s", l.State)
	}

	// Nothing is under a task that does not exist: an error, never an
	// empty selection that reads as all done.
	missing := other.ID + 100
	_, err = s.Board(ctx, tg.Under(missing))
	assert.ErrorIs(t, err, tg.ErrNotFound, "Board")
	_, err = s.List(ctx, tg.Under(missing))
	assert.ErrorIs(t, err, tg.ErrNotFound, "List")
	_, err = s.List(ctx, tg.Under(missing), tg.ReadyOnly())
	assert.ErrorIs(t, err, tg.ErrNotFound, "List, ready")
	_, err = s.ClaimNext(ctx, "w", tg.WithUnder(missing))
	assert.ErrorIs(t, err, tg.ErrNotFound, "ClaimNext")

	got, err := s.ClaimNext(ctx, "w", tg.WithUnder(b.ID))
	require.NoError(t, err)
	assert.Equal(t, grand.ID, got.ID, "only under b")
	_, err = s.ClaimNext(ctx, "w", tg.WithUnder(b.ID))
	assert.ErrorIs(t, err, tg.ErrNoReady)
	got, err = s.ClaimNext(ctx, "w", tg.WithUnder(epic.ID))
	require.NoError(t, err)
	assert.Equal(t, a.ID, got.ID)
	for _, id := range []tg.ID{a.ID, grand.ID} {
		_, err = s.Complete(ctx, id, "w")
		require.NoError(t, err)
	}
	_, err = s.Claim(ctx, b.ID, "w")
	require.NoError(t, err)
	_, err = s.Fail(ctx, b.ID, "w", "the spec changed")
	require.NoError(t, err)
	all, err = s.List(ctx)
	require.NoError(t, err)
	r, _ = tg.RollupOf(all, epic.ID)
	assert.Equal(t, tg.Rollup{Total: 2, Done: 1, Failed: 1}, r)
	assert.Equal(t, "1 of 2 done, 1 failed", r.String())
	bd, err = s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{epic.ID}, ids(bd.Stranded), "a failed child strands its parent")
	_, err = s.Reopen(ctx, b.ID)
	require.NoError(t, err)
	_, err = s.Claim(ctx, b.ID, "w")
	require.NoError(t, err)
	_, err = s.Complete(ctx, b.ID, "w")
	require.NoError(t, err)
	got, err = s.ClaimNext(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, epic.ID, got.ID, "every child done: the parent is ready")
	_, err = s.Complete(ctx, epic.ID, "w")
	require.NoError(t, err)
	_, err = s.Reopen(ctx, a.ID)
	assert.ErrorIs(t, err, tg.ErrInvalid, "a child of a completed parent is not reopened, as a blocker of a completed task is not")

	// A parent link that would close a cycle is refused.
	_, err = s.Create(ctx, tg.NewTask{Subject: "loop", Parent: other.ID, BlockedBy: []tg.ID{other.ID}})
	assert.ErrorIs(t, err, tg.ErrCycle)
	_, err = s.Create(ctx, tg.NewTask{Subject: "orphan", Parent: 99999})
	assert.ErrorIs(t, err, tg.ErrNotFound)
	_, err = s.Create(ctx, tg.NewTask{Subject: "twice", Parent: other.ID, Under: "#" + itoa(other.ID)})
	assert.ErrorIs(t, err, tg.ErrInvalid)

	// A plan names its parents by key.
	plan, err := s.CreatePlan(ctx, []tg.NewTask{
		{Key: "s1", Subject: "step 1", Under: "release"},
		{Key: "release", Subject: "release 2.0"},
		{Key: "s2", Subject: "step 2", Under: "release", After: []string{"s1"}},
	})
	require.NoError(t, err)
	assert.Equal(t, plan[1].ID, plan[0].Parent)
	assert.Equal(t, plan[1].ID, plan[2].Parent)
	assert.ElementsMatch(t, []tg.ID{plan[0].ID, plan[2].ID}, plan[1].BlockedBy)
	_, err = s.CreatePlan(ctx, []tg.NewTask{{Key: "x", Subject: "x", Under: "release"}})
	assert.ErrorIs(t, err, tg.ErrInvalid, "a parent outside the plan is named by id")
}

// testDeleteParent: a task with children is not deleted, as one others
// depend on is not (the error says what to do), so that no task names a
// parent that does not exist; with Detach it is, and its children are
// left without a parent, in the same write.
func testDeleteParent(t *testing.T, s tg.Store) {
	epic := create(t, s, "epic")
	a, err := s.Create(ctx, tg.NewTask{Subject: "a", Parent: epic.ID})
	require.NoError(t, err)
	b, err := s.Create(ctx, tg.NewTask{Subject: "b", Parent: epic.ID})
	require.NoError(t, err)
	err = s.Delete(ctx, epic.ID)
	assert.ErrorIs(t, err, tg.ErrInvalid)
	assert.Contains(t, err.Error(), "children")
	assert.Contains(t, err.Error(), "Detach")
	assert.Equal(t, epic.ID, get(t, s, a.ID).Parent, "nothing changed")
	get(t, s, epic.ID)

	require.NoError(t, s.Delete(ctx, epic.ID, tg.Detach()))
	for _, c := range []tg.Task{a, b} {
		got := get(t, s, c.ID)
		assert.Zero(t, got.Parent, "task %d has no parent now", c.ID)
		assert.Equal(t, c.Rev+1, got.Rev, "one write")
		last := got.History[len(got.History)-1]
		assert.Equal(t, tg.HistoryEdited, last.Event)
		assert.Equal(t, "parent", last.Detail)
	}
	_, err = s.List(ctx, tg.Under(epic.ID))
	assert.ErrorIs(t, err, tg.ErrNotFound)
}

// testReparent: Patch.Parent moves a task to another parent, or to none,
// moving the edge that makes the parent wait on it in the same write; a
// parent that is missing, the task itself, or one of its descendants is
// refused.
func testReparent(t *testing.T, s tg.Store) {
	one := create(t, s, "one")
	two := create(t, s, "two")
	c, err := s.Create(ctx, tg.NewTask{Subject: "c", Parent: one.ID})
	require.NoError(t, err)
	parent := func(id tg.ID) *tg.ID { return &id }

	moved, err := s.Update(ctx, c.ID, tg.Patch{Parent: parent(two.ID)})
	require.NoError(t, err)
	assert.Equal(t, two.ID, moved.Parent)
	assert.Empty(t, get(t, s, one.ID).BlockedBy, "the old parent no longer waits on it")
	assert.Equal(t, []tg.ID{c.ID}, get(t, s, two.ID).BlockedBy, "the new one does")
	assert.Equal(t, "blocks, parent", moved.History[len(moved.History)-1].Detail)

	_, err = s.Update(ctx, c.ID, tg.Patch{Parent: parent(c.ID)})
	assert.ErrorIs(t, err, tg.ErrInvalid, "its own parent")
	_, err = s.Update(ctx, c.ID, tg.Patch{Parent: parent(two.ID + 1000)})
	assert.ErrorIs(t, err, tg.ErrNotFound)
	_, err = s.Update(ctx, c.ID, tg.Patch{Parent: parent(-1)})
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = s.Update(ctx, two.ID, tg.Patch{Parent: parent(c.ID)})
	assert.ErrorIs(t, err, tg.ErrCycle, "a descendant as parent")
	assert.Equal(t, two.ID, get(t, s, c.ID).Parent, "nothing changed")

	none, err := s.Update(ctx, c.ID, tg.Patch{Parent: parent(0)})
	require.NoError(t, err)
	assert.Zero(t, none.Parent)
	assert.Empty(t, get(t, s, two.ID).BlockedBy)
}

func itoa(id tg.ID) string { return strconv.FormatInt(int64(id), 10) }

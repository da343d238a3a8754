// Package taskgraphtest is the conformance suite for taskgraph.Store
// implementations, in the spirit of testing/fstest: a backend passes by
// calling Run from one of its tests.
//
//	func TestConformance(t *testing.T) {
//		taskgraphtest.Run(t, func(t *testing.T) taskgraph.Store {
//			s, err := mybackend.Open(...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
package taskgraphtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// This file holds the conformance suite's entry points, Run and Watch; the
// table of Run's cases and the helpers they share; and the cases of the
// core contract: create, claim, complete, release, update, edges and
// cycles, delete, leases, concurrency, Load, Close, limits, text, and a
// watch across Close. The cases of routing are in routing.go, of the
// outcomes in outcomes.go, Watch's further checks in lapse.go, and Agree,
// the differential check against MemStore, in agree.go.

// Run checks every rule of the Store contract. newStore must return a new,
// empty store each time it is called; Run closes it.
func Run(t *testing.T, newStore func(t *testing.T) tg.Store) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			defer s.Close()
			c.fn(t, s)
		})
	}
}

var cases = []struct {
	name string
	fn   func(t *testing.T, s tg.Store)
}{
	{"CreateGet", testCreateGet},
	{"CreateValidation", testCreateValidation},
	{"ReferenceUnlockWalk", testReferenceUnlockWalk},
	{"ReferenceFourTaskGraph", testReferenceFourTaskGraph},
	{"Claim", testClaim},
	{"ClaimNext", testClaimNext},
	{"Complete", testComplete},
	{"Release", testRelease},
	{"UpdateFields", testUpdateFields},
	{"UpdateStatusRules", testUpdateStatusRules},
	{"UpdateIfRev", testUpdateIfRev},
	{"Edges", testEdges},
	{"CycleRefused", testCycleRefused},
	{"CreateWithBlocks", testCreateWithBlocks},
	{"Delete", testDelete},
	{"IDsNeverReused", testIDsNeverReused},
	{"Leases", testLeases},
	{"ConcurrentClaimNext", testConcurrentClaimNext},
	{"ContextCancelled", testContextCancelled},
	{"Unicode", testUnicode},
	{"ReturnedTasksAreCopies", testCopies},
	{"LoadAndCopy", testLoad},
	{"Close", testClose},
	{"SizeLimit", testSizeLimit},
	{"IDAndRevOverflow", testOverflow},
	{"TextIsUTF8WithoutNUL", testText},
	{"Bounds", testBounds},
	{"WatchAfterClose", testWatchAfterClose},
	{"Fail", testFail},
	{"Cancel", testCancel},
	{"Stranded", testStranded},
	{"Reopen", testReopen},
	{"CompleteWithResult", testCompleteResult},
	{"UpdateOutcomes", testUpdateOutcomes},
	{"Priority", testPriority},
	{"Labels", testLabels},
	{"ClaimNextLabels", testClaimNextLabels},
	{"ListAndBoardFilters", testFilters},
	{"Keys", testKeys},
	{"CreatePlan", testCreatePlan},
	{"CreatePlanRefused", testCreatePlanRefused},
	{"ConcurrentKeyedCreate", testConcurrentKeyedCreate},
	{"LabelledAgents", testLabelledAgents},
	{"Notes", testNotes},
	{"History", testHistory},
	{"Deferred", testDeferred},
	{"Retries", testRetries},
	{"LapsedAttempts", testLapsedAttempts},
	{"WatchUndeferred", testWatchUndeferred},
	{"Limits", testLimits},
	{"LimitsRace", testLimitsRace},
	{"AwaitRaisedLimit", testAwaitRaisedLimit},
	{"LimitedBySelection", testLimitedBySelection},
	{"LimitsClaimOrder", testLimitsClaimOrder},
	{"Parents", testParents},
	{"DeleteParent", testDeleteParent},
	{"Reparent", testReparent},
	{"OutOfOrder", testOutOfOrder},
	{"LivenessFields", testLivenessFields},
	{"MaxRuntime", testMaxRuntime},
	{"ProgressWindow", testProgressWindow},
	{"LivenessDefaults", testLivenessDefaults},
	{"Approval", testApproval},
	{"ApprovalPolicy", testApprovalPolicy},
	{"Links", testLinks},
	{"CheckFields", testCheckFields},
	{"VerifiedComplete", testVerifiedComplete},
}

var ctx = context.Background()

// lapse waits until the wall clock is past the lease of task: at once
// where the clock is fine-grained (Linux), one tick (up to 16 ms) where it
// is coarse (Windows), so that a lease of one nanosecond has expired by
// the next call.
func lapse(task tg.Task) {
	for !time.Now().After(task.LeaseExpiresAt) {
		time.Sleep(time.Millisecond)
	}
}

func create(t *testing.T, s tg.Store, subject string, blockedBy ...tg.ID) tg.Task {
	t.Helper()
	task, err := s.Create(ctx, tg.NewTask{Subject: subject, BlockedBy: blockedBy})
	require.NoError(t, err)
	return task
}

func ids(ts []tg.Task) []tg.ID {
	out := []tg.ID{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func get(t *testing.T, s tg.Store, id tg.ID) tg.Task {
	t.Helper()
	task, err := s.Get(ctx, id)
	require.NoError(t, err)
	return task
}

// requireStatusOwner requires the call that returned got and err to have
// succeeded, leaving the task with status and owner.
func requireStatusOwner(t *testing.T, got tg.Task, err error, status tg.Status, owner string) {
	t.Helper()
	require.NoError(t, err)
	assert.Equal(t, status, got.Status)
	assert.Equal(t, owner, got.Owner)
}

func testCreateGet(t *testing.T, s tg.Store) {
	before := time.Now().Add(-time.Second)
	a, err := s.Create(ctx, tg.NewTask{Subject: "setup", Description: "the schema", Metadata: map[string]any{"prio": "high"}})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(1), a.ID)
	assert.Equal(t, "setup", a.Subject)
	assert.Equal(t, "the schema", a.Description)
	assert.Equal(t, tg.Pending, a.Status)
	assert.Equal(t, "", a.Owner)
	assert.Empty(t, a.BlockedBy)
	assert.Equal(t, int64(1), a.Rev)
	assert.Equal(t, "high", a.Metadata["prio"])
	assert.True(t, a.CreatedAt.After(before), "CreatedAt %v", a.CreatedAt)
	assert.Equal(t, a.CreatedAt, a.UpdatedAt)

	b := create(t, s, "api", a.ID)
	assert.Equal(t, tg.ID(2), b.ID)
	assert.Equal(t, []tg.ID{1}, b.BlockedBy)

	got := get(t, s, a.ID)
	assert.Equal(t, []tg.ID{2}, got.Blocks, "Blocks is derived from BlockedBy")
	assert.Equal(t, a.Subject, got.Subject)
	assert.True(t, a.CreatedAt.Equal(got.CreatedAt))

	_, err = s.Get(ctx, 99)
	assert.ErrorIs(t, err, tg.ErrNotFound)
	var nf *tg.NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, tg.ID(99), nf.ID)
	assert.EqualError(t, err, "task 99 not found")

	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{1, 2}, ids(all))
}

func testCreateValidation(t *testing.T, s tg.Store) {
	create(t, s, "one")
	_, err := s.Create(ctx, tg.NewTask{Subject: ""})
	assert.ErrorIs(t, err, tg.ErrInvalid)
	var inv *tg.InvalidError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, "subject", inv.Field)

	_, err = s.Create(ctx, tg.NewTask{Subject: "x", BlockedBy: []tg.ID{7}})
	assert.ErrorIs(t, err, tg.ErrNotFound)
	_, err = s.Create(ctx, tg.NewTask{Subject: "x", Blocks: []tg.ID{7}})
	assert.ErrorIs(t, err, tg.ErrNotFound)
	_, err = s.Create(ctx, tg.NewTask{Subject: "x", BlockedBy: []tg.ID{-1}})
	assert.ErrorIs(t, err, tg.ErrInvalid)

	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{1}, ids(all), "refused creates leave the graph unchanged")
	assert.Empty(t, get(t, s, 1).Blocks)
}

// The s12 walk: schema; endpoints and docs after schema; tests after endpoints.
func testReferenceUnlockWalk(t *testing.T, s tg.Store) {
	schema := create(t, s, "setup database schema")
	endpoints := create(t, s, "create API endpoints", schema.ID)
	tests := create(t, s, "write tests", endpoints.ID)
	docs := create(t, s, "write docs", schema.ID)

	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{schema.ID}, ids(b.Ready))
	assert.Equal(t, []tg.ID{endpoints.ID, tests.ID, docs.ID}, ids(b.Blocked))

	walk := []struct {
		id        tg.ID
		unblocked []tg.ID
	}{
		{schema.ID, []tg.ID{endpoints.ID, docs.ID}},
		{endpoints.ID, []tg.ID{tests.ID}},
		{docs.ID, []tg.ID{}},
		{tests.ID, []tg.ID{}},
	}
	for _, w := range walk {
		_, err := s.Claim(ctx, w.id, "agent")
		require.NoError(t, err, "claim %d", w.id)
		c, err := s.Complete(ctx, w.id, "agent")
		require.NoError(t, err, "complete %d", w.id)
		assert.Equal(t, tg.Completed, c.Task.Status)
		assert.Equal(t, w.unblocked, ids(c.Unblocked), "completing %d", w.id)
		for _, u := range c.Unblocked {
			assert.Equal(t, tg.Pending, u.Status)
		}
	}
	b, err = s.Board(ctx)
	require.NoError(t, err)
	assert.Len(t, b.Completed, 4)
	assert.Empty(t, b.Ready)
	assert.Empty(t, b.Blocked)
	assert.Equal(t, []tg.ID{schema.ID}, get(t, s, endpoints.ID).BlockedBy, "completed edges stay as history")
}

// The s07 graph: 1; 2 and 3 after 1; 4 after 2 and 3.
func testReferenceFourTaskGraph(t *testing.T, s tg.Store) {
	create(t, s, "Setup project")
	create(t, s, "Write code", 1)
	create(t, s, "Write docs", 1)
	create(t, s, "Write tests", 2, 3)
	done := func(id tg.ID) []tg.ID {
		t.Helper()
		_, err := s.Claim(ctx, id, "a")
		require.NoError(t, err)
		c, err := s.Complete(ctx, id, "a")
		require.NoError(t, err)
		return ids(c.Unblocked)
	}
	assert.Equal(t, []tg.ID{2, 3}, done(1))
	assert.Equal(t, []tg.ID{}, done(2), "4 still waits for 3")
	_, err := s.Claim(ctx, 4, "a")
	var be *tg.BlockedError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []tg.ID{3}, be.By)
	assert.Equal(t, []tg.ID{4}, done(3))
}

func testClaim(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	b := create(t, s, "b", a.ID)

	_, err := s.Claim(ctx, b.ID, "alice")
	assert.ErrorIs(t, err, tg.ErrBlocked)
	var be *tg.BlockedError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, b.ID, be.ID)
	assert.Equal(t, []tg.ID{a.ID}, be.By)
	assert.Equal(t, tg.Pending, get(t, s, b.ID).Status, "refused claim changes nothing")

	_, err = s.Claim(ctx, a.ID, "")
	assert.ErrorIs(t, err, tg.ErrInvalid)

	got, err := s.Claim(ctx, a.ID, "alice")
	requireStatusOwner(t, got, err, tg.InProgress, "alice")
	assert.False(t, got.ClaimedAt.IsZero())

	_, err = s.Claim(ctx, a.ID, "bob")
	assert.ErrorIs(t, err, tg.ErrClaimed)
	var ce *tg.ClaimedError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "alice", ce.Owner)
	assert.Contains(t, err.Error(), "alice")

	again, err := s.Claim(ctx, a.ID, "alice")
	require.NoError(t, err, "claiming what one holds is idempotent")
	assert.Equal(t, got.Rev, again.Rev)

	_, err = s.Claim(ctx, 42, "alice")
	assert.ErrorIs(t, err, tg.ErrNotFound)

	_, err = s.Complete(ctx, a.ID, "alice")
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "alice")
	assert.ErrorIs(t, err, tg.ErrInvalid, "a completed task cannot be claimed")
}

func testClaimNext(t *testing.T, s tg.Store) {
	_, err := s.ClaimNext(ctx, "w")
	assert.ErrorIs(t, err, tg.ErrNoReady)

	a := create(t, s, "a")
	b := create(t, s, "b", a.ID)
	c := create(t, s, "c")

	got, err := s.ClaimNext(ctx, "w1")
	require.NoError(t, err)
	assert.Equal(t, a.ID, got.ID, "lowest ready id first")
	assert.Equal(t, "w1", got.Owner)
	got, err = s.ClaimNext(ctx, "w2")
	require.NoError(t, err)
	assert.Equal(t, c.ID, got.ID, "blocked tasks are skipped")
	_, err = s.ClaimNext(ctx, "w3")
	assert.ErrorIs(t, err, tg.ErrNoReady)

	_, err = s.Complete(ctx, a.ID, "w1")
	require.NoError(t, err)
	got, err = s.ClaimNext(ctx, "w3")
	require.NoError(t, err)
	assert.Equal(t, b.ID, got.ID)
	_, err = s.ClaimNext(ctx, "")
	assert.ErrorIs(t, err, tg.ErrInvalid)
}

func testComplete(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	b := create(t, s, "b", a.ID)
	ready := create(t, s, "already ready")

	_, err := s.Complete(ctx, a.ID, "")
	assert.ErrorIs(t, err, tg.ErrInvalid, "a pending task must be claimed first")
	_, err = s.Claim(ctx, a.ID, "alice")
	require.NoError(t, err)
	_, err = s.Complete(ctx, a.ID, "bob")
	assert.ErrorIs(t, err, tg.ErrClaimed)
	assert.Equal(t, tg.InProgress, get(t, s, a.ID).Status)

	c, err := s.Complete(ctx, a.ID, "alice")
	require.NoError(t, err)
	assert.Equal(t, "alice", c.Task.Owner, "the owner stays as the record of who did it")
	assert.Equal(t, []tg.ID{b.ID}, ids(c.Unblocked), "only newly unblocked, not %d", ready.ID)

	_, err = s.Complete(ctx, a.ID, "alice")
	assert.ErrorIs(t, err, tg.ErrInvalid, "completing twice")
	_, err = s.Complete(ctx, 77, "")
	assert.ErrorIs(t, err, tg.ErrNotFound)

	// Owner "" completes whoever holds it.
	_, err = s.Claim(ctx, ready.ID, "carol")
	require.NoError(t, err)
	c, err = s.Complete(ctx, ready.ID, "")
	require.NoError(t, err)
	assert.Equal(t, "carol", c.Task.Owner)
}

func testRelease(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	_, err := s.Release(ctx, a.ID, "")
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = s.Claim(ctx, a.ID, "alice")
	require.NoError(t, err)
	_, err = s.Release(ctx, a.ID, "bob")
	assert.ErrorIs(t, err, tg.ErrClaimed)
	got, err := s.Release(ctx, a.ID, "alice")
	requireStatusOwner(t, got, err, tg.Pending, "")
	got, err = s.ClaimNext(ctx, "bob")
	require.NoError(t, err)
	assert.Equal(t, a.ID, got.ID, "a released task is ready again")
}

func ptr[T any](v T) *T { return &v }

func testUpdateFields(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "a", Metadata: map[string]any{"keep": "x", "drop": 1.0}})
	require.NoError(t, err)
	got, err := s.Update(ctx, a.ID, tg.Patch{
		Subject:     ptr("a2"),
		Description: ptr("more"),
		Metadata:    map[string]any{"drop": nil, "new": map[string]any{"n": 2.0}},
	})
	require.NoError(t, err)
	assert.Equal(t, "a2", got.Subject)
	assert.Equal(t, "more", got.Description)
	assert.Equal(t, map[string]any{"keep": "x", "new": map[string]any{"n": 2.0}}, got.Metadata)
	assert.Equal(t, a.Rev+1, got.Rev, "rev +1 on every write")
	assert.False(t, got.UpdatedAt.Before(a.UpdatedAt))
	assert.Equal(t, got.Metadata, get(t, s, a.ID).Metadata)

	// Metadata reads back as JSON would decode it, in every store.
	got, err = s.Update(ctx, a.ID, tg.Patch{Metadata: map[string]any{"list": []string{"x"}, "n": 3}})
	require.NoError(t, err)
	assert.Equal(t, []any{"x"}, got.Metadata["list"])
	assert.Equal(t, 3.0, get(t, s, a.ID).Metadata["n"])
	_, err = s.Update(ctx, a.ID, tg.Patch{Metadata: map[string]any{"bad": func() {}}})
	assert.ErrorIs(t, err, tg.ErrInvalid)

	_, err = s.Update(ctx, a.ID, tg.Patch{Subject: ptr("")})
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = s.Update(ctx, 9, tg.Patch{Subject: ptr("x")})
	assert.ErrorIs(t, err, tg.ErrNotFound)
	_, err = s.Update(ctx, a.ID, tg.Patch{Status: ptr(tg.Status("done"))})
	var inv *tg.InvalidError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, "status", inv.Field)
	assert.Equal(t, "a2", get(t, s, a.ID).Subject, "refused updates change nothing")
}

func testUpdateStatusRules(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	b := create(t, s, "b", a.ID)
	for _, st := range []tg.Status{tg.InProgress, tg.Completed} {
		_, err := s.Update(ctx, b.ID, tg.Patch{Status: ptr(st), Owner: ptr("x")})
		assert.ErrorIs(t, err, tg.ErrBlocked, "no task enters %s while a blocker is unfinished", st)
	}
	_, err := s.Update(ctx, a.ID, tg.Patch{Status: ptr(tg.InProgress)})
	assert.ErrorIs(t, err, tg.ErrInvalid, "in_progress needs an owner")

	got, err := s.Update(ctx, a.ID, tg.Patch{Status: ptr(tg.Completed)})
	require.NoError(t, err, "a ready task may be completed directly, as in the reference")
	assert.Equal(t, tg.Completed, got.Status)

	// Removing the blocker and starting in one patch is judged on the
	// patched edges.
	c := create(t, s, "c")
	d := create(t, s, "d", c.ID)
	got, err = s.Update(ctx, d.ID, tg.Patch{RemoveBlockedBy: []tg.ID{c.ID}, Status: ptr(tg.InProgress), Owner: ptr("x")})
	require.NoError(t, err)
	assert.Equal(t, tg.InProgress, got.Status)

	got, err = s.Update(ctx, d.ID, tg.Patch{Status: ptr(tg.Pending)})
	require.NoError(t, err)
	assert.Equal(t, "", got.Owner, "back to pending clears the owner")
}

func testUpdateIfRev(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	got, err := s.Update(ctx, a.ID, tg.Patch{Description: ptr("one"), IfRev: a.Rev})
	require.NoError(t, err)
	_, err = s.Update(ctx, a.ID, tg.Patch{Description: ptr("two"), IfRev: a.Rev})
	assert.ErrorIs(t, err, tg.ErrConflict)
	var ce *tg.ConflictError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, got.Rev, ce.Got)
	assert.Equal(t, "one", get(t, s, a.ID).Description)
}

func testEdges(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	b := create(t, s, "b")
	c := create(t, s, "c")

	_, err := s.Update(ctx, a.ID, tg.Patch{AddBlockedBy: []tg.ID{a.ID}})
	assert.ErrorIs(t, err, tg.ErrInvalid, "self edge")
	_, err = s.Update(ctx, a.ID, tg.Patch{AddBlockedBy: []tg.ID{99}})
	assert.ErrorIs(t, err, tg.ErrNotFound)
	_, err = s.Update(ctx, a.ID, tg.Patch{AddBlocks: []tg.ID{99}})
	assert.ErrorIs(t, err, tg.ErrNotFound)

	got, err := s.Update(ctx, c.ID, tg.Patch{AddBlockedBy: []tg.ID{a.ID, b.ID, a.ID}})
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{a.ID, b.ID}, got.BlockedBy, "duplicates are dropped")

	got, err = s.Update(ctx, c.ID, tg.Patch{RemoveBlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{b.ID}, got.BlockedBy)

	// AddBlocks writes the other task's BlockedBy.
	_, err = s.Update(ctx, a.ID, tg.Patch{AddBlocks: []tg.ID{b.ID, c.ID}})
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{a.ID}, get(t, s, b.ID).BlockedBy)
	assert.Equal(t, []tg.ID{b.ID, a.ID}, get(t, s, c.ID).BlockedBy)
	assert.Equal(t, []tg.ID{b.ID, c.ID}, get(t, s, a.ID).Blocks)

	_, err = s.Update(ctx, a.ID, tg.Patch{RemoveBlocks: []tg.ID{c.ID}})
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{b.ID}, get(t, s, c.ID).BlockedBy)
	assert.Equal(t, []tg.ID{b.ID}, get(t, s, a.ID).Blocks)
}

func testCycleRefused(t *testing.T, s tg.Store) {
	for range 5 {
		create(t, s, "t")
	}
	// 3 -> 5 (5 blocked by 3), then adding 5 -> 3 closes 3 -> 5 -> 3.
	_, err := s.Update(ctx, 5, tg.Patch{AddBlockedBy: []tg.ID{3}})
	require.NoError(t, err)
	_, err = s.Update(ctx, 3, tg.Patch{AddBlockedBy: []tg.ID{5}})
	assert.ErrorIs(t, err, tg.ErrCycle)
	var ce *tg.CycleError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []tg.ID{3, 5, 3}, ce.Path)
	assert.EqualError(t, err, "dependency cycle 3 -> 5 -> 3")
	assert.Empty(t, get(t, s, 3).BlockedBy, "refused edge leaves the graph unchanged")

	// A longer one: 1 -> 2 -> 4 -> 5 plus 3 -> 5; adding 5 -> 1 through AddBlocks.
	_, err = s.Update(ctx, 2, tg.Patch{AddBlockedBy: []tg.ID{1}})
	require.NoError(t, err)
	_, err = s.Update(ctx, 4, tg.Patch{AddBlockedBy: []tg.ID{2}})
	require.NoError(t, err)
	_, err = s.Update(ctx, 5, tg.Patch{AddBlockedBy: []tg.ID{4}})
	require.NoError(t, err)
	_, err = s.Update(ctx, 5, tg.Patch{AddBlocks: []tg.ID{1}})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []tg.ID{1, 2, 4, 5, 1}, ce.Path)
	assert.Empty(t, get(t, s, 1).BlockedBy)

	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Nil(t, tg.FindCycle(all))
	_, err = tg.TopoOrder(all)
	assert.NoError(t, err)
}

func testCreateWithBlocks(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	b := create(t, s, "b", a.ID)
	n, err := s.Create(ctx, tg.NewTask{Subject: "between", BlockedBy: []tg.ID{a.ID}, Blocks: []tg.ID{b.ID}})
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{b.ID}, n.Blocks)
	assert.Equal(t, []tg.ID{a.ID, n.ID}, get(t, s, b.ID).BlockedBy)

	_, err = s.Create(ctx, tg.NewTask{Subject: "loop", BlockedBy: []tg.ID{b.ID}, Blocks: []tg.ID{a.ID}})
	assert.ErrorIs(t, err, tg.ErrCycle)
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 3, "the refused create wrote nothing")
	assert.Empty(t, get(t, s, a.ID).BlockedBy)
}

func testDelete(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	b := create(t, s, "b", a.ID)
	err := s.Delete(ctx, a.ID)
	assert.ErrorIs(t, err, tg.ErrInvalid, "refused while b depends on a")
	assert.Contains(t, err.Error(), "Detach")
	get(t, s, a.ID)

	require.NoError(t, s.Delete(ctx, a.ID, tg.Detach()))
	_, err = s.Get(ctx, a.ID)
	assert.ErrorIs(t, err, tg.ErrNotFound)
	assert.Empty(t, get(t, s, b.ID).BlockedBy, "Detach removed the edge")
	assert.ErrorIs(t, s.Delete(ctx, a.ID), tg.ErrNotFound)
	require.NoError(t, s.Delete(ctx, b.ID))
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, all)
}

func testIDsNeverReused(t *testing.T, s tg.Store) {
	create(t, s, "a")
	b := create(t, s, "b")
	require.NoError(t, s.Delete(ctx, b.ID))
	c := create(t, s, "c")
	assert.Equal(t, b.ID+1, c.ID, "a deleted id is never reused")
}

func testLeases(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	b := create(t, s, "b")
	long, err := s.Claim(ctx, a.ID, "alice", tg.WithLease(time.Hour))
	require.NoError(t, err)
	assert.True(t, long.LeaseExpiresAt.After(time.Now().Add(50*time.Minute)))
	_, err = s.Claim(ctx, a.ID, "bob")
	assert.ErrorIs(t, err, tg.ErrClaimed, "an unexpired lease holds")

	// A lease of one nanosecond has expired by the next call.
	lapsing, err := s.Claim(ctx, b.ID, "carol", tg.WithLease(time.Nanosecond))
	require.NoError(t, err)
	lapse(lapsing)
	got, err := s.ClaimNext(ctx, "dave")
	require.NoError(t, err)
	assert.Equal(t, b.ID, got.ID, "an expired lease can be claimed by anyone")
	assert.Equal(t, "dave", got.Owner)
	assert.Equal(t, "carol", got.PrevOwner)
	assert.True(t, got.LeaseExpiresAt.IsZero(), "claimed without a lease: never expires")
	_, err = s.Complete(ctx, b.ID, "carol")
	assert.ErrorIs(t, err, tg.ErrClaimed, "the previous owner lost it")

	before := get(t, s, a.ID)
	renewed, err := s.Renew(ctx, a.ID, "alice", 2*time.Hour)
	require.NoError(t, err)
	assert.True(t, renewed.LeaseExpiresAt.After(long.LeaseExpiresAt))
	assert.Equal(t, before.Rev+1, renewed.Rev, "a renewal is a new version")
	assert.True(t, before.UpdatedAt.Equal(renewed.UpdatedAt),
		"a renewal changes the lease, not the task: UpdatedAt stays (a graph kept in git stays clean while a lease is renewed)")
	_, err = s.Renew(ctx, a.ID, "bob", time.Hour)
	assert.ErrorIs(t, err, tg.ErrClaimed)
	_, err = s.Renew(ctx, a.ID, "alice", 0)
	assert.ErrorIs(t, err, tg.ErrInvalid)
}

func testConcurrentClaimNext(t *testing.T, s tg.Store) {
	const n, workers = 40, 8
	for i := range n {
		create(t, s, fmt.Sprint("t", i))
	}
	var mu sync.Mutex
	claimed := map[tg.ID]string{}
	var wg sync.WaitGroup
	for w := range workers {
		owner := fmt.Sprint("w", w)
		wg.Go(func() {
			for {
				task, err := s.ClaimNext(ctx, owner)
				if errors.Is(err, tg.ErrNoReady) {
					return
				}
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				if prev, dup := claimed[task.ID]; dup {
					t.Errorf("task %d claimed by %s and %s", task.ID, prev, owner)
				}
				claimed[task.ID] = owner
				mu.Unlock()
				_, err = s.Complete(ctx, task.ID, owner)
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Len(t, claimed, n)
}

func testContextCancelled(t *testing.T, s tg.Store) {
	create(t, s, "a")
	c, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Create(c, tg.NewTask{Subject: "b"})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Get(c, 1)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = s.Board(c)
	assert.ErrorIs(t, err, context.Canceled)
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

func testUnicode(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "设置数据库 <schema> & «données»", Description: "タスク ✓"})
	require.NoError(t, err)
	got := get(t, s, a.ID)
	assert.Equal(t, a.Subject, got.Subject)
	assert.Equal(t, a.Description, got.Description)
}

func testCopies(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	b, err := s.Create(ctx, tg.NewTask{Subject: "b", BlockedBy: []tg.ID{a.ID}, Metadata: map[string]any{"k": []any{"v"}}})
	require.NoError(t, err)
	b.BlockedBy[0] = 99
	b.Metadata["k"].([]any)[0] = "changed"
	got := get(t, s, b.ID)
	assert.Equal(t, []tg.ID{a.ID}, got.BlockedBy)
	assert.Equal(t, []any{"v"}, got.Metadata["k"])
}

func testLoad(t *testing.T, s tg.Store) {
	l, ok := s.(tg.Loader)
	if !ok {
		t.Skip("the store does not implement taskgraph.Loader, which is optional")
	}
	src := tg.NewMemStore()
	for _, subj := range []string{"a", "b", "c", "d"} {
		create(t, src, subj)
	}
	_, err := src.Update(ctx, 3, tg.Patch{AddBlockedBy: []tg.ID{1, 2}, Metadata: map[string]any{"k": "v"}})
	require.NoError(t, err)
	_, err = src.Claim(ctx, 1, "alice")
	require.NoError(t, err)
	_, err = src.Complete(ctx, 1, "alice")
	require.NoError(t, err)
	require.NoError(t, src.Delete(ctx, 4))
	_, err = src.Claim(ctx, 2, "bob")
	require.NoError(t, err)

	require.NoError(t, tg.Copy(ctx, l, src))
	want, err := src.List(ctx)
	require.NoError(t, err)
	got, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].ID, got[i].ID)
		assert.Equal(t, want[i].Subject, got[i].Subject)
		assert.Equal(t, want[i].Status, got[i].Status)
		assert.Equal(t, want[i].Owner, got[i].Owner)
		assert.Equal(t, want[i].BlockedBy, got[i].BlockedBy)
		assert.Equal(t, want[i].Blocks, got[i].Blocks)
		assert.Equal(t, want[i].Metadata, got[i].Metadata)
	}
	n := create(t, s, "after the copy")
	assert.Equal(t, tg.ID(4), n.ID, "ids continue after the loaded ones")

	assert.ErrorIs(t, l.Load(ctx, []tg.Task{{ID: 2, Subject: "x", Status: tg.Pending}}), tg.ErrInvalid, "an id already used")
	assert.ErrorIs(t, l.Load(ctx, []tg.Task{{ID: 10, Subject: "x", Status: tg.Pending, BlockedBy: []tg.ID{99}}}), tg.ErrNotFound)
	err = l.Load(ctx, []tg.Task{
		{ID: 10, Subject: "x", Status: tg.Pending, BlockedBy: []tg.ID{11}},
		{ID: 11, Subject: "y", Status: tg.Pending, BlockedBy: []tg.ID{10}},
	})
	assert.ErrorIs(t, err, tg.ErrCycle)
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 4, "refused loads add nothing")
}

func testClose(t *testing.T, s tg.Store) {
	create(t, s, "a")
	require.NoError(t, s.Close())
	_, err := s.List(ctx)
	assert.ErrorIs(t, err, tg.ErrClosed)
	_, err = s.Create(ctx, tg.NewTask{Subject: "b"})
	assert.ErrorIs(t, err, tg.ErrClosed)
	assert.NoError(t, s.Close(), "closing twice is harmless")
}

// testSizeLimit: a write that would store a task over MaxTaskSize is
// refused with ErrInvalid, in every store, since the file store could not
// read it back; nothing of it is stored.
func testSizeLimit(t *testing.T, s tg.Store) {
	big := strings.Repeat("x", tg.MaxTaskSize)
	_, err := s.Create(ctx, tg.NewTask{Subject: "big", Description: big})
	require.ErrorIs(t, err, tg.ErrInvalid)
	assert.Contains(t, err.Error(), "MaxTaskSize")
	small := create(t, s, "small")
	_, err = s.Update(ctx, small.ID, tg.Patch{Metadata: map[string]any{"blob": big}})
	require.ErrorIs(t, err, tg.ErrInvalid)
	_, err = s.Update(ctx, small.ID, tg.Patch{Description: ptr(big[:tg.MaxTaskSize/2]), Subject: ptr(big[:tg.MaxTaskSize/2])})
	require.ErrorIs(t, err, tg.ErrInvalid, "the limit is on the whole task")
	if l, ok := s.(tg.Loader); ok {
		err = l.Load(ctx, []tg.Task{{ID: 100, Subject: "big", Description: big, Status: tg.Pending}})
		require.ErrorIs(t, err, tg.ErrInvalid)
	}
	all, err := s.List(ctx)
	require.NoError(t, err, "every stored task reads back")
	require.Len(t, all, 1)
	assert.Equal(t, small.Rev, all[0].Rev, "refused writes change nothing")
	ok, err := s.Update(ctx, small.ID, tg.Patch{Description: ptr(big[:tg.MaxTaskSize/2])})
	require.NoError(t, err, "a task under the limit is stored")
	assert.Len(t, get(t, s, ok.ID).Description, tg.MaxTaskSize/2)
}

// testOverflow: ids stop at MaxID and revs at the highest int64 with
// ErrInvalid, never wrapping into an id or rev that no reader accepts. A
// store reaches those values only through Load.
func testOverflow(t *testing.T, s tg.Store) {
	l, ok := s.(tg.Loader)
	if !ok {
		t.Skip("the store does not implement taskgraph.Loader, the only way to reach MaxID in a test")
	}
	err := l.Load(ctx, []tg.Task{{ID: tg.MaxID + 1, Subject: "above", Status: tg.Pending}})
	require.ErrorIs(t, err, tg.ErrInvalid, "an id above MaxID")
	err = l.Load(ctx, []tg.Task{{ID: 1, Subject: "wraps", Status: tg.Pending, Rev: math.MaxInt64}})
	require.ErrorIs(t, err, tg.ErrInvalid, "a rev that cannot advance")
	require.NoError(t, l.Load(ctx, []tg.Task{
		{ID: 1, Subject: "last rev", Status: tg.Pending, Rev: math.MaxInt64 - 1},
		{ID: tg.MaxID, Subject: "last id", Status: tg.Pending},
	}))
	assert.Equal(t, int64(math.MaxInt64), get(t, s, 1).Rev)
	_, err = s.Create(ctx, tg.NewTask{Subject: "no id left"})
	require.ErrorIs(t, err, tg.ErrInvalid)
	assert.Contains(t, err.Error(), "MaxID")
	for name, write := range map[string]func() error{
		"claim":      func() error { _, err := s.Claim(ctx, 1, "a"); return err },
		"claim next": func() error { _, err := s.ClaimNext(ctx, "a"); return err },
		"update":     func() error { _, err := s.Update(ctx, 1, tg.Patch{Description: ptr("x")}); return err },
	} {
		err := write()
		require.ErrorIs(t, err, tg.ErrInvalid, name)
		assert.Contains(t, err.Error(), "highest rev", name)
	}
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{1, tg.MaxID}, ids(all), "nothing was added")
	assert.Equal(t, "last rev", all[0].Subject)
	assert.Equal(t, int64(math.MaxInt64), all[0].Rev)
}

// testText: text that is not valid UTF-8 or holds a NUL byte is refused
// with an *InvalidError naming the field, in every store and every write
// that stores text, and nothing is written.
func testText(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	for _, bad := range []string{"nul\x00inside", "bad \xff utf-8", "\xc3"} {
		writes := []struct {
			field string
			do    func() error
		}{
			{"subject", func() error { _, err := s.Create(ctx, tg.NewTask{Subject: bad}); return err }},
			{"description", func() error { _, err := s.Create(ctx, tg.NewTask{Subject: "x", Description: bad}); return err }},
			{"owner", func() error { _, err := s.Create(ctx, tg.NewTask{Subject: "x", Owner: bad}); return err }},
			{"metadata", func() error {
				_, err := s.Create(ctx, tg.NewTask{Subject: "x", Metadata: map[string]any{"k": []any{bad}}})
				return err
			}},
			{"metadata", func() error {
				_, err := s.Create(ctx, tg.NewTask{Subject: "x", Metadata: map[string]any{bad: 1}})
				return err
			}},
			{"subject", func() error { _, err := s.Update(ctx, a.ID, tg.Patch{Subject: &bad}); return err }},
			{"description", func() error { _, err := s.Update(ctx, a.ID, tg.Patch{Description: &bad}); return err }},
			{"owner", func() error { _, err := s.Update(ctx, a.ID, tg.Patch{Owner: &bad}); return err }},
			{"metadata", func() error {
				_, err := s.Update(ctx, a.ID, tg.Patch{Metadata: map[string]any{"k": bad}})
				return err
			}},
			{"subject", func() error { _, err := s.Update(ctx, 999, tg.Patch{Subject: &bad}); return err }},
			{"owner", func() error { _, err := s.Claim(ctx, a.ID, bad); return err }},
			{"owner", func() error { _, err := s.ClaimNext(ctx, bad); return err }},
			{"reason", func() error { _, err := s.Cancel(ctx, a.ID, bad); return err }},
			{"key", func() error { _, err := s.Create(ctx, tg.NewTask{Subject: "x", Key: bad}); return err }},
			{"after[0]", func() error { _, err := s.Create(ctx, tg.NewTask{Subject: "x", After: []string{bad}}); return err }},
			// A filter's owner is text too: every store refuses it alike,
			// rather than one matching nothing and another failing in SQL.
			{"owner", func() error { _, err := s.List(ctx, tg.WithOwner(bad)); return err }},
			{"owner", func() error { _, err := s.Board(ctx, tg.WithOwner(bad)); return err }},
		}
		if l, ok := s.(tg.Loader); ok {
			writes = append(writes, struct {
				field string
				do    func() error
			}{"tasks[0].subject", func() error { return l.Load(ctx, []tg.Task{{ID: 50, Subject: bad, Status: tg.Pending}}) }})
		}
		for i, w := range writes {
			err := w.do()
			require.ErrorIs(t, err, tg.ErrInvalid, "%q, write %d", bad, i)
			var inv *tg.InvalidError
			require.ErrorAs(t, err, &inv, "%q, write %d", bad, i)
			assert.Equal(t, w.field, inv.Field, "%q, write %d", bad, i)
		}
	}
	all, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1, "no refused write stored anything")
	assert.Equal(t, a.Rev, all[0].Rev)
	assert.Equal(t, tg.Pending, all[0].Status)
	got, err := s.Create(ctx, tg.NewTask{Subject: "\ufffd is a valid rune", Metadata: map[string]any{"k": "tab\tand \u00e9"}})
	require.NoError(t, err, "valid UTF-8 of any kind is kept")
	assert.Equal(t, "\ufffd is a valid rune", get(t, s, got.ID).Subject)
}

// testWatchAfterClose: closing a store ends its watches: the last event
// is of kind Ended with an error matching ErrClosed, then the channel
// closes; and Watch on a closed store fails with ErrClosed. A store that
// does not implement taskgraph.Watcher has nothing to check.
func testWatchAfterClose(t *testing.T, s tg.Store) {
	w, ok := s.(tg.Watcher)
	if !ok {
		t.Skip("the store does not implement taskgraph.Watcher, which is optional")
	}
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := w.Watch(wctx)
	require.NoError(t, err)
	create(t, s, "a")
	require.NoError(t, s.Close())
	var last tg.Event
	for closed := false; !closed; {
		select {
		case e, ok := <-events:
			if !ok {
				closed = true
				break
			}
			last = e
		case <-wctx.Done():
			t.Fatal("the channel of a watch stayed open after Close")
		}
	}
	assert.Equal(t, tg.Ended, last.Kind, "the last event says the watch ended")
	assert.ErrorIs(t, last.Err, tg.ErrClosed)
	_, err = w.Watch(ctx)
	assert.ErrorIs(t, err, tg.ErrClosed)
}

// Watch checks a taskgraph.Watcher: changes made through writer — another
// store on the same graph, as another process would be — reach watched as
// events, in order. watched must be empty.
func Watch(t *testing.T, watched tg.Watcher, writer tg.Store) {
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := watched.Watch(wctx)
	require.NoError(t, err)
	expect := func(want ...string) {
		t.Helper()
		for _, w := range want {
			select {
			case e := <-events:
				require.Equal(t, w, fmt.Sprint(e.Kind, " ", e.Task.ID))
			case <-wctx.Done():
				t.Fatalf("no event; wanted %s", w)
			}
		}
	}
	a, err := writer.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	expect(fmt.Sprint("created ", a.ID), fmt.Sprint("unblocked ", a.ID))
	b, err := writer.Create(ctx, tg.NewTask{Subject: "b", BlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err)
	expect(fmt.Sprint("created ", b.ID))
	_, err = writer.Claim(ctx, a.ID, "x")
	require.NoError(t, err)
	expect(fmt.Sprint("updated ", a.ID))
	_, err = writer.Complete(ctx, a.ID, "x")
	require.NoError(t, err)
	expect(fmt.Sprint("updated ", a.ID), fmt.Sprint("unblocked ", b.ID))
	require.NoError(t, writer.Delete(ctx, b.ID))
	expect(fmt.Sprint("deleted ", b.ID))
	cancel()
	for range events { // the channel closes once ctx is done
	}
	watchLapse(t, watched, writer)
	watchOutcomes(t, watched, writer)
}

package taskgraph_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// TestExplain: every state of a task, explained in one line, with the
// blockers a pending task waits on (status, owner, lease left), the
// blockers that do not exist, and the failed task that strands it.
func TestExplain(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	tasks := []tg.Task{
		{ID: 1, Subject: "schema", Status: tg.Completed, Owner: "alice", Result: "db/schema.sql"},
		{ID: 2, Subject: "api", Status: tg.InProgress, Owner: "bob", BlockedBy: []tg.ID{1}, LeaseExpiresAt: now.Add(4 * time.Minute)},
		{ID: 3, Subject: "ui", Status: tg.Pending, BlockedBy: []tg.ID{1}},
		{ID: 4, Subject: "tests", Status: tg.Pending, BlockedBy: []tg.ID{2, 3, 99}},
		{ID: 5, Subject: "flaky", Status: tg.Failed, Owner: "carol", Reason: "the runner crashed"},
		{ID: 6, Subject: "e2e", Status: tg.Pending, BlockedBy: []tg.ID{5, 3}},
		{ID: 7, Subject: "release", Status: tg.Pending, BlockedBy: []tg.ID{6}},
		{ID: 8, Subject: "old", Status: tg.Cancelled, Reason: "superseded by 3"},
		{ID: 9, Subject: "lapsed", Status: tg.InProgress, Owner: "dave", LeaseExpiresAt: now.Add(-90 * time.Second)},
		{ID: 10, Subject: "after lapsed", Status: tg.Pending, BlockedBy: []tg.ID{9}},
		{ID: 11, Subject: "stuck on old", Status: tg.Pending, BlockedBy: []tg.ID{8, 5}},
	}
	explain := func(id tg.ID) tg.Explanation {
		t.Helper()
		e, err := tg.Explain(tasks, id, now)
		require.NoError(t, err)
		assert.Equal(t, id, e.Task.ID)
		return e
	}

	e := explain(3)
	assert.Equal(t, tg.State("ready"), e.State)
	assert.Empty(t, e.Waiting)
	assert.Equal(t, "task 3 is ready: nothing it waits on is unfinished; claim it", e.Text)

	e = explain(4)
	assert.Equal(t, tg.State("blocked"), e.State)
	assert.Equal(t, []tg.Blocker{
		{ID: 2, Subject: "api", Status: tg.InProgress, Owner: "bob", LeaseLeft: 4 * time.Minute},
		{ID: 3, Subject: "ui", Status: tg.Pending},
	}, e.Waiting)
	assert.Equal(t, []tg.ID{99}, e.Missing)
	assert.Zero(t, e.StrandedBy)
	assert.Equal(t, "task 4 is blocked, waiting on 2 (in progress, held by bob, lease 4m0s left), 3 (pending); it names tasks that do not exist: [99] (create them or remove those edges)", e.Text)
	assert.Equal(t, []tg.ID{4, 6}, explain(3).Task.Blocks, "the task comes with Blocks")

	e = explain(6)
	assert.Equal(t, tg.State("stranded"), e.State)
	assert.Equal(t, tg.ID(5), e.StrandedBy)
	assert.Equal(t, []tg.ID{5, 3}, []tg.ID{e.Waiting[0].ID, e.Waiting[1].ID})
	assert.Equal(t, tg.Failed, e.Waiting[0].Status)
	assert.Equal(t, `task 6 is stranded: its blocker 5 failed ("the runner crashed"); reopen 5 or remove the edge`, e.Text)

	e = explain(7)
	assert.Equal(t, tg.State("stranded"), e.State)
	assert.Equal(t, tg.ID(5), e.StrandedBy, "through 6")
	assert.Equal(t, `task 7 is stranded: it waits on 6, which cannot start because 5 failed ("the runner crashed"); reopen 5 or remove the edge`, e.Text)

	e = explain(11)
	assert.Equal(t, tg.ID(5), e.StrandedBy, "the lowest cause")
	assert.Equal(t, `task 11 is stranded: its blocker 5 failed ("the runner crashed"); reopen 5 or remove the edge`, e.Text)

	e = explain(10)
	assert.Equal(t, tg.State("blocked"), e.State)
	assert.Equal(t, -90*time.Second, e.Waiting[0].LeaseLeft, "a lapsed lease has negative time left")
	assert.Contains(t, e.Text, "lease lapsed 1m30s ago: anyone may claim it")

	assert.Equal(t, "task 2 is in progress, held by bob, lease 4m0s left", explain(2).Text)
	assert.Equal(t, `task 1 is completed by alice: "db/schema.sql"`, explain(1).Text)
	assert.Equal(t, `task 5 failed (carol): "the runner crashed"; reopen it to try again`, explain(5).Text)
	assert.Equal(t, `task 8 was cancelled: "superseded by 3"; reopen it to do it after all`, explain(8).Text)
	assert.Equal(t, tg.State("cancelled"), explain(8).State)
	assert.Equal(t, tg.State("in_progress"), explain(9).State)

	_, err := tg.Explain(tasks, 42, now)
	assert.ErrorIs(t, err, tg.ErrNotFound)

	// Explain and Resolve agree on the state of every task.
	b := tg.Resolve(tasks)
	for name, list := range map[string][]tg.Task{"ready": b.Ready, "blocked": b.Blocked, "stranded": b.Stranded} {
		for _, task := range list {
			assert.Equal(t, tg.State(name), explain(task.ID).State, "task %d", task.ID)
		}
	}
	for id, cause := range b.StrandedBy {
		assert.Equal(t, cause, explain(id).StrandedBy)
	}
}

// Explain on a hand-written slice says what it sees: a status it does not
// know is named as such, never reported as cancelled; a task blocking
// itself or a cycle is explained without a hang.
func TestExplainOddSlices(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	for _, st := range []tg.Status{"weird", ""} {
		tasks := []tg.Task{{ID: 1, Subject: "a", Status: st}, {ID: 2, Subject: "b", Status: tg.Pending, BlockedBy: []tg.ID{1}}}
		e, err := tg.Explain(tasks, 1, now)
		require.NoError(t, err)
		assert.Equal(t, tg.State(st), e.State)
		assert.Equal(t, fmt.Sprintf("task 1 has the status %q, which is not pending, in_progress, completed, failed or cancelled: correct it", st), e.Text)
	}
	self := []tg.Task{{ID: 1, Subject: "a", Status: tg.Pending, BlockedBy: []tg.ID{1}}}
	e, err := tg.Explain(self, 1, now)
	require.NoError(t, err)
	assert.Equal(t, "task 1 is blocked, waiting on 1 (pending)", e.Text)
	cycle := []tg.Task{{ID: 1, Subject: "a", Status: tg.Pending, BlockedBy: []tg.ID{2, 3}}, {ID: 2, Subject: "b", Status: tg.Pending, BlockedBy: []tg.ID{1}}, {ID: 3, Subject: "c", Status: tg.Failed, Reason: "r"}}
	e, err = tg.Explain(cycle, 2, now)
	require.NoError(t, err)
	assert.Equal(t, tg.State("stranded"), e.State)
	_, err = tg.Waves(cycle)
	assert.ErrorIs(t, err, tg.ErrCycle)
	_, err = tg.CriticalPath(self)
	assert.ErrorIs(t, err, tg.ErrCycle)
}

// A failed or cancelled task strands its dependents for the look-ahead
// too: they are in no wave and on no critical path, like tasks that wait
// on a missing one.
func TestWavesLeaveOutStranded(t *testing.T) {
	task := func(id tg.ID, s tg.Status, by ...tg.ID) tg.Task {
		return tg.Task{ID: id, Subject: "t", Status: s, BlockedBy: by}
	}
	tasks := []tg.Task{
		task(1, tg.Pending),
		task(2, tg.Failed),
		task(3, tg.Pending, 1),
		task(4, tg.Pending, 2), // stranded
		task(5, tg.Pending, 4), // stranded, through 4
		task(6, tg.Cancelled),
		task(7, tg.Pending, 6, 1), // stranded
		task(8, tg.Pending, 3),
	}
	waves, err := tg.Waves(tasks)
	require.NoError(t, err)
	assert.Equal(t, [][]tg.ID{{1}, {3}, {8}}, waves)
	path, err := tg.CriticalPath(tasks)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{1, 3, 8}, path)
	b := tg.Resolve(tasks)
	assert.Equal(t, []tg.ID{4, 5, 7}, taskIDs(b.Stranded))
	assert.Equal(t, map[tg.ID]tg.ID{4: 2, 5: 2, 7: 6}, b.StrandedBy)
}

// Resolve applies filters as Store.Board does, and an invalid one selects
// nothing.
func TestResolveFilters(t *testing.T) {
	tasks := []tg.Task{
		{ID: 1, Subject: "a", Status: tg.Pending, Labels: []string{"x"}},
		{ID: 2, Subject: "b", Status: tg.Pending, BlockedBy: []tg.ID{1}, Labels: []string{"x"}},
		{ID: 3, Subject: "c", Status: tg.Pending},
	}
	b := tg.Resolve(tasks, tg.HasLabels("x"))
	assert.Equal(t, []tg.ID{1}, taskIDs(b.Ready))
	assert.Equal(t, []tg.ID{2}, taskIDs(b.Blocked))
	b = tg.Resolve(tasks, tg.Limit(1))
	assert.Equal(t, []tg.ID{1}, taskIDs(b.Ready))
	assert.Equal(t, tg.Board{}, tg.Resolve(tasks, tg.WithStatus("nope")))
}

func taskIDs(ts []tg.Task) []tg.ID {
	out := []tg.ID{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

// TestExplainLimitedWhateverTheFilters: Explain judges a task held back by
// a limit as the whole graph's ClaimNext would, whatever labels or Under
// its filters name (only WithLimits means anything to it).
func TestExplainLimitedWhateverTheFilters(t *testing.T) {
	now := time.Now()
	tasks := []tg.Task{
		{ID: 1, Subject: "run", Status: tg.InProgress, Labels: []string{"gpu"}, Owner: "o"},
		{ID: 2, Subject: "wait", Status: tg.Pending, Labels: []string{"gpu"}},
		{ID: 3, Subject: "first", Status: tg.Pending, Labels: []string{"gpu"}, Priority: 0},
	}
	lim := tg.WithLimits(map[string]int{"gpu": 2})
	for _, f := range [][]tg.Filter{{lim}, {lim, tg.HasLabels("other")}, {lim, tg.Under(99)}} {
		e, err := tg.Explain(tasks, 3, now, f...)
		require.NoError(t, err)
		assert.Equal(t, tg.StateLimited, e.State, "%d filters", len(f))
	}
}

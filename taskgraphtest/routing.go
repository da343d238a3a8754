// This file holds the cases of routing: priorities, labels, filters, keys
// and plans; and the check of labelled agents (LabelledMix, DrainLabelled,
// CheckLabelled), which a backend's own tests may run across processes.

package taskgraphtest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func prio(p tg.Priority) *tg.Priority { return &p }

// testPriority: P2 by default; P0..P4 only; ClaimNext takes the most
// urgent ready task, the first created among equals, and follows a change of
// priority.
func testPriority(t *testing.T, s tg.Store) {
	a := create(t, s, "a")
	assert.Equal(t, tg.DefaultPriority, a.Priority)
	assert.Equal(t, tg.P2, a.Priority)
	assert.Equal(t, "P2", a.Priority.String())
	for _, bad := range []tg.Priority{tg.PriorityLevel(-1), tg.PriorityLevel(5), 99} {
		_, err := s.Create(ctx, tg.NewTask{Subject: "x", Priority: bad})
		var inv *tg.InvalidError
		require.ErrorAs(t, err, &inv, "%d", bad)
		assert.Equal(t, "priority", inv.Field)
		_, err = s.Update(ctx, a.ID, tg.Patch{Priority: prio(bad)})
		require.ErrorIs(t, err, tg.ErrInvalid)
	}
	mk := func(subject string, p tg.Priority, blockedBy ...tg.ID) tg.Task {
		task, err := s.Create(ctx, tg.NewTask{Subject: subject, Priority: p, BlockedBy: blockedBy})
		require.NoError(t, err)
		require.Equal(t, p, task.Priority)
		return task
	}
	low := mk("low", tg.P4)               // 2
	urgent := mk("urgent", tg.P0, low.ID) // 3: waits on low
	b := mk("b", tg.P1)                   // 4
	c := mk("c", tg.P1)                   // 5
	d := mk("d", tg.P2)                   // 6

	got, err := s.Update(ctx, d.ID, tg.Patch{Priority: prio(tg.P0)})
	require.NoError(t, err)
	assert.Equal(t, tg.P0, got.Priority)
	assert.Equal(t, tg.P0, get(t, s, d.ID).Priority)

	var order []tg.ID
	for {
		task, err := s.ClaimNext(ctx, "w")
		if errors.Is(err, tg.ErrNoReady) {
			break
		}
		require.NoError(t, err)
		order = append(order, task.ID)
		if task.ID == low.ID {
			_, err := s.Complete(ctx, low.ID, "w")
			require.NoError(t, err)
		}
	}
	// d was raised to P0; b before c (same priority, lower id); a (P2)
	// before low (P4); urgent once low is done.
	assert.Equal(t, []tg.ID{d.ID, b.ID, c.ID, a.ID, low.ID, urgent.ID}, order)

	// Priorities order the expired leases too.
	e := mk("e", tg.P3)
	f := mk("f", tg.P1)
	for _, id := range []tg.ID{e.ID, f.ID} {
		dead, err := s.Claim(ctx, id, "dead", tg.WithLease(time.Nanosecond))
		require.NoError(t, err)
		lapse(dead)
	}
	got, err = s.ClaimNext(ctx, "rescuer")
	require.NoError(t, err)
	assert.Equal(t, f.ID, got.ID, "the most urgent lapsed lease first")

	// Among equally urgent tasks, the first created comes first, whatever
	// the ids (ids drawn for a graph kept in git do not follow creation);
	// the id breaks a tie of creation times.
	if l, ok := s.(tg.Loader); ok {
		_, err := s.ClaimNext(ctx, "drain")
		for ; err == nil; _, err = s.ClaimNext(ctx, "drain") {
		}
		require.ErrorIs(t, err, tg.ErrNoReady)
		at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		require.NoError(t, l.Load(ctx, []tg.Task{
			{ID: 900, Subject: "later", Status: tg.Pending, CreatedAt: at.Add(time.Hour), UpdatedAt: at.Add(time.Hour)},
			{ID: 901, Subject: "tie, higher id", Status: tg.Pending, CreatedAt: at, UpdatedAt: at},
			{ID: 902, Subject: "urgent, latest", Status: tg.Pending, Priority: tg.P1, CreatedAt: at.Add(2 * time.Hour), UpdatedAt: at.Add(2 * time.Hour)},
			{ID: 7000, Subject: "first created", Status: tg.Pending, CreatedAt: at.Add(-time.Minute), UpdatedAt: at},
			{ID: 899, Subject: "tie", Status: tg.Pending, CreatedAt: at, UpdatedAt: at},
		}))
		var order []tg.ID
		for task, err := s.ClaimNext(ctx, "w"); err == nil; task, err = s.ClaimNext(ctx, "w") {
			order = append(order, task.ID)
		}
		assert.Equal(t, []tg.ID{902, 7000, 899, 901, 900}, order, "priority, then creation time, then id")
	}
}

// testLabels: labels are stored sorted and without duplicates, of a
// fixed form, at most MaxLabels; Update replaces the set.
func testLabels(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "a", Labels: []string{"ui", "frontend", "ui", "area/web:v2"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"area/web:v2", "frontend", "ui"}, a.Labels)
	assert.Equal(t, a.Labels, get(t, s, a.ID).Labels)
	plain := create(t, s, "plain")
	assert.Empty(t, plain.Labels)

	many := make([]string, tg.MaxLabels+1)
	for i := range many {
		many[i] = fmt.Sprint("l", i)
	}
	for _, bad := range [][]string{{"Frontend"}, {""}, {"has space"}, {strings.Repeat("x", tg.MaxLabel+1)}, {"ok", "ü"}, many} {
		_, err := s.Create(ctx, tg.NewTask{Subject: "x", Labels: bad})
		var inv *tg.InvalidError
		require.ErrorAs(t, err, &inv, "%q", bad)
		assert.True(t, strings.HasPrefix(inv.Field, "labels"), inv.Field)
		_, err = s.Update(ctx, a.ID, tg.Patch{Labels: &bad})
		require.ErrorIs(t, err, tg.ErrInvalid)
	}
	_, err = s.Create(ctx, tg.NewTask{Subject: "x", Labels: many[:tg.MaxLabels]})
	require.NoError(t, err, "MaxLabels labels are allowed")

	got, err := s.Update(ctx, a.ID, tg.Patch{Labels: &[]string{"backend"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"backend"}, got.Labels, "the set is replaced")
	got, err = s.Update(ctx, a.ID, tg.Patch{Description: ptr("labels untouched")})
	require.NoError(t, err)
	assert.Equal(t, []string{"backend"}, got.Labels)
	got, err = s.Update(ctx, a.ID, tg.Patch{Labels: &[]string{}})
	require.NoError(t, err)
	assert.Empty(t, got.Labels)
	assert.Empty(t, get(t, s, a.ID).Labels)
}

// testClaimNextLabels: WithLabels takes only tasks that carry all the
// labels, most urgent first, lapsed leases included; Claim ignores it.
func testClaimNextLabels(t *testing.T, s tg.Store) {
	mk := func(subject string, p tg.Priority, labels ...string) tg.Task {
		task, err := s.Create(ctx, tg.NewTask{Subject: subject, Priority: p, Labels: labels})
		require.NoError(t, err)
		return task
	}
	mk("backend", tg.P0, "backend")              // 1
	fe := mk("frontend", tg.P3, "frontend")      // 2
	both := mk("both", tg.P3, "frontend", "ui")  // 3
	urgent := mk("urgent fe", tg.P1, "frontend") // 4
	mk("none", tg.P0)                            // 5

	_, err := s.ClaimNext(ctx, "fe", tg.WithLabels("Frontend"))
	assert.ErrorIs(t, err, tg.ErrInvalid, "a malformed label is refused")
	var order []tg.ID
	for {
		task, err := s.ClaimNext(ctx, "fe", tg.WithLabels("frontend"))
		if errors.Is(err, tg.ErrNoReady) {
			break
		}
		require.NoError(t, err)
		assert.Contains(t, task.Labels, "frontend")
		order = append(order, task.ID)
	}
	assert.Equal(t, []tg.ID{urgent.ID, fe.ID, both.ID}, order)

	require.NoError(t, s.Delete(ctx, both.ID))
	ui := mk("ui only", tg.P2, "ui") // 6
	_, err = s.ClaimNext(ctx, "x", tg.WithLabels("frontend", "ui"))
	assert.ErrorIs(t, err, tg.ErrNoReady, "all of the labels, not any")
	got, err := s.ClaimNext(ctx, "x", tg.WithLabels("ui"), tg.WithLabels("ui"))
	require.NoError(t, err)
	assert.Equal(t, ui.ID, got.ID)

	// A lapsed lease is taken only by an agent with its labels.
	lapsed := mk("lapsed", tg.P2, "db")
	dead, err := s.Claim(ctx, lapsed.ID, "dead", tg.WithLease(time.Nanosecond), tg.WithLabels("ignored"))
	require.NoError(t, err, "Claim ignores WithLabels")
	lapse(dead)
	_, err = s.ClaimNext(ctx, "y", tg.WithLabels("frontend"))
	assert.ErrorIs(t, err, tg.ErrNoReady)
	got, err = s.ClaimNext(ctx, "y", tg.WithLabels("db"))
	require.NoError(t, err)
	assert.Equal(t, lapsed.ID, got.ID)
	assert.Equal(t, "dead", got.PrevOwner)

	got, err = s.ClaimNext(ctx, "z")
	require.NoError(t, err, "without labels any task")
	assert.Equal(t, tg.ID(1), got.ID)
}

// testFilters: List and Board select by status, owner, labels and
// readiness, and cap at a limit; readiness is judged on the whole graph.
func testFilters(t *testing.T, s tg.Store) {
	mk := func(subject string, labels []string, blockedBy ...tg.ID) tg.Task {
		task, err := s.Create(ctx, tg.NewTask{Subject: subject, Labels: labels, BlockedBy: blockedBy})
		require.NoError(t, err)
		return task
	}
	a := mk("a", []string{"backend"})        // 1
	b := mk("b", []string{"frontend"}, a.ID) // 2: blocked
	c := mk("c", []string{"frontend", "ui"}) // 3
	d := mk("d", nil)                        // 4
	e := mk("e", []string{"frontend"}, a.ID) // 5: blocked
	_, err := s.Claim(ctx, d.ID, "alice")
	require.NoError(t, err)
	_, err = s.Claim(ctx, c.ID, "bob")
	require.NoError(t, err)

	list := func(filters ...tg.Filter) []tg.ID {
		t.Helper()
		ts, err := s.List(ctx, filters...)
		require.NoError(t, err)
		return ids(ts)
	}
	assert.Equal(t, []tg.ID{1, 2, 3, 4, 5}, list())
	assert.Equal(t, []tg.ID{a.ID, b.ID, e.ID}, list(tg.WithStatus(tg.Pending)))
	assert.Equal(t, []tg.ID{c.ID, d.ID}, list(tg.WithStatus(tg.InProgress)))
	assert.Equal(t, []tg.ID{a.ID, b.ID, c.ID, d.ID, e.ID}, list(tg.WithStatus(tg.Pending), tg.WithStatus(tg.InProgress)), "statuses add up")
	assert.Equal(t, []tg.ID{d.ID}, list(tg.WithOwner("alice")))
	assert.Equal(t, []tg.ID{a.ID, b.ID, e.ID}, list(tg.WithOwner("")), "no owner")
	assert.Equal(t, []tg.ID{b.ID, c.ID, e.ID}, list(tg.HasLabels("frontend")))
	assert.Equal(t, []tg.ID{c.ID}, list(tg.HasLabels("ui", "frontend")))
	assert.Equal(t, []tg.ID{a.ID}, list(tg.ReadyOnly()))
	assert.Empty(t, list(tg.ReadyOnly(), tg.HasLabels("frontend")))
	assert.Equal(t, []tg.ID{b.ID, c.ID}, list(tg.HasLabels("frontend"), tg.Limit(2)))
	assert.Equal(t, []tg.ID{1, 2, 3, 4, 5}, list(tg.Limit(0)), "0 is no limit")
	assert.Equal(t, []tg.ID{b.ID}, list(tg.WithStatus(tg.Pending), tg.HasLabels("frontend"), tg.Limit(1)))
	got, err := s.List(ctx, tg.HasLabels("frontend"), tg.Limit(1))
	require.NoError(t, err)
	assert.Equal(t, get(t, s, b.ID), got[0], "a filtered list holds whole tasks")
	assert.Equal(t, []tg.ID{b.ID, e.ID}, get(t, s, a.ID).Blocks)

	_, err = s.List(ctx, tg.WithStatus("done"))
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = s.List(ctx, tg.HasLabels("Not A Label"))
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = s.Board(ctx, tg.WithStatus("done"))
	assert.ErrorIs(t, err, tg.ErrInvalid)

	bd := board(t, s, tg.HasLabels("frontend"))
	assert.Empty(t, bd.Ready, "a is ready but not frontend")
	assert.Equal(t, []tg.ID{b.ID, e.ID}, ids(bd.Blocked), "blocked by a, which the filter leaves out")
	assert.Equal(t, []tg.ID{c.ID}, ids(bd.InProgress))
	bd = board(t, s, tg.Limit(1))
	assert.Equal(t, []tg.ID{a.ID}, ids(bd.Ready))
	assert.Equal(t, []tg.ID{b.ID}, ids(bd.Blocked), "the limit caps each list")
	assert.Equal(t, []tg.ID{c.ID}, ids(bd.InProgress))
	bd = board(t, s, tg.ReadyOnly())
	assert.Equal(t, []tg.ID{a.ID}, ids(bd.Ready))
	assert.Empty(t, bd.Blocked)
	assert.Empty(t, bd.InProgress)
	bd = board(t, s, tg.WithOwner("bob"))
	assert.Equal(t, []tg.ID{c.ID}, ids(bd.InProgress))
	assert.Empty(t, bd.Ready)
	_, err = s.Board(ctx, tg.Under(-1))
	assert.ErrorIs(t, err, tg.ErrInvalid, "a negative id selects nothing: not an empty, finished board")
	_, err = s.List(ctx, tg.Under(-1))
	assert.ErrorIs(t, err, tg.ErrInvalid)
}

// testKeys: a key is kept, of a fixed form, unique: a create with an
// existing key returns that task and creates nothing.
func testKeys(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "schema", Key: "schema"})
	require.NoError(t, err)
	assert.Equal(t, "schema", a.Key)
	assert.Equal(t, "schema", get(t, s, a.ID).Key)

	again, err := s.Create(ctx, tg.NewTask{Subject: "a different subject", Key: "schema", Priority: tg.P0})
	require.NoError(t, err, "a retried create")
	assert.Equal(t, a, again, "the existing task, as it is: fields are not compared")
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1, "nothing was created")

	for _, bad := range []string{"12", "#12", "0", strings.Repeat("k", tg.MaxKey+1), "tab\there", "nul\x00", "\xff", "zero\u200bwidth"} {
		_, err := s.Create(ctx, tg.NewTask{Subject: "x", Key: bad})
		var inv *tg.InvalidError
		require.ErrorAs(t, err, &inv, "%q", bad)
		assert.Equal(t, "key", inv.Field, "%q", bad)
	}
	_, err = s.Create(ctx, tg.NewTask{Subject: "x", Key: "12"})
	assert.Contains(t, err.Error(), "reads as a task id")
	for _, good := range []string{"a", "step-12", "#12a", "api endpoints", "設計/ü", strings.Repeat("k", tg.MaxKey)} {
		task, err := s.Create(ctx, tg.NewTask{Subject: "x", Key: good})
		require.NoError(t, err, "%q", good)
		assert.Equal(t, good, task.Key)
	}

	// After names blockers by key or id.
	api, err := s.Create(ctx, tg.NewTask{Subject: "api", Key: "api", After: []string{"schema", "#2"}})
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{a.ID, 2}, api.BlockedBy)
	_, err = s.Create(ctx, tg.NewTask{Subject: "x", After: []string{"no such key"}})
	var inv *tg.InvalidError
	require.ErrorAs(t, err, &inv)
	assert.Equal(t, "after[0]", inv.Field)
	_, err = s.Create(ctx, tg.NewTask{Subject: "x", After: []string{"#999"}})
	assert.ErrorIs(t, err, tg.ErrNotFound)
	_, err = s.Create(ctx, tg.NewTask{Subject: "x", After: []string{""}})
	assert.ErrorIs(t, err, tg.ErrInvalid)

	// A deleted task's key is free again.
	require.NoError(t, s.Delete(ctx, api.ID))
	n, err := s.Create(ctx, tg.NewTask{Subject: "api again", Key: "api"})
	require.NoError(t, err)
	assert.NotEqual(t, api.ID, n.ID)

	if l, ok := s.(tg.Loader); ok {
		err := l.Load(ctx, []tg.Task{{ID: 100, Subject: "dup", Status: tg.Pending, Key: "schema", Priority: tg.P2}})
		require.ErrorIs(t, err, tg.ErrInvalid, "a load may not reuse a key")
		assert.Contains(t, err.Error(), "schema")
		err = l.Load(ctx, []tg.Task{
			{ID: 100, Subject: "one", Status: tg.Pending, Key: "twin"},
			{ID: 101, Subject: "two", Status: tg.Pending, Key: "twin"},
		})
		require.ErrorIs(t, err, tg.ErrInvalid, "nor name one twice")
	}
}

// testCreatePlan: a plan is created all or nothing, its tasks naming each
// other by key, with ids in input order; a retry creates nothing.
func testCreatePlan(t *testing.T, s tg.Store) {
	existing, err := s.Create(ctx, tg.NewTask{Subject: "existing", Key: "base"})
	require.NoError(t, err)
	other := create(t, s, "other") // 2
	plan := []tg.NewTask{
		{Key: "tests", Subject: "write tests", After: []string{"api", "#2"}, Labels: []string{"qa"}},
		{Key: "schema", Subject: "schema", After: []string{"base"}, Priority: tg.P0},
		{Key: "api", Subject: "api", After: []string{"schema", "schema"}, Description: "REST"},
		{Key: "docs", Subject: "docs", After: []string{"schema"}, Blocks: []tg.ID{other.ID}},
	}
	got, err := s.CreatePlan(ctx, plan)
	require.NoError(t, err)
	require.Len(t, got, 4)
	assert.Equal(t, []tg.ID{3, 4, 5, 6}, ids(got), "new ids in input order")
	byKey := map[string]tg.Task{}
	for i, task := range got {
		assert.Equal(t, plan[i].Key, task.Key)
		assert.Equal(t, plan[i].Subject, task.Subject)
		byKey[task.Key] = task
	}
	assert.Equal(t, []tg.ID{5, 2}, byKey["tests"].BlockedBy)
	assert.Equal(t, []tg.ID{existing.ID}, byKey["schema"].BlockedBy)
	assert.Equal(t, []tg.ID{4}, byKey["api"].BlockedBy, "a key named twice is one edge")
	assert.Equal(t, []tg.ID{3}, byKey["api"].Blocks, "returned tasks show the plan's edges")
	assert.Equal(t, tg.P0, byKey["schema"].Priority)
	assert.Equal(t, []string{"qa"}, byKey["tests"].Labels)
	assert.Equal(t, []tg.ID{6}, get(t, s, other.ID).BlockedBy, "Blocks edits the existing task in the same write")
	for _, task := range got {
		assert.Equal(t, get(t, s, task.ID), task)
	}

	again, err := s.CreatePlan(ctx, plan)
	require.NoError(t, err, "a retried plan")
	assert.Equal(t, got, again, "the existing tasks, as they are")
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 6, "nothing was created twice")

	// A plan whose first task exists creates the rest, which may name it.
	more, err := s.CreatePlan(ctx, []tg.NewTask{
		{Key: "schema", Subject: "ignored"},
		{Key: "deploy", Subject: "deploy", After: []string{"schema", "tests"}},
	})
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{4, 7}, ids(more))
	assert.Equal(t, []tg.ID{4, 3}, more[1].BlockedBy)

	empty, err := s.CreatePlan(ctx, nil)
	require.NoError(t, err)
	assert.Empty(t, empty)
}

// testCreatePlanRefused: a plan that breaks a rule anywhere writes
// nothing and allocates no id; errors name the task.
func testCreatePlanRefused(t *testing.T, s tg.Store) {
	a := create(t, s, "a") // 1
	_, err := s.Create(ctx, tg.NewTask{Subject: "b", Key: "b", BlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err) // 2
	refused := []struct {
		name  string
		plan  []tg.NewTask
		is    error
		field string
	}{
		{"no key", []tg.NewTask{{Key: "x", Subject: "x"}, {Subject: "y"}}, tg.ErrInvalid, "tasks[1].key"},
		{"a key twice", []tg.NewTask{{Key: "x", Subject: "x"}, {Key: "x", Subject: "y"}}, tg.ErrInvalid, "tasks[1].key"},
		{"an empty subject", []tg.NewTask{{Key: "x", Subject: "x"}, {Key: "y"}}, tg.ErrInvalid, "tasks[1].subject"},
		{"a bad label", []tg.NewTask{{Key: "x", Subject: "x", Labels: []string{"X"}}}, tg.ErrInvalid, "tasks[0].labels[0]"},
		{"an unknown reference", []tg.NewTask{{Key: "x", Subject: "x", After: []string{"setup database"}}}, tg.ErrInvalid, "tasks[0].after[0]"},
		{"a missing id", []tg.NewTask{{Key: "x", Subject: "x"}, {Key: "y", Subject: "y", After: []string{"#9"}}}, tg.ErrNotFound, ""},
		{"a missing blocker", []tg.NewTask{{Key: "x", Subject: "x", BlockedBy: []tg.ID{9}}}, tg.ErrNotFound, ""},
		{"itself", []tg.NewTask{{Key: "x", Subject: "x", After: []string{"x"}}}, tg.ErrInvalid, "tasks[0].after[0]"},
		{"a cycle in the plan", []tg.NewTask{
			{Key: "x", Subject: "x", After: []string{"z"}},
			{Key: "y", Subject: "y", After: []string{"x"}},
			{Key: "z", Subject: "z", After: []string{"y"}},
		}, tg.ErrCycle, ""},
		{"a cycle through the graph", []tg.NewTask{
			{Key: "x", Subject: "x", After: []string{"b"}, Blocks: []tg.ID{a.ID}},
		}, tg.ErrCycle, ""},
	}
	for _, r := range refused {
		_, err := s.CreatePlan(ctx, r.plan)
		require.ErrorIs(t, err, r.is, r.name)
		if r.field != "" {
			var inv *tg.InvalidError
			require.ErrorAs(t, err, &inv, r.name)
			assert.Equal(t, r.field, inv.Field, r.name)
		}
	}
	// A missing id is named with the task of the plan that names it, as
	// every other error of a plan is: in a long plan "task 9 not found"
	// alone does not say where to look.
	_, err = s.CreatePlan(ctx, []tg.NewTask{{Key: "x", Subject: "x"}, {Key: "y", Subject: "y", After: []string{"#9"}}})
	var nf *tg.NotFoundError
	require.ErrorAs(t, err, &nf)
	assert.Equal(t, tg.ID(9), nf.ID)
	assert.EqualError(t, err, "tasks[1]: task 9 not found")
	_, err = s.CreatePlan(ctx, []tg.NewTask{{Key: "x", Subject: "x", Blocks: []tg.ID{9}}})
	assert.EqualError(t, err, "tasks[0]: task 9 not found")

	_, err = s.CreatePlan(ctx, []tg.NewTask{{Key: "x", Subject: "x", After: []string{"z"}}, {Key: "z", Subject: "z", After: []string{"x"}}})
	var ce *tg.CycleError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []tg.ID{4, 3, 4}, ce.Path, "the path holds the ids the plan would have had")
	assert.EqualError(t, err, `dependency cycle "z" -> "x" -> "z"`, "the caller never saw those ids: the error names the plan's keys")
	// Keys with quotes, a backslash and non-ASCII text are quoted as Go
	// quotes them, by every store.
	_, err = s.CreatePlan(ctx, []tg.NewTask{{Key: `q"u\o✓ te`, Subject: "x", After: []string{"s-2"}}, {Key: "s-2", Subject: "z", After: []string{`q"u\o✓ te`}}})
	require.ErrorAs(t, err, &ce)
	assert.EqualError(t, err, `dependency cycle "s-2" -> "q\"u\\o✓ te" -> "s-2"`)
	assert.ErrorIs(t, err, tg.ErrCycle)
	// Through an existing task: its id, and the new task's key.
	_, err = s.CreatePlan(ctx, []tg.NewTask{{Key: "w", Subject: "w", After: []string{"b"}, Blocks: []tg.ID{a.ID}}})
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, map[tg.ID]string{3: "w"}, ce.Keys)
	assert.Contains(t, err.Error(), `"w"`)

	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{1, 2}, ids(all), "no refused plan wrote anything")
	assert.Empty(t, get(t, s, a.ID).BlockedBy)
	n := create(t, s, "next")
	assert.Equal(t, tg.ID(3), n.ID, "no refused plan used up an id")
}

// testConcurrentKeyedCreate: creates with one key at once make one task,
// and every caller gets it.
func testConcurrentKeyedCreate(t *testing.T, s tg.Store) {
	const callers = 8
	var mu sync.Mutex
	got := map[tg.ID]int{}
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			var task tg.Task
			var err error
			if i%2 == 0 {
				task, err = s.Create(ctx, tg.NewTask{Subject: fmt.Sprint("by ", i), Key: "once"})
			} else {
				var ts []tg.Task
				ts, err = s.CreatePlan(ctx, []tg.NewTask{{Subject: fmt.Sprint("by ", i), Key: "once"}})
				if err == nil {
					task = ts[0]
				}
			}
			if !assert.NoError(t, err) {
				return
			}
			mu.Lock()
			got[task.ID]++
			mu.Unlock()
		})
	}
	wg.Wait()
	assert.Len(t, got, 1, "one task, whoever made it: %v", got)
	all, err := s.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

// testLabelledAgents drives two labelled agents, two goroutines each,
// through ClaimNext over a priority mix: each agent gets only tasks that
// carry its label, most urgent first, and no task is claimed twice.
func testLabelledAgents(t *testing.T, s tg.Store) {
	tasks := LabelledMix(t, s, 60)
	claims := DrainLabelled(t, s, 2)
	CheckLabelled(t, tasks, claims)
}

// The labels of LabelledMix: every task carries one or both, or none.
var agentLabels = []string{"frontend", "backend"}

// LabelledMix creates n tasks in s for a test of labelled agents: labels
// frontend, backend, both or none, and priorities P0 to P4, mixed so that
// neither ids nor labels follow priority. It returns them by id.
func LabelledMix(t testing.TB, s tg.Store, n int) map[tg.ID]tg.Task {
	out := map[tg.ID]tg.Task{}
	for i := range n {
		var labels []string
		switch i % 7 {
		case 0, 2, 5:
			labels = []string{"frontend"}
		case 1, 3:
			labels = []string{"backend"}
		case 4:
			labels = []string{"frontend", "backend"}
		}
		p := tg.PriorityLevel((i*3 + i/5) % 5)
		task, err := s.Create(ctx, tg.NewTask{Subject: fmt.Sprint("task ", i), Priority: p, Labels: labels})
		require.NoError(t, err)
		out[task.ID] = task
	}
	return out
}

// A Claim is one claim by a labelled agent: its label, the worker, and
// the task, in the worker's order.
type Claim struct {
	Label  string
	Worker int
	Task   tg.Task
}

// DrainLabelled runs workers goroutines for each label of LabelledMix,
// each claiming WithLabels(label) until ErrNoReady, and returns every
// claim.
func DrainLabelled(t testing.TB, s tg.Store, workers int) []Claim {
	var mu sync.Mutex
	var claims []Claim
	var wg sync.WaitGroup
	for _, label := range agentLabels {
		for w := range workers {
			owner := fmt.Sprint(label, "-", w)
			wg.Go(func() {
				for {
					task, err := s.ClaimNext(ctx, owner, tg.WithLabels(label))
					if errors.Is(err, tg.ErrNoReady) {
						return
					}
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					claims = append(claims, Claim{Label: label, Worker: w, Task: task})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return claims
}

// CheckLabelled checks the claims of labelled agents over tasks: every
// task with a label was claimed once, by an agent with one of its labels;
// none without; and each worker took its tasks most urgent first (the
// most urgent of what is left can only get less urgent).
func CheckLabelled(t testing.TB, tasks map[tg.ID]tg.Task, claims []Claim) {
	seen := map[tg.ID]string{}
	last := map[string]tg.Task{}
	for _, c := range claims {
		task, ok := tasks[c.Task.ID]
		if !assert.True(t, ok, "claimed task %d is not of the mix", c.Task.ID) {
			continue
		}
		worker := fmt.Sprint(c.Label, "-", c.Worker)
		if prev, dup := seen[task.ID]; dup {
			t.Errorf("task %d claimed by %s and by %s", task.ID, prev, worker)
		}
		seen[task.ID] = worker
		assert.Contains(t, task.Labels, c.Label, "task %d went to %s without its label", task.ID, worker)
		assert.Equal(t, worker, c.Task.Owner)
		if p, ok := last[worker]; ok {
			assert.True(t, tg.Rules.ClaimOrder(&p, &task) < 0,
				"%s took task %d (%v) after task %d (%v): not most urgent first", worker, task.ID, task.Priority, p.ID, p.Priority)
		}
		last[worker] = task
	}
	for id, task := range tasks {
		labelled := slices.ContainsFunc(agentLabels, func(l string) bool { return slices.Contains(task.Labels, l) })
		_, got := seen[id]
		assert.Equal(t, labelled, got, "task %d with labels %v: claimed %v", id, task.Labels, got)
	}
}

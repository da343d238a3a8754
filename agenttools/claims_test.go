package agenttools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// clock is a settable time for leases.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// stores runs f on a MemStore and on a FileStore, both on clk.
func stores(t *testing.T, f func(t *testing.T, store taskgraph.Store, clk *clock)) {
	for _, kind := range []string{"mem", "file"} {
		t.Run(kind, func(t *testing.T) {
			clk := &clock{now: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)}
			var store taskgraph.Store = taskgraph.NewMemStore(taskgraph.WithClock(clk.Now))
			if kind == "file" {
				fs, err := taskgraph.Open(t.TempDir(), taskgraph.WithClock(clk.Now), taskgraph.WithoutSync())
				require.NoError(t, err)
				store = fs
			}
			t.Cleanup(func() { store.Close() })
			f(t, store, clk)
		})
	}
}

func call(t *testing.T, tools *agenttools.Tools, name, input string) agenttools.Result {
	t.Helper()
	res, err := tools.Call(context.Background(), name, json.RawMessage(input))
	require.NoError(t, err, "%s %s", name, input)
	checkStructured(t, tools, name, res)
	return res
}

func mustCall(t *testing.T, tools *agenttools.Tools, name, input string) string {
	t.Helper()
	res := call(t, tools, name, input)
	require.False(t, res.IsError, "%s %s: %s", name, input, res.Text)
	return res.Text
}

func snapshot(t *testing.T, store taskgraph.Store) []taskgraph.Task {
	t.Helper()
	tasks, err := store.List(context.Background())
	require.NoError(t, err)
	return tasks
}

func get(t *testing.T, store taskgraph.Store, id taskgraph.ID) taskgraph.Task {
	t.Helper()
	task, err := store.Get(context.Background(), id)
	require.NoError(t, err)
	return task
}

// Two tool sets on one store: every change model-B tries to make to the
// status or owner of a task model-A holds or completed, through every
// tool, is refused, and nothing is written.
func TestCrossIdentityChangesAreRefused(t *testing.T) {
	stores(t, func(t *testing.T, store taskgraph.Store, clk *clock) {
		a := agenttools.New(store, agenttools.WithOwner("model-A"))
		aLeased := agenttools.New(store, agenttools.WithOwner("model-A"), agenttools.WithLease(time.Minute))
		b := agenttools.New(store, agenttools.WithOwner("model-B"), agenttools.WithLease(time.Minute))
		for _, s := range []string{"held by A", "leased by A", "completed by A"} {
			mustCall(t, a, "task_create", fmt.Sprintf(`{"subject": %q}`, s))
		}
		mustCall(t, a, "task_create", `{"subject": "waits for 1", "blockedBy": [1]}`)
		mustCall(t, a, "task_claim", `{"task_id": 1}`)
		mustCall(t, aLeased, "task_update", `{"task_id": 2, "status": "in_progress"}`)
		mustCall(t, a, "task_update", `{"task_id": 3, "status": "completed"}`)
		require.Equal(t, "model-A", get(t, store, 3).Owner, "completing through task_update records who did it")
		require.False(t, get(t, store, 2).LeaseExpiresAt.IsZero(), "starting through task_update claims with the agent's lease")

		attempts := []struct{ tool, input string }{}
		for _, id := range []int{1, 2, 3} {
			changes := []string{
				`"status": "pending"`, `"status": "in_progress"`,
				`"owner": "model-B"`, `"owner": ""`, `"owner": "model-A"`, `"owner": "model-C"`,
				`"owner": "model-B", "status": "in_progress"`, `"owner": "", "status": "pending"`,
				`"status": "pending", "removeBlockedBy": [1]`, `"status": "in_progress", "addBlockedBy": [4]`,
			}
			if id != 3 { // 3 is completed already: asking for that is no change
				changes = append(changes, `"status": "completed"`, `"status": "completed", "addBlocks": [4]`)
			}
			for _, in := range changes {
				attempts = append(attempts, struct{ tool, input string }{"task_update", fmt.Sprintf(`{"task_id": %d, %s}`, id, in)})
			}
			for _, tool := range []string{"task_claim", "task_complete", "task_release", "task_renew", "task_delete"} {
				attempts = append(attempts, struct{ tool, input string }{tool, fmt.Sprintf(`{"task_id": %d}`, id)})
			}
			attempts = append(attempts,
				struct{ tool, input string }{"task_renew", fmt.Sprintf(`{"task_id": %d, "seconds": 3600}`, id)},
				struct{ tool, input string }{"task_delete", fmt.Sprintf(`{"task_id": %d, "detach": true}`, id)})
		}

		before := snapshot(t, store)
		for _, at := range attempts {
			res := call(t, b, at.tool, at.input)
			assert.True(t, res.IsError, "model-B %s %s was accepted: %s", at.tool, at.input, res.Text)
			assert.Regexp(t, `^Error: `, res.Text)
		}
		// The tools that cannot be refused change nothing either.
		assert.Equal(t, "Nothing ready now: 2 in progress by others, 1 blocked.", mustCall(t, b, "task_claim_next", `{}`))
		mustCall(t, b, "task_list", `{}`)
		mustCall(t, b, "task_get", `{"task_id": 1}`)
		assert.Equal(t, before, snapshot(t, store), "nothing was written")

		// Messages say who holds the task and who the caller is.
		res := call(t, b, "task_update", `{"task_id": 1, "status": "completed"}`)
		assert.Equal(t, `Error: task 1 is claimed by "model-A", not by you ("model-B"): only its holder can change its status or owner`, res.Text)
		res = call(t, b, "task_update", `{"task_id": 1, "owner": "model-A"}`)
		assert.Contains(t, res.Text, `owner can only be "model-B" (yours) or "" (to give back a task you hold)`)
		res = call(t, b, "task_update", `{"task_id": 3, "status": "pending"}`)
		assert.Equal(t, `Error: task 3 was completed by "model-A", not by you ("model-B"): only they can change its status or owner`, res.Text)
		res = call(t, b, "task_complete", `{"task_id": 1}`)
		assert.Equal(t, `Error: task 1 is claimed by "model-A", not by you ("model-B")`, res.Text)

		// Once A's lease lapses, B may take the task over — by claiming
		// it, which is what starting it through task_update does.
		clk.Advance(2 * time.Minute)
		out := mustCall(t, b, "task_update", `{"task_id": 2, "status": "in_progress"}`)
		assert.Contains(t, out, `"owner": "model-B"`)
		assert.Equal(t, "model-A", get(t, store, 2).PrevOwner)
		// A's unleased claim never lapses.
		assert.True(t, call(t, b, "task_update", `{"task_id": 1, "status": "in_progress"}`).IsError)
		assert.Equal(t, "model-A", get(t, store, 1).Owner)
	})
}

// Reference-style prompts start, finish and give back the agent's own
// tasks through task_update.
func TestUpdateWorksOnOwnTasks(t *testing.T) {
	stores(t, func(t *testing.T, store taskgraph.Store, clk *clock) {
		a := agenttools.New(store, agenttools.WithOwner("model-A"), agenttools.WithLease(10*time.Minute))
		for _, s := range []string{"one", "two", "three"} {
			mustCall(t, a, "task_create", fmt.Sprintf(`{"subject": %q}`, s))
		}
		mustCall(t, a, "task_update", `{"task_id": 1, "status": "in_progress"}`)
		one := get(t, store, 1)
		assert.Equal(t, taskgraph.InProgress, one.Status)
		assert.Equal(t, "model-A", one.Owner)
		assert.Equal(t, clk.Now().Add(10*time.Minute), one.LeaseExpiresAt.UTC())

		out := mustCall(t, a, "task_update", `{"task_id": 1, "status": "completed"}`)
		assert.Contains(t, out, `"status": "completed"`)
		assert.Equal(t, "model-A", get(t, store, 1).Owner)

		// owner: itself takes a task; owner: "" gives it back.
		mustCall(t, a, "task_update", `{"task_id": 2, "owner": "model-A"}`)
		assert.Equal(t, taskgraph.InProgress, get(t, store, 2).Status)
		mustCall(t, a, "task_update", `{"task_id": 2, "owner": ""}`)
		two := get(t, store, 2)
		assert.Equal(t, taskgraph.Pending, two.Status)
		assert.Equal(t, "", two.Owner)

		// Starting with a dependency change in the same call is one write
		// decided on the task as read; the lease follows.
		mustCall(t, a, "task_update", `{"task_id": 3, "status": "in_progress", "addBlockedBy": [1]}`)
		three := get(t, store, 3)
		assert.Equal(t, []taskgraph.ID{1}, three.BlockedBy)
		assert.Equal(t, "model-A", three.Owner)
		assert.False(t, three.LeaseExpiresAt.IsZero())

		// Renewing: by default for the agent's lease, or for seconds.
		clk.Advance(5 * time.Minute)
		out = mustCall(t, a, "task_renew", `{"task_id": 3}`)
		assert.Equal(t, "Renewed #3: three; the lease now ends at 2026-12-02T12:15:00Z", out)
		mustCall(t, a, "task_renew", `{"task_id": 3, "seconds": 60}`)
		assert.Equal(t, clk.Now().Add(time.Minute), get(t, store, 3).LeaseExpiresAt.UTC())

		// Reopening one's own completed task.
		mustCall(t, a, "task_update", `{"task_id": 1, "status": "pending", "removeBlocks": [3]}`)
		one = get(t, store, 1)
		assert.Equal(t, taskgraph.Pending, one.Status)
		assert.Empty(t, get(t, store, 3).BlockedBy)

		// A call that changes nothing writes nothing.
		rev := get(t, store, 2).Rev
		mustCall(t, a, "task_update", `{"task_id": 2, "status": "pending"}`)
		mustCall(t, a, "task_update", `{"task_id": 2}`)
		assert.Equal(t, rev, get(t, store, 2).Rev)
	})
}

// Many agents start the same task through task_update at once: exactly
// one gets it.
func TestConcurrentStartsThroughUpdate(t *testing.T) {
	stores(t, func(t *testing.T, store taskgraph.Store, _ *clock) {
		mustCall(t, agenttools.New(store), "task_create", `{"subject": "contested"}`)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tools := agenttools.New(store, agenttools.WithOwner(fmt.Sprintf("agent-%d", i)))
				for _, in := range []string{`{"task_id": 1, "status": "in_progress"}`, `{"task_id": 1, "status": "completed"}`} {
					res, err := tools.Call(context.Background(), "task_update", json.RawMessage(in))
					if err != nil || res.IsError {
						return
					}
				}
				wins.Add(1)
			}()
		}
		wg.Wait()
		assert.Equal(t, int32(1), wins.Load())
		task := get(t, store, 1)
		assert.Equal(t, taskgraph.Completed, task.Status)
		assert.Regexp(t, `^agent-\d$`, task.Owner)
	})
}

// goNames matches what a Go programmer would write and a model cannot use:
// qualified identifiers, calls, exported constants, sentinel errors.
var goNames = regexp.MustCompile(`\b[a-z]\w*\.[A-Z]\w*|\w+\(\)|\bMax[A-Z]\w*|\bErr[A-Z]\w*|\b\w+Input\b|\bPatch\b|\bOwner\b|\bClaim\b`)

func TestErrorsNameNoGoIdentifiers(t *testing.T) {
	store := taskgraph.NewMemStore()
	tools := agenttools.New(store, agenttools.WithOwner("a"))
	other := agenttools.New(store, agenttools.WithOwner("b"))
	mustCall(t, tools, "task_create", `{"subject": "one"}`)
	mustCall(t, tools, "task_create", `{"subject": "two", "blockedBy": [1]}`)
	mustCall(t, other, "task_claim", `{"task_id": 1}`)
	big := fmt.Sprintf(`{"subject": "big", "description": %q}`, string(make([]byte, 5<<20)))
	bad := []struct{ tool, input string }{
		{"task_get", `{"task_id": "3"}`}, {"task_get", `{"task_id": -3}`}, {"task_get", `{"task_id": 0}`},
		{"task_get", `{"task_id": 1e30}`}, {"task_get", `{"task_id": true}`}, {"task_get", `{"task_id": {}}`},
		{"task_get", `{"task_id": 3`}, {"task_get", `[1]`}, {"task_get", `null`}, {"task_get", `"x"`},
		{"task_update", `{"task_id": "3"}`}, {"task_update", `{"task_id": 1.5}`}, {"task_update", `{"task_id": 2, "addBlockedBy": [-3]}`},
		{"task_update", `{"task_id": 2, "addBlockedBy": [0]}`}, {"task_update", `{"task_id": 2, "addBlocks": [99]}`},
		{"task_update", `{"task_id": 2, "addBlockedBy": "1"}`}, {"task_update", `{"task_id": 2, "status": 3}`},
		{"task_update", `{"task_id": 2, "status": "done"}`}, {"task_update", `{"task_id": 2, "owner": 7}`},
		{"task_update", `{"task_id": 2, "status": "completed"}`}, {"task_update", `{"task_id": 1, "addBlockedBy": [2]}`},
		{"task_update", `{"task_id": 2, "owner": "a", "status": "pending"}`}, {"task_update", `{"task_id": 2, "owner": "", "status": "completed"}`},
		{"task_create", `{}`}, {"task_create", `{"subject": ""}`}, {"task_create", `{"subject": 1}`}, {"task_create", `{"subject": "x", "blockedBy": [-1]}`},
		{"task_create", big},
		{"task_claim", `{"task_id": 2}`}, {"task_claim", `{"task_id": 1}`}, {"task_complete", `{"task_id": 2}`},
		{"task_release", `{"task_id": 2}`}, {"task_renew", `{"task_id": 2}`}, {"task_renew", `{"task_id": 1, "seconds": -5}`},
		{"task_delete", `{"task_id": 1}`}, {"task_delete", `{"task_id": 2, "detach": "yes"}`}, {"task_list", `{"x": 1}`},
		{"task_nope", `{}`},
	}
	bad = append(bad, []struct{ tool, input string }{
		{"task_create", `{"subject": "x", "labels": ["Not A Label"]}`}, {"task_create", `{"subject": "x", "labels": "x"}`},
		{"task_create", fmt.Sprintf(`{"subject": "x", "labels": [%s"x"]}`, strings.Repeat(`"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t", "u", "v", "w", "y", "z", "aa", "bb", "cc", "dd", "ee", "ff", "gg", "hh", `, 1))},
		{"task_create", `{"subject": "x", "priority": 5}`}, {"task_create", `{"subject": "x", "priority": "P9"}`}, {"task_create", `{"subject": "x", "priority": true}`},
		{"task_create", `{"subject": "x", "key": "12"}`}, {"task_create", `{"subject": "x", "key": "#12"}`}, {"task_create", `{"subject": "x", "key": "a\u0000b"}`},
		{"task_update", `{"task_id": 2, "labels": ["UPPER"]}`}, {"task_update", `{"task_id": 2, "priority": 9}`},
		{"task_fail", `{"task_id": 2}`}, {"task_fail", `{"task_id": 2, "reason": ""}`}, {"task_fail", `{"task_id": 2, "reason": "x"}`},
		{"task_fail", `{"task_id": 1, "reason": "x"}`}, {"task_fail", `{"task_id": 99, "reason": "x"}`},
		{"task_complete", `{"task_id": 2, "result": 5}`},
		{"task_plan", `{}`}, {"task_plan", `{"tasks": []}`}, {"task_plan", `{"tasks": "x"}`}, {"task_plan", `[]`},
		{"task_plan", `{"tasks": [{"subject": "no key"}]}`}, {"task_plan", `{"tasks": [{"key": "k"}]}`},
		{"task_plan", `{"tasks": [{"key": "k", "subject": "s", "after": ["nowhere"]}]}`},
		{"task_plan", `{"tasks": [{"key": "k", "subject": "s", "after": [0]}]}`},
		{"task_plan", `{"tasks": [{"key": "k", "subject": "s", "after": ["#99"]}]}`},
		{"task_plan", `{"tasks": [{"key": "k", "subject": "s"}, {"key": "k", "subject": "again"}]}`},
		{"task_plan", `{"tasks": [{"key": "a", "subject": "A", "after": ["b"]}, {"key": "b", "subject": "B", "after": ["a"]}]}`},
		{"task_plan", `{"tasks": [{"key": "a", "subject": "A", "after": ["a"]}]}`},
		{"task_plan", `{"tasks": [{"key": "k", "subject": "", "labels": ["BAD"]}]}`},
		{"task_list", `{"status": "done"}`}, {"task_list", `{"limit": 0}`}, {"task_claim_next", `{"labels": ["BAD"]}`},
	}...)
	for _, c := range bad {
		res := call(t, tools, c.tool, c.input)
		in := c.input
		if len(in) > 60 {
			in = in[:60]
		}
		assert.True(t, res.IsError, "%s %s: %s", c.tool, in, res.Text)
		assert.NotRegexp(t, goNames, res.Text, "%s %s", c.tool, in)
	}
	// And a delete refused because of dependents, after the holder lets go.
	mustCall(t, other, "task_release", `{"task_id": 1}`)
	res := call(t, tools, "task_delete", `{"task_id": 1}`)
	assert.NotRegexp(t, goNames, res.Text)
	assert.Contains(t, res.Text, "detach: true")
}

// task_fail acts only on the agent's own claim, and a failed task is
// reopened only by the agent that failed it; what depends on it cannot
// start meanwhile, and the tools say so.
func TestFailIsTheHoldersOwn(t *testing.T) {
	stores(t, func(t *testing.T, store taskgraph.Store, _ *clock) {
		a := agenttools.New(store, agenttools.WithOwner("model-A"))
		b := agenttools.New(store, agenttools.WithOwner("model-B"))
		mustCall(t, a, "task_create", `{"subject": "build"}`)
		mustCall(t, a, "task_create", `{"subject": "ship", "blockedBy": [1]}`)
		mustCall(t, a, "task_claim", `{"task_id": 1}`)
		res := call(t, b, "task_fail", `{"task_id": 1, "reason": "I think it is broken"}`)
		assert.Equal(t, `Error: task 1 is claimed by "model-A", not by you ("model-B")`, res.Text)
		assert.Equal(t, "Failed #1: build\nThese cannot start until it is reopened: #2 ship",
			mustCall(t, a, "task_fail", `{"task_id": 1, "reason": "the compiler crashed"}`))
		assert.Contains(t, mustCall(t, b, "task_get", `{"task_id": 2}`), `task 2 is stranded: its blocker 1 failed ("the compiler crashed")`)
		assert.Equal(t, "[!] #1: build @model-A\n[ ] #2: ship (cannot start: #1 failed)", mustCall(t, b, "task_list", `{}`))
		assert.Equal(t, "Finished, but 2 tasks failed or are stranded: failed [1]; stranded [2].", mustCall(t, b, "task_claim_next", `{}`))

		before := snapshot(t, store)
		for _, in := range []string{`{"task_id": 1, "status": "pending"}`, `{"task_id": 1, "owner": ""}`, `{"task_id": 1, "owner": "model-B"}`,
			`{"task_id": 1, "status": "in_progress"}`, `{"task_id": 1, "status": "completed"}`} {
			res := call(t, b, "task_update", in)
			assert.True(t, res.IsError, "model-B task_update %s was accepted: %s", in, res.Text)
		}
		assert.True(t, call(t, b, "task_delete", `{"task_id": 1, "detach": true}`).IsError)
		assert.Equal(t, before, snapshot(t, store), "nothing was written")
		assert.Equal(t, `Error: task 1 was failed by "model-A", not by you ("model-B"): only they can change its status or owner`,
			call(t, b, "task_update", `{"task_id": 1, "status": "pending"}`).Text)

		// The agent that failed it reopens it; the reason is cleared.
		mustCall(t, a, "task_update", `{"task_id": 1, "status": "pending"}`)
		one := get(t, store, 1)
		assert.Equal(t, taskgraph.Pending, one.Status)
		assert.Empty(t, one.Reason)
		assert.Equal(t, "[ ] #1: build\n[ ] #2: ship (blocked by: [1])", mustCall(t, b, "task_list", `{}`))
	})
}

// An agent given labels takes only work that carries them, most urgent
// first; the model may narrow further, never widen.
func TestClaimNextWithLabels(t *testing.T) {
	stores(t, func(t *testing.T, store taskgraph.Store, _ *clock) {
		planner := agenttools.New(store, agenttools.WithOwner("planner"))
		mustCall(t, planner, "task_plan", `{"tasks": [
			{"key": "css", "subject": "style", "labels": ["frontend"], "priority": 3},
			{"key": "db", "subject": "index", "labels": ["backend"]},
			{"key": "btn", "subject": "button", "labels": ["frontend", "a11y"], "priority": 1},
			{"key": "api", "subject": "endpoint", "labels": ["backend"], "priority": 0}]}`)
		fe := agenttools.New(store, agenttools.WithOwner("fe"), agenttools.WithLabels("frontend"))
		assert.Contains(t, mustCall(t, fe, "task_claim_next", `{}`), "Claimed #3: button")
		assert.Equal(t, "Nothing ready now: 1 held by you, 3 ready without labels a11y, frontend.",
			mustCall(t, fe, "task_claim_next", `{"labels": ["a11y"]}`))
		assert.Contains(t, mustCall(t, fe, "task_claim_next", `{}`), "Claimed #1: style")
		assert.Equal(t, "Nothing ready now: 2 held by you, 2 ready without labels frontend.",
			mustCall(t, fe, "task_claim_next", `{}`))
		anyone := agenttools.New(store, agenttools.WithOwner("any"))
		assert.Contains(t, mustCall(t, anyone, "task_claim_next", `{}`), "Claimed #4: endpoint", "P0 before the lower id")
		assert.Equal(t, "[>] #1: style P3 {frontend} @fe\n[>] #3: button P1 {a11y, frontend} @fe", mustCall(t, anyone, "task_list", `{"owner": "fe"}`))
		assert.Equal(t, "[ ] #2: index {backend}", mustCall(t, anyone, "task_list", `{"label": "backend", "ready": true}`))
	})
}

// An agent told to work inside an epic (under) takes and waits for only
// the tasks under it, and hears "finished" when they are done, whatever
// else the graph holds; an epic that does not exist is an error.
func TestClaimNextUnder(t *testing.T) {
	stores(t, func(t *testing.T, store taskgraph.Store, _ *clock) {
		planner := agenttools.New(store, agenttools.WithOwner("planner"))
		mustCall(t, planner, "task_plan", `{"tasks": [
			{"key": "epic", "subject": "release"},
			{"key": "a", "subject": "notes", "parent": "epic"},
			{"key": "b", "subject": "tag", "parent": "epic", "after": ["a"]},
			{"key": "z", "subject": "elsewhere", "priority": 0}]}`)
		me := agenttools.New(store, agenttools.WithOwner("me"), agenttools.WithWait(50*time.Millisecond))
		assert.Contains(t, mustCall(t, me, "task_claim_next", `{"under": 1}`), "Claimed #2: notes")
		assert.Equal(t, "Nothing ready under #1 now: 1 held by you, 1 blocked.", mustCall(t, me, "task_claim_next", `{"under": 1}`))
		assert.Contains(t, mustCall(t, me, "task_wait", `{"under": 1}`), "Still nothing ready under #1 after")
		mustCall(t, me, "task_complete", `{"task_id": 2}`)
		assert.Equal(t, "Ready: #3 tag. Claim it with task_claim_next.", mustCall(t, me, "task_wait", `{"under": 1}`))
		assert.Contains(t, mustCall(t, me, "task_claim_next", `{"under": 1}`), "Claimed #3: tag")
		mustCall(t, me, "task_complete", `{"task_id": 3}`)
		assert.Equal(t, "Finished under #1: nothing left to do.", mustCall(t, me, "task_claim_next", `{"under": 1}`))
		assert.Equal(t, "Finished under #1: nothing left to do.", mustCall(t, me, "task_wait", `{"under": 1}`))
		for _, tool := range []string{"task_claim_next", "task_wait"} {
			res := call(t, me, tool, `{"under": 99}`)
			assert.True(t, res.IsError, "%s under a task that does not exist: %s", tool, res.Text)
			assert.Contains(t, res.Text, "99")
			res = call(t, me, tool, `{"under": "1"}`)
			assert.True(t, res.IsError, res.Text)
			assert.Contains(t, res.Text, "under must be an integer")
		}
		assert.Contains(t, mustCall(t, me, "task_claim_next", `{}`), "Claimed #4: elsewhere", "the graph is not finished")
	})
}

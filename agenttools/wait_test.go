package agenttools_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// task_claim_next that claims nothing tells a finished graph — all done,
// or stalled on failed and stranded tasks — from one that waits on others,
// and says when the first of their leases lapses.
func TestClaimNextSaysStopOrWait(t *testing.T) {
	store := taskgraph.NewMemStore()
	a := agenttools.New(store, agenttools.WithOwner("a"), agenttools.WithLease(time.Minute))
	b := agenttools.New(store, agenttools.WithOwner("b"))
	assert.Equal(t, "Finished: nothing left to do.", mustCall(t, b, "task_claim_next", `{}`), "an empty graph")

	mustCall(t, a, "task_create", `{"subject": "build"}`)
	mustCall(t, a, "task_create", `{"subject": "test", "blockedBy": [1]}`)
	mustCall(t, a, "task_create", `{"subject": "ship", "blockedBy": [2]}`)
	mustCall(t, a, "task_claim", `{"task_id": 1}`)
	out := mustCall(t, b, "task_claim_next", `{}`)
	assert.Regexp(t, `^Nothing ready now: 1 in progress by others, 2 blocked; the next lease lapses in (59s|1m0s)\.$`, out)
	assert.Equal(t, "Nothing ready now: 1 held by you, 2 blocked.", mustCall(t, a, "task_claim_next", `{}`))

	mustCall(t, a, "task_complete", `{"task_id": 1}`)
	mustCall(t, a, "task_claim_next", `{}`)
	mustCall(t, a, "task_fail", `{"task_id": 2, "reason": "flaky"}`)
	assert.Equal(t, "Finished, but 2 tasks failed or are stranded: failed [2]; stranded [3].", mustCall(t, b, "task_claim_next", `{}`))

	mustCall(t, a, "task_update", `{"task_id": 2, "status": "pending"}`)
	mustCall(t, a, "task_delete", `{"task_id": 3}`)
	mustCall(t, a, "task_claim_next", `{}`)
	mustCall(t, a, "task_complete", `{"task_id": 2}`)
	assert.Equal(t, "Finished: nothing left to do.", mustCall(t, b, "task_claim_next", `{}`))
}

// waitFor calls task_wait in the background and returns its answer.
func waitFor(t *testing.T, tools *agenttools.Tools, input string) <-chan string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		res, err := tools.Call(context.Background(), "task_wait", json.RawMessage(input))
		if err != nil {
			done <- "harness error: " + err.Error()
			return
		}
		done <- res.Text
	}()
	return done
}

// answer returns what the background task_wait said, failing if it does
// not say anything within a few seconds.
func answer(t *testing.T, done <-chan string) string {
	t.Helper()
	select {
	case s := <-done:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("task_wait did not return")
		return ""
	}
}

// still checks that the background task_wait has not returned yet.
func still(t *testing.T, done <-chan string) {
	t.Helper()
	select {
	case s := <-done:
		t.Fatalf("task_wait returned early: %s", s)
	case <-time.After(150 * time.Millisecond):
	}
}

// task_wait blocks until a task is ready for the caller (its labels), a
// lease lapses, or the graph is finished, and says which; after its bound
// it says where things stand.
func TestWait(t *testing.T) {
	store := taskgraph.NewMemStore()
	a := agenttools.New(store, agenttools.WithOwner("a"))
	b := agenttools.New(store, agenttools.WithOwner("b"), agenttools.WithWait(10*time.Second))
	mustCall(t, a, "task_create", `{"subject": "build"}`)
	mustCall(t, a, "task_create", `{"subject": "test", "blockedBy": [1], "labels": ["qa"]}`)
	mustCall(t, a, "task_create", `{"subject": "docs", "blockedBy": [1]}`)
	assert.Equal(t, "Ready: #1 build. Claim it with task_claim_next.", mustCall(t, b, "task_wait", `{}`), "ready at once")
	mustCall(t, a, "task_claim", `{"task_id": 1}`)

	// Completing the blocker wakes a waiter for its dependents.
	qa := waitFor(t, b, `{"labels": ["qa"]}`)
	still(t, qa)
	mustCall(t, a, "task_complete", `{"task_id": 1}`)
	assert.Equal(t, "Ready: #2 test. Claim it with task_claim_next.", answer(t, qa))

	// A ready task without the waiter's labels does not wake it; the bound
	// ends the wait, which then says what it waits on.
	mustCall(t, a, "task_claim", `{"task_id": 2}`)
	short := agenttools.New(store, agenttools.WithOwner("b"), agenttools.WithWait(300*time.Millisecond))
	start := time.Now()
	out := mustCall(t, short, "task_wait", `{"labels": ["qa"]}`)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond)
	assert.Regexp(t, `^Still nothing ready after 1s: 1 in progress by others, 1 ready without labels qa\. Call task_wait again to go on waiting\.$`, out)

	// A lease that lapses frees a task: the wait ends then.
	mustCall(t, a, "task_complete", `{"task_id": 2}`)
	leased := agenttools.New(store, agenttools.WithOwner("c"), agenttools.WithLease(400*time.Millisecond))
	mustCall(t, leased, "task_claim", `{"task_id": 3}`)
	start = time.Now()
	assert.Equal(t, `Ready: #3 docs (the lease of "c" lapsed). Claim it with task_claim_next.`, mustCall(t, b, "task_wait", `{}`))
	assert.Less(t, time.Since(start), 5*time.Second)

	// The last task completed: the wait says the graph is finished.
	mustCall(t, b, "task_claim_next", `{}`)
	fin := waitFor(t, a, `{}`)
	still(t, fin)
	mustCall(t, b, "task_complete", `{"task_id": 3}`)
	assert.Equal(t, "Finished: nothing left to do.", answer(t, fin))
	assert.Equal(t, "Finished: nothing left to do.", mustCall(t, a, "task_wait", `{}`), "at once on a finished graph")

	res := call(t, a, "task_wait", `{"labels": ["QA"]}`)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Text, `"QA" is not a label`)
}

// A client that cancels its call ends the wait at once; that is the
// harness's error, not a message for the model.
func TestWaitCancelled(t *testing.T) {
	store := taskgraph.NewMemStore()
	a := agenttools.New(store, agenttools.WithOwner("a"))
	mustCall(t, a, "task_create", `{"subject": "held"}`)
	mustCall(t, a, "task_claim", `{"task_id": 1}`)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := agenttools.New(store, agenttools.WithOwner("b")).Call(ctx, "task_wait", json.RawMessage(`{}`))
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	require.Error(t, err)
}

// A wait whose bound passes before it has looked at all (a short bound on
// a slow machine: under Wine TestStructuredOutput met it) still answers
// from the graph: a ready task is ready, not "still nothing ready".
func TestWaitBoundPassedBeforeLooking(t *testing.T) {
	store := taskgraph.NewMemStore()
	_, err := store.Create(context.Background(), taskgraph.NewTask{Subject: "build"})
	require.NoError(t, err)
	tools := agenttools.New(store, agenttools.WithOwner("b"), agenttools.WithWait(time.Nanosecond))
	res := call(t, tools, "task_wait", `{}`)
	require.False(t, res.IsError, res.Text)
	assert.Contains(t, res.Text, "Ready: #1 build")
	assert.JSONEq(t, `"ready"`, mustField(t, res.Structured, "outcome"))
}

func mustField(t *testing.T, obj json.RawMessage, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(obj, &m))
	return string(m[name])
}

//go:build !windows

package agenttools_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// TestCompleteKeepsTheClaimWhileItsCheckRuns: with WithChecks,
// task_complete runs the task's check (a real sh, sleeping past the
// lease) while keeping the agent's claim: another agent's task_claim_next
// once the lease would have lapsed finds nothing, and the completion
// stands with the check's evidence in the history.
func TestCompleteKeepsTheClaimWhileItsCheckRuns(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".tasks")
	store, err := taskgraph.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	require.NoError(t, os.WriteFile(filepath.Join(dir, taskgraph.ChecksFile), []byte(`{"slow": {"command": "sleep 2.5"}}`), 0o644))
	checks, err := taskgraph.LoadChecks(dir)
	require.NoError(t, err)
	a := agenttools.New(store, agenttools.WithOwner("a"), agenttools.WithLease(time.Second), agenttools.WithChecks(checks))
	b := agenttools.New(store, agenttools.WithOwner("b"))
	_, err = store.Create(ctx, taskgraph.NewTask{Subject: "verified", Check: "slow"})
	require.NoError(t, err)
	mustCall(t, a, "task_claim", `{"task_id": 1}`)

	other := make(chan string, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond) // past the one-second lease, mid-check
		res, err := b.Call(ctx, "task_claim_next", []byte(`{}`))
		if err != nil {
			other <- err.Error()
			return
		}
		other <- res.Text
	}()
	mustCall(t, a, "task_complete", `{"task_id": 1}`)
	assert.NotContains(t, <-other, "Claimed", "the task was claimed from under its check")
	done := get(t, store, 1)
	assert.Equal(t, taskgraph.Completed, done.Status)
	assert.Equal(t, taskgraph.HistoryVerified, done.History[len(done.History)-2].Event)
}

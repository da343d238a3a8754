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

// TestNoteReachesWhoeverTakesOverALapsedTask: an agent claims, notes what
// it tried and dies (its lease lapses); the next agent's task_claim_next
// reply carries that note, and so does task_get; the history records the
// lapse.
func TestNoteReachesWhoeverTakesOverALapsedTask(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"MemStore", "FileStore"} {
		t.Run(name, func(t *testing.T) {
			var store taskgraph.Store = taskgraph.NewMemStore()
			if name == "FileStore" {
				fs, err := taskgraph.Open(t.TempDir(), taskgraph.WithoutSync())
				require.NoError(t, err)
				defer fs.Close()
				store = fs
			}
			first := agenttools.New(store, agenttools.WithOwner("agent-1"), agenttools.WithLease(50*time.Millisecond))
			next := agenttools.New(store, agenttools.WithOwner("agent-2"), agenttools.WithLease(time.Minute))
			call := func(tools *agenttools.Tools, name, input string) string {
				t.Helper()
				res, err := tools.Call(ctx, name, json.RawMessage(input))
				require.NoError(t, err)
				require.False(t, res.IsError, "%s %s: %s", name, input, res.Text)
				return res.Text
			}
			call(first, "task_create", `{"subject": "migrate the billing table"}`)
			call(first, "task_claim_next", `{}`)
			call(first, "task_note", `{"task_id": 1, "text": "the lock on billing is held by the nightly job: run after 02:00"}`)
			time.Sleep(60 * time.Millisecond) // agent-1 died: its lease lapses
			claimed := call(next, "task_claim_next", `{}`)
			assert.Contains(t, claimed, "Claimed #1: migrate the billing table")
			assert.Contains(t, claimed, `"author": "agent-1"`)
			assert.Contains(t, claimed, "the lock on billing is held by the nightly job: run after 02:00")
			assert.Contains(t, call(next, "task_get", `{"task_id": 1}`), "run after 02:00")
			task, err := store.Get(ctx, 1)
			require.NoError(t, err)
			var events []taskgraph.HistoryEvent
			for _, h := range task.History {
				events = append(events, h.Event)
			}
			assert.Equal(t, []taskgraph.HistoryEvent{taskgraph.HistoryClaimed, taskgraph.HistoryNoted, taskgraph.HistoryLapsed, taskgraph.HistoryClaimed}, events)
		})
	}
}

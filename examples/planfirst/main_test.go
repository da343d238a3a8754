package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

func TestPlanFirst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	var out bytes.Buffer
	rep, err := run(ctx, dir, &out)
	require.NoError(t, err, out.String())

	// One call made the whole plan, with its edges by key.
	require.Len(t, rep.plan, 12)
	byKey := map[string]taskgraph.Task{}
	for _, task := range rep.tasks {
		byKey[task.Key] = task
	}
	assert.Equal(t, []taskgraph.ID{byKey["mockups"].ID, byKey["api"].ID}, byKey["page"].BlockedBy)
	assert.Equal(t, taskgraph.P0, byKey["hotfix"].Priority)

	// Each agent took only its labels; together they took every task that
	// could run, once.
	seen := map[taskgraph.ID]bool{}
	for _, a := range team {
		for _, task := range rep.claimed[a.name] {
			assert.Subset(t, task.Labels, a.labels, "%s took #%d", a.name, task.ID)
			assert.False(t, seen[task.ID], "#%d claimed twice", task.ID)
			seen[task.ID] = true
		}
	}
	assert.Len(t, seen, 10, "every task but the two stranded ones")

	// The load test failed; what depends on it is stranded, not blocked,
	// and the graph is finished.
	assert.Equal(t, taskgraph.Failed, byKey["loadtest"].Status)
	assert.Equal(t, failReason, byKey["loadtest"].Reason)
	require.Len(t, rep.board.Stranded, 2)
	assert.Equal(t, byKey["rollout"].ID, rep.board.Stranded[0].ID)
	assert.Equal(t, byKey["announce"].ID, rep.board.Stranded[1].ID)
	for _, s := range rep.board.Stranded {
		assert.Equal(t, byKey["loadtest"].ID, rep.board.StrandedBy[s.ID])
	}
	assert.True(t, rep.board.Finished())
	assert.Len(t, rep.board.Completed, 9, "12 tasks: 9 completed, 1 failed, 2 stranded")
	assert.Equal(t, "GET/PUT /v1/profiles/{id}", byKey["api"].Metadata["result"])

	account := out.String()
	assert.Contains(t, account, "Failed: #4 Load-test the profile API, by backend-")
	assert.Contains(t, account, "Stranded (2), reported instead of waiting forever:")
	assert.Contains(t, account, "#5 Enable profiles for all users: task 5 is stranded: its blocker 4 failed")
	assert.Contains(t, account, "#10 Announce profiles to users: task 10 is stranded: it waits on 5")
	assert.Contains(t, account, "critical path: schema -> migrate -> api -> loadtest -> rollout -> announce")

	// It is all on disk: a new store on the directory sees the same board.
	store, err := taskgraph.Open(dir)
	require.NoError(t, err)
	defer store.Close()
	b, err := store.Board(ctx)
	require.NoError(t, err)
	assert.Len(t, b.Stranded, 2)
}

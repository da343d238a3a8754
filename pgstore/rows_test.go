package pgstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// A query's rows are scanned into one reused destination (taskRow): no
// task read may share or keep anything of the row read before it. Tasks
// with every nullable and list column set alternate with tasks with none,
// so that a value left over from the row before would show.
func TestTaskRowReused(t *testing.T) {
	p := pool(t)
	s := open(t, p, graphName(t))
	at := time.Date(2026, 12, 5, 9, 0, 0, 0, time.UTC)
	var tasks []taskgraph.Task
	for i := 1; i <= 6; i++ {
		task := taskgraph.Task{ID: taskgraph.ID(i), Subject: "plain", Status: taskgraph.Pending}
		if i%2 == 1 {
			task = taskgraph.Task{ID: taskgraph.ID(i), Subject: "full", Status: taskgraph.InProgress, Owner: "alice",
				Metadata: map[string]any{"i": float64(i)}, Labels: []string{"l" + string(rune('a'+i))},
				ClaimedAt: at, LeaseExpiresAt: at.Add(time.Hour), NotBefore: at, Due: at.Add(time.Duration(i) * time.Hour),
				Notes:   []taskgraph.Note{{At: at, Author: "alice", Text: "note"}},
				History: []taskgraph.Transition{{At: at, Event: taskgraph.HistoryClaimed, By: "alice"}}}
			if i > 1 {
				task.BlockedBy = []taskgraph.ID{taskgraph.ID(i - 1)}
			}
		}
		tasks = append(tasks, task)
	}
	require.NoError(t, s.Load(ctx, tasks))
	list, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 6)
	for _, got := range list {
		want, err := s.Get(ctx, got.ID)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	// Rows of the same result share nothing.
	list[0].Labels[0], list[0].Metadata["i"] = "changed", -1.0
	list[0].History[0].By = "changed"
	require.Equal(t, []string{"ld"}, list[2].Labels)
	require.Equal(t, 3.0, list[2].Metadata["i"])
	require.Equal(t, "alice", list[2].History[0].By)
}

// A row whose metadata is '{}' (written by hand or another tool: pgstore
// writes NULL) reads as no metadata, as in the other stores, and Complete,
// which returns the row it wrote, returns what a read gives.
func TestEmptyMetadataRow(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	require.NoError(t, s.Load(ctx, []taskgraph.Task{{ID: 1, Subject: "a", Status: taskgraph.Pending}}))
	_, err := s.Claim(ctx, 1, "alice")
	require.NoError(t, err)
	_, err = p.Exec(ctx, `UPDATE taskgraph_tasks SET metadata = '{}' WHERE graph = $1 AND id = 1`, graph)
	require.NoError(t, err)
	got, err := s.Get(ctx, 1)
	require.NoError(t, err)
	require.Nil(t, got.Metadata)
	c, err := s.Complete(ctx, 1, "alice")
	require.NoError(t, err)
	got, err = s.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, got, c.Task)
}

// List makes room for as many tasks as the last List read; after the
// graph shrinks, it does not hand out the larger one's room.
func TestListAfterShrinking(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	var tasks []taskgraph.Task
	for i := 1; i <= 500; i++ {
		tasks = append(tasks, taskgraph.Task{ID: taskgraph.ID(i), Subject: "t", Status: taskgraph.Pending})
	}
	require.NoError(t, s.Load(ctx, tasks))
	list, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 500)
	_, err = p.Exec(ctx, `DELETE FROM taskgraph_tasks WHERE graph = $1 AND id > 10`, graph)
	require.NoError(t, err)
	list, err = s.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 10)
	require.LessOrEqual(t, cap(list), 2*10+64)
}

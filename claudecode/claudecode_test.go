package claudecode_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/claudecode"
)

func TestImport(t *testing.T) {
	ctx := context.Background()
	store, err := taskgraph.Open(t.TempDir())
	require.NoError(t, err)
	defer store.Close()
	_, err = claudecode.Import(ctx, store, "testdata/tasklist")
	require.NoError(t, err)

	all, err := store.List(ctx)
	require.NoError(t, err)
	byID := map[taskgraph.ID]taskgraph.Task{}
	for _, task := range all {
		byID[task.ID] = task
	}
	require.Len(t, all, 4)
	assert.Equal(t, taskgraph.Completed, byID[1].Status)
	assert.Equal(t, "main", byID[1].Owner)
	assert.Equal(t, []taskgraph.ID{2, 3}, byID[1].Blocks, "1's blocks became 2's and 3's blockedBy")
	assert.Equal(t, []taskgraph.ID{1}, byID[3].BlockedBy)
	assert.Equal(t, taskgraph.InProgress, byID[2].Status)
	assert.Equal(t, "researcher", byID[2].Owner)
	assert.Equal(t, "high", byID[2].Metadata["priority"])
	assert.Equal(t, "Implementing search endpoint", byID[2].Metadata["activeForm"])
	assert.Equal(t, []taskgraph.ID{3}, byID[5].BlockedBy)
	assert.Equal(t, []any{"4"}, byID[5].Metadata[claudecode.KeyMissing])
	assert.Equal(t, map[string]any{"reviewed": true}, byID[5].Metadata["customField"])

	b, err := store.Board(ctx)
	require.NoError(t, err)
	require.Len(t, b.Ready, 1)
	assert.Equal(t, taskgraph.ID(3), b.Ready[0].ID)
	n, err := store.Create(ctx, taskgraph.NewTask{Subject: "next"})
	require.NoError(t, err)
	assert.Equal(t, taskgraph.ID(6), n.ID)
}

func TestReadStringIDs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		require.NoError(t, osWriteFile(dir+"/"+name, s))
	}
	write("a.json", `{"id": "task_a", "subject": "A", "status": "pending", "blocks": ["7"]}`)
	write("7.json", `{"id": "7", "subject": "seven", "status": "deleted"}`)
	tasks, err := claudecode.Read(dir)
	require.NoError(t, err)
	require.Len(t, tasks, 2)
	assert.Equal(t, taskgraph.ID(7), tasks[0].ID)
	assert.Equal(t, []taskgraph.ID{8}, tasks[0].BlockedBy)
	assert.Equal(t, "deleted", tasks[0].Metadata[claudecode.KeyStatus])
	assert.Equal(t, taskgraph.ID(8), tasks[1].ID)
	assert.Equal(t, "task_a", tasks[1].Metadata[claudecode.KeyID])
}

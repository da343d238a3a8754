package taskgraph_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func TestCheck(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	// A hand-made cycle 5 -> 6 -> 5, a dangling edge, a torn file, an
	// expired lease, an owner-less claim, leftovers of a dead writer.
	write("task_5.json", `{"id": 5, "subject": "five", "status": "pending", "blockedBy": [6]}`)
	write("task_6.json", `{"id": 6, "subject": "six", "status": "pending", "blockedBy": [5, 42]}`)
	write("task_7.json", `{"id": 7, "subject": "torn`)
	write("task_8.json", `{"id": 8, "subject": "leased", "status": "in_progress", "owner": "gone", "leaseExpiresAt": "2026-12-02T11:00:00Z"}`)
	write("task_9.json", `{"id": 9, "subject": "nobody", "status": "in_progress"}`)
	write(".task_3.json12345", `{"id": 3`)
	write(".taskgraph.journal", `{"put": {}}`)
	write("task_010.json", `{}`)
	// As merges can leave them: work completed and in progress while its
	// blocker 2 is pending (13 blocks 14, which has started: reopening 13
	// would be refused, so check does not offer it); a parent deleted on
	// another branch; two tasks each other's parent; a completed task
	// whose blocker is gone.
	write("task_11.json", `{"id": 11, "subject": "done early", "status": "completed", "blockedBy": [2]}`)
	write("task_12.json", `{"id": 12, "subject": "begun early", "status": "in_progress", "owner": "ann", "blockedBy": [2]}`)
	write("task_13.json", `{"id": 13, "subject": "done early too", "status": "completed", "blockedBy": [2]}`)
	write("task_14.json", `{"id": 14, "subject": "after 13", "status": "completed", "blockedBy": [13]}`)
	write("task_15.json", `{"id": 15, "subject": "orphan", "status": "pending", "parent": 40}`)
	write("task_16.json", `{"id": 16, "subject": "hen", "status": "pending", "parent": 17}`)
	write("task_17.json", `{"id": 17, "subject": "egg", "status": "pending", "parent": 16}`)
	write("task_18.json", `{"id": 18, "subject": "after a deleted one", "status": "completed", "blockedBy": [41]}`)
	before := snapshot(t, dir)

	problems, err := tg.Check(ctx, dir, tg.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, fmt.Sprintf("%s %s %d", filepath.Base(p.Path), p.Kind, p.ID))
		assert.NotEmpty(t, p.Message)
	}
	assert.ElementsMatch(t, []string{
		"task_5.json cycle 5",
		"task_6.json dangling 6",
		"task_7.json corrupt 7",
		"task_8.json expired-lease 8",
		"task_9.json no-owner 9",
		".task_3.json12345 temp-file 0",
		".taskgraph.journal journal 0",
		"task_010.json ignored 0",
		"task_11.json out-of-order 11",
		"task_12.json out-of-order 12",
		"task_13.json out-of-order 13",
		"task_15.json dangling-parent 15",
		"task_16.json parent-cycle 16",
		"task_18.json dangling 18",
	}, got)
	messages := map[string]string{}
	for _, p := range problems {
		messages[filepath.Base(p.Path)] = p.Message
	}
	assert.Contains(t, messages["task_5.json"], "5 -> 6 -> 5")
	assert.Contains(t, messages["task_11.json"], "task 11 is completed, but its blocker 2 is pending")
	assert.Contains(t, messages["task_11.json"], "taskgraph reopen 11")
	assert.Contains(t, messages["task_12.json"], "taskgraph release 12 --force")
	assert.NotContains(t, messages["task_13.json"], "taskgraph reopen", "14 has started: a reopen would be refused")
	assert.Contains(t, messages["task_15.json"], "task 40, does not exist")
	assert.Contains(t, messages["task_15.json"], "taskgraph edit 15")
	assert.Contains(t, messages["task_16.json"], "16 -> 17 -> 16")
	assert.Contains(t, messages["task_16.json"], "taskgraph edit 16")
	assert.Contains(t, messages["task_18.json"], "taskgraph dep rm 18 41")
	assert.Equal(t, before, snapshot(t, dir), "Check changes nothing")

	clean := t.TempDir()
	problems, err = tg.Check(ctx, clean)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

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
	}, got)
	for _, p := range problems {
		if p.Kind == tg.ProblemCycle {
			assert.Contains(t, p.String(), "5 -> 6 -> 5")
		}
	}
	assert.Equal(t, before, snapshot(t, dir), "Check changes nothing")

	clean := t.TempDir()
	problems, err = tg.Check(ctx, clean)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

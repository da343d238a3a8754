//go:build !windows

package taskgraph_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph/taskgraph"
)

// TestReferenceDirectory opens a directory exactly as the reference's
// agents/s07_task_system.py leaves it and works on it.
func TestReferenceDirectory(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	s := openStore(t, dir)
	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{2, 3}, idsOf(b.Ready), "edges the reference cleared read the same")
	assert.Equal(t, []tg.ID{4}, idsOf(b.Blocked))
	assert.Equal(t, []tg.ID{1}, idsOf(b.Completed))
	assert.Equal(t, "説明を書く", b.Ready[1].Description)

	for _, id := range []tg.ID{2, 3} {
		_, err := s.Claim(ctx, id, "agent")
		require.NoError(t, err)
		c, err := s.Complete(ctx, id, "agent")
		require.NoError(t, err)
		if id == 3 {
			assert.Equal(t, []tg.ID{4}, idsOf(c.Unblocked))
		}
	}
	n, err := s.Create(ctx, tg.NewTask{Subject: "Ship", BlockedBy: []tg.ID{4}})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(5), n.ID)

	// Every file still has the reference's six fields with their types,
	// so the reference loads what we wrote.
	for id := 1; id <= 5; id++ {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("task_%d.json", id)))
		require.NoError(t, err)
		var f struct {
			ID          *int    `json:"id"`
			Subject     *string `json:"subject"`
			Description *string `json:"description"`
			Status      *string `json:"status"`
			BlockedBy   *[]int  `json:"blockedBy"`
			Owner       *string `json:"owner"`
		}
		require.NoError(t, json.Unmarshal(data, &f), "task %d", id)
		require.NotNil(t, f.ID)
		assert.Equal(t, id, *f.ID)
		assert.NotNil(t, f.Subject)
		assert.NotNil(t, f.Description)
		assert.Contains(t, []string{"pending", "in_progress", "completed"}, *f.Status)
		assert.NotNil(t, f.BlockedBy, "blockedBy is [] not null")
		assert.NotNil(t, f.Owner)
	}
}

func TestFileFormat(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, tg.WithClock(func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }))
	_, err := s.Create(ctx, tg.NewTask{Subject: "set up <schema> & «données»"})
	require.NoError(t, err)
	_, err = s.Create(ctx, tg.NewTask{Subject: "api", BlockedBy: []tg.ID{1}, Metadata: map[string]any{"team": "core"}})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "task_2.json"))
	require.NoError(t, err)
	assert.Equal(t, `{
  "id": 2,
  "subject": "api",
  "description": "",
  "status": "pending",
  "blockedBy": [
    1
  ],
  "owner": "",
  "createdAt": "2026-12-02T10:00:00Z",
  "updatedAt": "2026-12-02T10:00:00Z",
  "rev": 1,
  "metadata": {
    "team": "core"
  }
}
`, string(data))
	data, err = os.ReadFile(filepath.Join(dir, "task_1.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"subject": "set up <schema> & «données»"`, "non-ASCII and <>& kept as is")
	assert.Contains(t, string(data), `"blockedBy": [],`)
	fi, err := os.Stat(filepath.Join(dir, "task_1.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644)&^umask(), fi.Mode().Perm(), "default permissions")

	// Only task files, the lock, the log and no temporary files.
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, n := range names {
		assert.Contains(t, []string{"task_1.json", "task_2.json", ".taskgraph.lock", ".taskgraph.log"}, n.Name())
	}
}

func TestFilePermOption(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, tg.WithFilePerm(0o600))
	_, err := s.Create(ctx, tg.NewTask{Subject: "secret"})
	require.NoError(t, err)
	fi, err := os.Stat(filepath.Join(dir, "task_1.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestUnknownFieldsSurvive(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	path := filepath.Join(dir, "task_2.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"id": 2, "subject": "Write code", "description": "", "status": "pending",
		"blockedBy": [], "owner": "", "worktree": "wt/code", "x-review": {"by": "human", "score": 5}}`), 0o644))
	s := openStore(t, dir)
	_, err := s.Claim(ctx, 2, "agent")
	require.NoError(t, err)
	_, err = s.Update(ctx, 2, tg.Patch{Metadata: map[string]any{"n": 1}})
	require.NoError(t, err)
	var f map[string]any
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &f))
	assert.Equal(t, "wt/code", f["worktree"])
	assert.Equal(t, map[string]any{"by": "human", "score": 5.0}, f["x-review"])
	assert.Equal(t, "in_progress", f["status"])
}

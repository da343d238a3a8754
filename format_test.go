//go:build !windows

package taskgraph_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
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

	// Only task files, the lock, the log, the sync file, the cache
	// directory (where the full protocol writes a file ahead of the lock)
	// and no temporary files, there or in the cache.
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, n := range names {
		assert.Contains(t, []string{"task_1.json", "task_2.json", ".taskgraph.lock", ".taskgraph.log", ".taskgraph.sync", ".taskgraph.cache"}, n.Name())
	}
	cached, err := os.ReadDir(filepath.Join(dir, ".taskgraph.cache"))
	if !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
		for _, n := range cached {
			assert.Equal(t, "snapshot", n.Name())
		}
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

// TestReferenceDirectoryReadOnly: reading a directory the reference wrote
// — Board, List, Explain, and a ClaimNext that finds nothing of a label —
// leaves every file byte for byte as it was, and its tasks read with the
// defaults of the fields the reference does not have.
func TestReferenceDirectoryReadOnly(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	before := snapshot(t, dir)
	s := openStore(t, dir)
	all, err := s.List(ctx)
	require.NoError(t, err)
	for _, task := range all {
		assert.Equal(t, tg.DefaultPriority, task.Priority, "task %d", task.ID)
		assert.Empty(t, task.Labels)
		assert.Empty(t, task.Key)
		assert.Empty(t, task.Reason)
		assert.Empty(t, task.Result)
	}
	_, err = s.Board(ctx, tg.ReadyOnly())
	require.NoError(t, err)
	_, err = tg.Explain(all, 4, time.Now())
	require.NoError(t, err)
	_, err = s.ClaimNext(ctx, "agent", tg.WithLabels("frontend"))
	require.ErrorIs(t, err, tg.ErrNoReady)
	after := snapshot(t, dir)
	for name, data := range before {
		assert.Equal(t, data, after[name], "%s changed by reads", name)
	}
}

// TestFileFormatNewFields: priority, labels, key, reason, result and
// history are written only when set (priority only when not the default), after the
// reference's fields, and read back; a file with a priority out of range
// is corrupt, naming the field.
func TestFileFormatNewFields(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, tg.WithClock(func() time.Time { return time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC) }))
	p0 := tg.P0
	a, err := s.Create(ctx, tg.NewTask{Subject: "schema", Key: "schema", Priority: p0, Labels: []string{"db", "backend"}})
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "alice")
	require.NoError(t, err)
	_, err = s.Fail(ctx, a.ID, "alice", "migration «12» failed")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "task_1.json"))
	require.NoError(t, err)
	assert.Equal(t, `{
  "id": 1,
  "subject": "schema",
  "description": "",
  "status": "failed",
  "blockedBy": [],
  "owner": "alice",
  "key": "schema",
  "priority": 0,
  "labels": [
    "backend",
    "db"
  ],
  "reason": "migration «12» failed",
  "createdAt": "2026-12-02T10:00:00Z",
  "updatedAt": "2026-12-02T10:00:00Z",
  "rev": 3,
  "claimedAt": "2026-12-02T10:00:00Z",
  "history": [
    {
      "at": "2026-12-02T10:00:00Z",
      "event": "claimed",
      "by": "alice"
    },
    {
      "at": "2026-12-02T10:00:00Z",
      "event": "failed",
      "by": "alice",
      "detail": "migration «12» failed"
    }
  ]
}
`, string(data))

	b, err := s.Create(ctx, tg.NewTask{Subject: "plain"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, b.ID, "bob")
	require.NoError(t, err)
	_, err = s.Complete(ctx, b.ID, "bob", tg.WithResult("done"))
	require.NoError(t, err)
	data, err = os.ReadFile(filepath.Join(dir, "task_2.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"result": "done"`)
	for _, absent := range []string{`"priority"`, `"labels"`, `"key"`, `"reason"`} {
		assert.NotContains(t, string(data), absent, "a default is not written")
	}

	fresh := openStore(t, dir)
	got, err := fresh.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, tg.P0, got.Priority)
	assert.Equal(t, []string{"backend", "db"}, got.Labels)
	assert.Equal(t, "schema", got.Key)
	assert.Equal(t, "migration «12» failed", got.Reason)
	assert.Equal(t, tg.Failed, got.Status)

	// By hand: unsorted labels read sorted; a bad priority is corrupt.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_3.json"), []byte(`{"id": 3, "subject": "x", "status": "cancelled", "labels": ["b", "a", "b"], "priority": 4, "reason": "r"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_4.json"), []byte(`{"id": 4, "subject": "y", "status": "pending", "priority": "high"}`), 0o644))
	_, err = fresh.List(ctx)
	var ce *tg.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, err.Error(), `field "priority" is "high"`)
	got, err = fresh.Get(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, got.Labels)
	assert.Equal(t, tg.P4, got.Priority)
	assert.Equal(t, tg.Cancelled, got.Status)
}

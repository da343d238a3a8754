package taskgraph

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// taskSchema is docs/task.schema.json, resolved.
func taskSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	data, err := os.ReadFile("docs/task.schema.json")
	require.NoError(t, err)
	var s jsonschema.Schema
	require.NoError(t, json.Unmarshal(data, &s))
	rs, err := s.Resolve(nil)
	require.NoError(t, err)
	return rs
}

// validate checks the task file data against the schema.
func validate(rs *jsonschema.Resolved, data []byte) error {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	return rs.Validate(v)
}

// The schema of the task file, docs/task.schema.json, holds for the
// reference's files, for what the codec writes of a task with every field
// (which decodes to the same task and encodes to the same bytes), and for
// every file a store writes through a task's life; and it refuses what the
// decoder refuses.
func TestTaskFileSchema(t *testing.T) {
	rs := taskSchema(t)

	refs, err := filepath.Glob("testdata/reference/task_*.json")
	require.NoError(t, err)
	require.NotEmpty(t, refs)
	for _, path := range refs {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NoError(t, validate(rs, data), path)
	}

	at := time.Date(2026, 12, 5, 7, 0, 0, 123456789, time.UTC)
	full := Task{
		ID: MaxID, Subject: "all", Description: "every field", Status: InProgress, BlockedBy: []ID{3, 1, 2}, Owner: "me",
		Key: "k", Parent: 7, Priority: P0, Labels: []string{"a", "b"}, Reason: "r", Result: "done",
		CreatedAt: at, UpdatedAt: at.Add(time.Second), Rev: 9, Metadata: map[string]any{"points": 3.0},
		ClaimedAt: at.In(time.FixedZone("x", 3600)), LeaseExpiresAt: at.Add(time.Minute), PrevOwner: "other",
		NotBefore: at, Due: at.Add(time.Hour), MaxAttempts: 3, Attempts: 2, Backoff: 90 * time.Second,
		Notes:   []Note{{At: at, Author: "a", Text: "tried x"}},
		History: []Transition{{At: at, Event: HistoryClaimed, By: "me", Detail: "lease 1m0s"}, {At: at, Event: HistoryEarlier, Count: 4}},
		Extra:   &Extra{MaxRuntime: 2 * time.Hour, ProgressWindow: 30 * time.Minute, unknown: map[string]json.RawMessage{"x-extra": json.RawMessage(`{"k":[1,2]}`)}},
	}
	for _, task := range []Task{full, {ID: 2, Subject: "bare", Status: Completed, Priority: P4}} {
		data, err := encodeTask(&task)
		require.NoError(t, err)
		assert.NoError(t, validate(rs, data), "%s", data)
		back, err := decodeTask(task.ID, data)
		require.NoError(t, err)
		again, err := encodeTask(back)
		require.NoError(t, err)
		assert.Equal(t, string(data), string(again), "a round trip through the codec changes nothing")
	}

	// Every file a store writes, through a task's life.
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".tasks")
	s, err := Open(dir)
	require.NoError(t, err)
	a, err := s.Create(ctx, NewTask{Subject: "a", Priority: P1, Labels: []string{"db"}, Key: "a", Due: at})
	require.NoError(t, err)
	b, err := s.Create(ctx, NewTask{Subject: "b", Parent: a.ID, NotBefore: at, MaxAttempts: 2, Backoff: time.Minute})
	require.NoError(t, err)
	c, err := s.Create(ctx, NewTask{Subject: "c", BlockedBy: []ID{b.ID}})
	require.NoError(t, err)
	_, err = s.Cancel(ctx, c.ID, "not needed")
	require.NoError(t, err)
	_, err = s.Claim(ctx, b.ID, "me", WithLease(time.Hour))
	require.NoError(t, err)
	_, err = s.Note(ctx, b.ID, "me", "halfway")
	require.NoError(t, err)
	_, err = s.Fail(ctx, b.ID, "me", "broke") // an attempt is left: retried later
	require.NoError(t, err)
	require.NoError(t, s.Close())
	files, err := filepath.Glob(filepath.Join(dir, "task_*.json"))
	require.NoError(t, err)
	require.Len(t, files, 3)
	for _, path := range files {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.NoError(t, validate(rs, data), "%s", data)
	}

	// What the decoder refuses, the schema refuses.
	for _, bad := range []string{
		`{"subject": "no id", "status": "pending"}`,
		`{"id": 1, "status": "pending"}`,
		`{"id": 1, "subject": "s", "status": "done"}`,
		`{"id": 1, "subject": "s", "status": "pending", "priority": 7}`,
		`{"id": 1, "subject": "s", "status": "pending", "blockedBy": [0]}`,
		`{"id": 1, "subject": "s", "status": "pending", "rev": -1}`,
		`{"id": 1, "subject": "s", "status": "pending", "createdAt": "yesterday"}`,
		`{"id": 1, "subject": "s", "status": "pending", "backoff": "soon"}`,
		`{"id": 1, "subject": 5, "status": "pending"}`,
	} {
		_, derr := decodeTask(1, []byte(bad))
		assert.Error(t, derr, "the decoder refuses %s", bad)
		assert.Error(t, validate(rs, []byte(bad)), "the schema refuses %s", bad)
	}
	assert.True(t, strings.HasPrefix(string(mustRead(t, "docs/task.schema.json")), "{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\""))
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

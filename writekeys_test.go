package taskgraph_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

// TestWriteKeysRecalledAfterReopen writes with keys, closes the store and
// opens the directory again (as a hub restarted after SIGKILL would):
// RecallWrite finds each key with the tasks of the write's answer and
// their revs, a key never used is not found, what the store returns never
// shows the keys, and what git commits (CleanTaskFile) drops them.
func TestWriteKeysRecalledAfterReopen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), ".tasks")
	s, err := tg.Open(dir)
	require.NoError(t, err)
	a, err := s.Create(tg.WithWriteKey(ctx, "create-a"), tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	require.Nil(t, a.Extra, "the key is the store's, not the task's")
	plan, err := s.CreatePlan(tg.WithWriteKey(ctx, "plan"), []tg.NewTask{{Key: "p1", Subject: "p1"}, {Key: "p2", Subject: "p2", Blocks: []tg.ID{a.ID}}})
	require.NoError(t, err)
	noted, err := s.Note(tg.WithWriteKey(ctx, "note"), a.ID, "me", "hello")
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s, err = tg.Open(dir)
	require.NoError(t, err)
	defer s.Close()
	r, err := s.RecallWrite(ctx, "create-a")
	require.NoError(t, err)
	require.True(t, r.Found)
	require.Equal(t, []tg.ID{a.ID}, r.Tasks)
	require.Equal(t, []int64{a.Rev}, r.Revs, "the rev right after the create: the note wrote it since")
	r, err = s.RecallWrite(ctx, "plan")
	require.NoError(t, err)
	require.Equal(t, []tg.ID{plan[0].ID, plan[1].ID}, r.Tasks, "a plan's tasks in input order; task a (its new blocker edge) is not in the answer")
	r, err = s.RecallWrite(ctx, "note")
	require.NoError(t, err)
	require.Equal(t, []int64{noted.Rev}, r.Revs)
	r, err = s.RecallWrite(ctx, "never-used")
	require.NoError(t, err)
	require.False(t, r.Found)
	require.False(t, r.Unsure)

	got, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	require.Nil(t, got.Extra)
	data, err := os.ReadFile(filepath.Join(dir, "task_1.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"writeKeys"`)
	require.NotContains(t, string(tg.CleanTaskFile("task_1.json", data)), "writeKeys", "git never sees the keys")
	merged, _, err := tg.MergeTaskFiles("task_1.json", nil, data, data)
	require.NoError(t, err)
	require.NotContains(t, string(merged), "writeKeys", "the merge driver keeps neither side's keys")
}

// TestWriteKeysWindow checks the bounds: a key past WriteKeyWindow is
// dropped at the task's next write, and a task written more than 64
// times within the window forgets its oldest keys and says so (Unsure).
func TestWriteKeysWindow(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s, err := tg.Open(filepath.Join(t.TempDir(), ".tasks"), tg.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	defer s.Close()
	a, err := s.Create(tg.WithWriteKey(ctx, "old"), tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	now = now.Add(tg.WriteKeyWindow + time.Second)
	_, err = s.Note(tg.WithWriteKey(ctx, "n0"), a.ID, "me", "x")
	require.NoError(t, err)
	r, err := s.RecallWrite(ctx, "old")
	require.NoError(t, err)
	require.False(t, r.Found, "past the window")
	for i := 1; i <= 64; i++ {
		now = now.Add(time.Millisecond)
		_, err = s.Note(tg.WithWriteKey(ctx, "n"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+"-"+time.Duration(i).String()), a.ID, "me", "x")
		require.NoError(t, err)
	}
	r, err = s.RecallWrite(ctx, "n0")
	require.NoError(t, err)
	require.False(t, r.Found)
	require.True(t, r.Unsure, "dropped within the window: a miss is not proof")
	// An invalid key is not recorded: the write goes on without one.
	_, err = s.Note(tg.WithWriteKey(ctx, "not a key!"), a.ID, "me", "x")
	require.NoError(t, err)
}

func TestRecallWritesFileStore(t *testing.T) {
	taskgraphtest.RecallWrites(t, func(t *testing.T) tg.Store {
		s, err := tg.Open(t.TempDir())
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	})
}

package taskgraph_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func TestMissingDependencyIsBlocked(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_2.json"), []byte(`{"id": 2, "subject": "Write code", "description": "", "status": "pending", "blockedBy": [1, 9], "owner": ""}`), 0o644))
	s := openStore(t, dir)
	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{2, 4}, idsOf(b.Blocked))
	assert.Equal(t, map[tg.ID][]tg.ID{2: {9}}, b.Missing)
	_, err = s.Claim(ctx, 2, "a")
	var be *tg.BlockedError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, []tg.ID{9}, be.By)
	assert.Equal(t, []tg.ID{9}, be.Missing)
	assert.EqualError(t, err, "task 2 is blocked by [9] (missing: [9])")
}

// Operations on tasks in a cycle written by hand return ErrCycle; nothing
// hangs, and the rest of the graph works.
func TestHandMadeCycle(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_5.json"), []byte(`{"id": 5, "subject": "five", "status": "pending", "blockedBy": [6]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_6.json"), []byte(`{"id": 6, "subject": "six", "status": "pending", "blockedBy": [5]}`), 0o644))
	s := openStore(t, dir)
	_, err := s.Claim(ctx, 5, "a")
	var ce *tg.CycleError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []tg.ID{5, 6, 5}, ce.Path)
	_, err = s.Update(ctx, 6, tg.Patch{Status: ptr(tg.Completed)})
	assert.ErrorIs(t, err, tg.ErrCycle)
	all, err := s.List(ctx)
	require.NoError(t, err)
	_, err = tg.TopoOrder(all)
	assert.ErrorIs(t, err, tg.ErrCycle)
	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{4, 5, 6}, idsOf(b.Blocked))
	got, err := s.ClaimNext(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, tg.ID(2), got.ID, "the rest of the graph works")
	// Breaking the cycle by hand-editing through the API works.
	_, err = s.Update(ctx, 5, tg.Patch{RemoveBlockedBy: []tg.ID{6}})
	require.NoError(t, err)
	_, err = s.Claim(ctx, 5, "a")
	require.NoError(t, err)
}

// The ready list is in the order ClaimNext takes tasks — most urgent
// first, then by id — and a limit keeps the ones it would take first, in
// every store.
func TestReadyInClaimOrder(t *testing.T) {
	for name, s := range map[string]tg.Store{"MemStore": tg.NewMemStore(), "FileStore": openStore(t, t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			p1, p3 := tg.P1, tg.P3
			for _, nt := range []tg.NewTask{
				{Subject: "old P3", Priority: p3},
				{Subject: "old default"},
				{Subject: "new P1", Priority: p1},
				{Subject: "newer P1", Priority: p1},
				{Subject: "blocked P1", Priority: p1, BlockedBy: []tg.ID{1}},
			} {
				_, err := s.Create(ctx, nt)
				require.NoError(t, err)
			}
			b, err := s.Board(ctx)
			require.NoError(t, err)
			assert.Equal(t, []tg.ID{3, 4, 2, 1}, idsOf(b.Ready))
			b, err = s.Board(ctx, tg.Limit(2))
			require.NoError(t, err)
			assert.Equal(t, []tg.ID{3, 4}, idsOf(b.Ready))
			assert.Equal(t, []tg.ID{5}, idsOf(b.Blocked))
			got, err := s.ClaimNext(ctx, "a")
			require.NoError(t, err)
			assert.Equal(t, tg.ID(3), got.ID)
		})
	}
}

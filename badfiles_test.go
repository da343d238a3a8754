//go:build !windows

package taskgraph_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func TestCorruptFiles(t *testing.T) {
	cases := []struct {
		name, content, problem string
	}{
		{"bad JSON", `{"id": 2, "subject": `, "invalid JSON"},
		{"wrong id", `{"id": 7, "subject": "x", "status": "pending"}`, `field "id" is 7 but the file name says 2`},
		{"unknown status", `{"id": 2, "subject": "x", "status": "done"}`, `field "status" is "done"`},
		{"non-integer blocker", `{"id": 2, "subject": "x", "status": "pending", "blockedBy": [1, "3"]}`, `field "blockedBy": element 1 is "3"`},
		{"not an object", `[1, 2]`, "invalid JSON"},
		{"missing subject", `{"id": 2, "status": "pending"}`, `field "subject" is missing`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, "testdata/reference")
			path := filepath.Join(dir, "task_2.json")
			require.NoError(t, os.WriteFile(path, []byte(c.content), 0o644))
			s := openStore(t, dir)

			all, err := s.List(ctx)
			assert.ErrorIs(t, err, tg.ErrCorrupt)
			var ce *tg.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, path, ce.Path)
			assert.Contains(t, err.Error(), c.problem)
			assert.Equal(t, []tg.ID{1, 3, 4}, idsOf(all), "healthy tasks are still listed")

			b, err := s.Board(ctx)
			assert.ErrorIs(t, err, tg.ErrCorrupt)
			assert.Equal(t, []tg.ID{3}, idsOf(b.Ready))

			_, err = s.Get(ctx, 2)
			assert.ErrorIs(t, err, tg.ErrCorrupt)
			_, err = s.Claim(ctx, 2, "a")
			assert.ErrorIs(t, err, tg.ErrCorrupt)
			_, err = s.Update(ctx, 2, tg.Patch{Description: new(string)})
			assert.ErrorIs(t, err, tg.ErrCorrupt)
			assert.ErrorIs(t, s.Delete(ctx, 2), tg.ErrCorrupt)
			_, err = s.Update(ctx, 4, tg.Patch{AddBlockedBy: []tg.ID{2}})
			assert.ErrorIs(t, err, tg.ErrCorrupt, "no new edge to a corrupt task")
			_, err = s.Claim(ctx, 4, "a")
			assert.ErrorIs(t, err, tg.ErrBlocked, "a corrupt blocker is not finished")

			n, err := s.Create(ctx, tg.NewTask{Subject: "new"})
			require.NoError(t, err)
			assert.Equal(t, tg.ID(5), n.ID)

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, c.content, string(data), "the corrupt file is never rewritten")
		})
	}
}

func TestHostileFiles(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	require.NoError(t, os.Remove(filepath.Join(dir, "task_3.json")))
	require.NoError(t, os.Symlink("task_1.json", filepath.Join(dir, "task_3.json")))
	big := make([]byte, 5<<20)
	for i := range big {
		big[i] = ' '
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_6.json"), big, 0o644))
	for _, name := range []string{"notes.txt", "task_abc.json", "task_01.json", "task_-5.json", ".task_9.json123"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("ignored"), 0o644))
	}
	s := openStore(t, dir)
	all, err := s.List(ctx)
	assert.Equal(t, []tg.ID{1, 2, 4}, idsOf(all))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "task_3.json: not a regular file")
	assert.Contains(t, err.Error(), "task_6.json: file is 5242880 bytes, over the 4194304-byte limit")
	n, err := s.Create(ctx, tg.NewTask{Subject: "next"})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(7), n.ID, "ids of broken files are never reused")
	target, err := os.Readlink(filepath.Join(dir, "task_3.json"))
	require.NoError(t, err)
	assert.Equal(t, "task_1.json", target, "the symlink is left alone")
}

//go:build !windows

package taskgraph_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A file that holds what no write stores — attempts near 2^63 with no
// backoff, names of a MiB, text that is not UTF-8, ids past MaxID, more
// notes or history than a task keeps — is a corrupt file: every operation
// on its task answers at once with ErrCorrupt, and none changes it. (The
// attempts once made Fail loop for ever in RetryDelay, holding the lock;
// the names made every write of the task copy them into its history.)
func TestOutOfBoundsFiles(t *testing.T) {
	mib := strings.Repeat("n", 1<<20)
	held := func(fields string) string {
		return `{"id": 2, "subject": "held", "status": "in_progress", "owner": "a", "blockedBy": []` + fields + `}`
	}
	notes := func(n int) string {
		return `, "notes": [` + strings.TrimSuffix(strings.Repeat(`{"at": "2026-01-01T00:00:00Z", "author": "a", "text": "t"},`, n), ",") + `]`
	}
	history := func(n int) string {
		return `, "history": [` + strings.TrimSuffix(strings.Repeat(`{"at": "2026-01-01T00:00:00Z", "event": "released"},`, n), ",") + `]`
	}
	cases := []struct {
		name, content, problem string
	}{
		{"attempts near 2^63, no backoff", held(`, "maxAttempts": 9223372036854775807, "attempts": 9223372036854775805`), `field "attempts" 9223372036854775805 is not between 0 and 1000`},
		{"attempts past the limit", held(`, "maxAttempts": 5, "attempts": 1001`), `field "attempts" 1001 is not between 0 and 1000`},
		{"maxAttempts past the limit", held(`, "maxAttempts": 1001`), `field "maxAttempts" 1001 is not between 0 (no limit) and 1000`},
		{"backoff past a day", held(`, "maxAttempts": 3, "backoff": "25h0m0s"`), `field "backoff" 25h0m0s is not between 0 and 24h0m0s`},
		{"a MiB owner", `{"id": 2, "subject": "held", "status": "in_progress", "owner": "` + mib + `"}`, `field "owner" is 1048576 bytes, over the 256-byte limit (MaxOwner)`},
		{"a MiB previous owner", held(`, "prevOwner": "` + mib + `"`), `field "prevOwner" is 1048576 bytes`},
		{"a MiB author", held(`, "notes": [{"at": "2026-01-01T00:00:00Z", "author": "` + mib + `", "text": "t"}]`), `field "notes[0].author" is 1048576 bytes, over the 256-byte limit (MaxAuthor)`},
		{"a MiB name in the history", held(`, "history": [{"at": "2026-01-01T00:00:00Z", "event": "noted", "by": "` + mib + `"}]`), `field "history[0].by" is 1048576 bytes`},
		{"a note too long", held(`, "notes": [{"at": "2026-01-01T00:00:00Z", "author": "a", "text": "` + strings.Repeat("t", tg.MaxNoteText+1) + `"}]`), `field "notes[0].text" is 2001 bytes`},
		{"too many notes", held(notes(tg.MaxNotes + 1)), `field "notes" 21 notes, over 20`},
		{"too much history", held(history(tg.MaxHistory + 1)), `field "history" 51 entries, over 50`},
		{"a negative count", held(`, "history": [{"at": "2026-01-01T00:00:00Z", "event": "earlier", "count": -5}]`), `field "history[0].count" -5 is negative`},
		{"a key too long", held(`, "key": "` + strings.Repeat("k", tg.MaxKey+1) + `"`), `field "key" is 129 bytes long`},
		{"a blocker past MaxID", held(`, "blockedBy": [9007199254740992]`), `field "blockedBy[0]" 9007199254740992 is not between 1 and 9007199254740991`},
		{"a parent past MaxID", held(`, "parent": 9007199254740992`), `field "parent" 9007199254740992`},
		{"a subject not UTF-8", "{\"id\": 2, \"subject\": \"caf\xe9\", \"status\": \"pending\"}", "not valid UTF-8 (at byte 25)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, "testdata/reference")
			path := filepath.Join(dir, "task_2.json")
			require.NoError(t, os.WriteFile(path, []byte(c.content), 0o644))
			s := openStore(t, dir)

			var ce *tg.CorruptError
			_, err := s.Get(ctx, 2)
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, path, ce.Path)
			assert.Contains(t, err.Error(), c.problem)
			within(t, time.Second, "the operations on the task", func() {
				ops := map[string]func() error{
					"fail":     func() error { _, err := s.Fail(ctx, 2, "a", "boom"); return err },
					"complete": func() error { _, err := s.Complete(ctx, 2, "a"); return err },
					"release":  func() error { _, err := s.Release(ctx, 2, "a"); return err },
					"renew":    func() error { _, err := s.Renew(ctx, 2, "a", time.Minute); return err },
					"claim":    func() error { _, err := s.Claim(ctx, 2, "b"); return err },
					"note":     func() error { _, err := s.Note(ctx, 2, "a", "still here"); return err },
					"update":   func() error { _, err := s.Update(ctx, 2, tg.Patch{Subject: ptr("x")}); return err },
					"reopen":   func() error { _, err := s.Reopen(ctx, 2); return err },
					"delete":   func() error { return s.Delete(ctx, 2) },
				}
				for name, op := range ops {
					assert.ErrorIs(t, op(), tg.ErrCorrupt, name)
				}
				all, err := s.List(ctx)
				assert.ErrorIs(t, err, tg.ErrCorrupt)
				assert.Equal(t, []tg.ID{1, 3, 4}, idsOf(all), "healthy tasks are still listed")
			})
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, c.content, string(data), "the file is never rewritten")
		})
	}
}

// Every bound is inclusive: a file at each is read, and written again.
func TestFileAtTheBounds(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	name := strings.Repeat("n", tg.MaxOwner)
	author := strings.Repeat("w", tg.MaxAuthor)
	content := `{"id": 2, "subject": "held", "status": "in_progress", "owner": "` + name + `", "prevOwner": "` + name + `", "blockedBy": [9007199254740991],` +
		` "key": "` + strings.Repeat("k", tg.MaxKey) + `", "parent": 9007199254740991, "maxAttempts": 1000, "attempts": 999, "backoff": "24h0m0s",` +
		` "notes": [{"at": "2026-01-01T00:00:00Z", "author": "` + author + `", "text": "` + strings.Repeat("t", tg.MaxNoteText) + `"}],` +
		` "history": [{"at": "2026-01-01T00:00:00Z", "event": "noted", "by": "` + author + `"}]}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_2.json"), []byte(content), 0o644))
	s := openStore(t, dir)
	task, err := s.Get(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, 999, task.Attempts)
	task, err = s.Fail(ctx, 2, name, "the last attempt")
	require.NoError(t, err)
	assert.Equal(t, tg.Failed, task.Status)
	assert.Equal(t, 1000, task.Attempts)
	again, err := openStore(t, dir).Get(ctx, 2)
	require.NoError(t, err, "what a write stored is read back")
	assert.Equal(t, task.Rev, again.Rev)
}

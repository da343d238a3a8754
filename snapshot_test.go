//go:build unix

package taskgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/internal/cachedir"
)

// snapshotTasks are tasks with every field the snapshot keeps, in each of
// its forms.
func snapshotTasks() []*Task {
	plus2 := time.FixedZone("", 2*3600)
	at := time.Date(2026, 12, 4, 10, 0, 0, 123456789, time.UTC)
	return []*Task{
		{ID: 1, Subject: "plain", Status: Pending, Priority: DefaultPriority},
		{ID: 2, Subject: "full", Description: "d\nü", Status: InProgress, Owner: "alice", PrevOwner: "bob",
			BlockedBy: []ID{1}, Labels: []string{"a", "b"}, Key: "k", Priority: P0, Rev: 7,
			CreatedAt: at, UpdatedAt: at.In(plus2), ClaimedAt: at, LeaseExpiresAt: at.Add(time.Hour),
			Metadata: map[string]any{"n": 1.5, "s": "x", "nested": map[string]any{"l": []any{true, nil, "y"}}},
			Extra:    &Extra{MaxRuntime: time.Hour, ProgressWindow: time.Minute, unknown: map[string]json.RawMessage{"x-extra": json.RawMessage(`{"a": [1, 2]}`)}}},
		{ID: 3, Subject: "empty edges", Status: Failed, Reason: "r", BlockedBy: []ID{}, Priority: P4},
		{ID: 482193000001, Subject: "a clone's id", Status: Completed, Result: "done", Priority: DefaultPriority},
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	g := newGraph()
	stamps := map[ID]stamp{}
	for i, task := range snapshotTasks() {
		g.put(task)
		stamps[task.ID] = stamp{Ino: uint64(100 + i), Size: int64(1000 + i), Mtime: int64(-5 + i)}
	}
	entries, err := decodeSnapshot(encodeSnapshot(g, stamps))
	require.NoError(t, err)
	require.Len(t, entries, 4)
	for i, want := range snapshotTasks() {
		assert.Equal(t, *want, *entries[i].task, "task %d comes back as it went in", want.ID)
		assert.Equal(t, stamps[want.ID], entries[i].stamp)
		a, err := encodeTask(want)
		require.NoError(t, err)
		b, err := encodeTask(entries[i].task)
		require.NoError(t, err)
		assert.Equal(t, string(a), string(b), "and would be written to its file byte for byte")
	}
}

// TestSnapshotDecodeRefusesDamage: every truncation and every flipped byte
// of a snapshot is refused, never a panic.
func TestSnapshotDecodeRefusesDamage(t *testing.T) {
	g := newGraph()
	stamps := map[ID]stamp{}
	for _, task := range snapshotTasks() {
		g.put(task)
		stamps[task.ID] = stamp{Ino: 1, Size: 2, Mtime: 3}
	}
	data := encodeSnapshot(g, stamps)
	for n := range len(data) {
		_, err := decodeSnapshot(data[:n])
		require.Error(t, err, "cut at %d", n)
	}
	for i := range data {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x20
		_, err := decodeSnapshot(bad)
		require.Error(t, err, "byte %d flipped", i)
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	g := newGraph()
	stamps := map[ID]stamp{}
	for _, task := range snapshotTasks() {
		g.put(task)
		stamps[task.ID] = stamp{}
	}
	f.Add(encodeSnapshot(g, stamps))
	f.Add([]byte(snapshotMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		for _, en := range entries { // whatever passes is a task that can be written
			_, err := encodeTask(en.task)
			require.NoError(t, err)
		}
	})
}

// snapshotDir makes a graph of n tasks, scanned once by a store (which
// writes the snapshot when it is released), and returns its directory.
func snapshotDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	s := openTest(t, dir)
	ctx := context.Background()
	for i := range n {
		_, err := s.Create(ctx, NewTask{Subject: fmt.Sprintf("task %d", i+1)})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close())
	fresh := openTest(t, dir)
	_, err := fresh.List(ctx) // reads every file, then writes the snapshot
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, cachedir.Name, snapshotName))
	require.NoError(t, err, "the cold scan wrote the snapshot")
	return dir
}

func subjects(t *testing.T, dir string) map[ID]string {
	t.Helper()
	s := openTest(t, dir)
	list, err := s.List(context.Background())
	require.NoError(t, err)
	out := map[ID]string{}
	for _, task := range list {
		out[task.ID] = task.Subject
	}
	return out
}

// TestSnapshotOnlyWhileTheStampHolds: a fresh store takes a task from the
// snapshot only while the task's file has the stamp recorded with it; a
// file edited by hand, removed or added is seen as it is, as without a
// snapshot. (A file rewritten in place to the same size and given back its
// mtime is the one change it cannot see — which is how this test proves
// the snapshot is used at all.)
func TestSnapshotOnlyWhileTheStampHolds(t *testing.T) {
	dir := snapshotDir(t, 5)
	name := func(id ID) string { return filepath.Join(dir, taskFileName(id)) }

	// 1: same size, same inode, mtime put back: the snapshot's version.
	fi, err := os.Stat(name(1))
	require.NoError(t, err)
	data, err := os.ReadFile(name(1))
	require.NoError(t, err)
	f, err := os.OpenFile(name(1), os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte(`"task X"`), int64(indexOf(t, data, `"task 1"`)))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Chtimes(name(1), fi.ModTime(), fi.ModTime()))

	// 2: edited by hand in place (another size, same inode): seen.
	edited := []byte(replaceOnce(t, data, `"task 1"`, `"task 2, edited by hand"`))
	edited = []byte(replaceOnce(t, edited, `"id": 1`, `"id": 2`))
	f, err = os.OpenFile(name(2), os.O_WRONLY|os.O_TRUNC, 0)
	require.NoError(t, err)
	_, err = f.Write(edited)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	// 3 removed; 9 added by hand, as the reference writes.
	require.NoError(t, os.Remove(name(3)))
	require.NoError(t, os.WriteFile(name(9), []byte(`{"id": 9, "subject": "by hand", "description": "", "status": "pending", "blockedBy": [], "owner": ""}`), 0o644))

	assert.Equal(t, map[ID]string{1: "task 1", 2: "task 2, edited by hand", 4: "task 4", 5: "task 5", 9: "by hand"}, subjects(t, dir))

	// Without the snapshot, the files as they are.
	require.NoError(t, os.RemoveAll(filepath.Join(dir, cachedir.Name)))
	assert.Equal(t, "task X", subjects(t, dir)[1])
}

func indexOf(t *testing.T, data []byte, s string) int {
	t.Helper()
	for i := 0; i+len(s) <= len(data); i++ {
		if string(data[i:i+len(s)]) == s {
			return i
		}
	}
	t.Fatalf("%q not in %s", s, data)
	return -1
}

func replaceOnce(t *testing.T, data []byte, old, new string) string {
	t.Helper()
	i := indexOf(t, data, old)
	return string(data[:i]) + new + string(data[i+len(old):])
}

// TestSnapshotHostile: a snapshot, or a cache directory, that is garbage,
// truncated, another snapshot's, a FIFO, a directory, a symbolic link or
// a plain file, costs nothing but time: a fresh store lists the graph as
// the files hold it, never hangs, and writes go on.
func TestSnapshotHostile(t *testing.T) {
	snap := func(dir string) string { return filepath.Join(dir, cachedir.Name, snapshotName) }
	cases := map[string]func(t *testing.T, dir string){
		"garbage": func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(snap(dir), []byte("garbage"), 0o644))
		},
		"truncated": func(t *testing.T, dir string) {
			data, err := os.ReadFile(snap(dir))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(snap(dir), data[:len(data)/2], 0o644))
		},
		"of another graph": func(t *testing.T, dir string) {
			other := snapshotDir(t, 7)
			data, err := os.ReadFile(snap(other))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(snap(dir), data, 0o644))
		},
		"fifo": func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(snap(dir)))
			require.NoError(t, syscall.Mkfifo(snap(dir), 0o644))
		},
		"directory": func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(snap(dir)))
			require.NoError(t, os.Mkdir(snap(dir), 0o755))
		},
		"symlink": func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(snap(dir)))
			require.NoError(t, os.Symlink("/etc/passwd", snap(dir)))
		},
		"cache is a file": func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, cachedir.Name)))
			require.NoError(t, os.WriteFile(filepath.Join(dir, cachedir.Name), []byte("x"), 0o644))
		},
		"cache is a symlink out": func(t *testing.T, dir string) {
			require.NoError(t, os.RemoveAll(filepath.Join(dir, cachedir.Name)))
			require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(dir, cachedir.Name)))
		},
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			dir := snapshotDir(t, 5)
			require.NoError(t, os.Remove(filepath.Join(dir, taskFileName(2))))
			spoil(t, dir)
			done := make(chan map[ID]string, 1)
			go func() { done <- subjects(t, dir) }()
			select {
			case got := <-done:
				assert.Equal(t, map[ID]string{1: "task 1", 3: "task 3", 4: "task 4", 5: "task 5"}, got)
			case <-time.After(10 * time.Second):
				t.Fatal("a fresh store hung on the snapshot")
			}
			s := openTest(t, dir)
			_, err := s.Create(context.Background(), NewTask{Subject: "writes go on"})
			require.NoError(t, err)
		})
	}
}

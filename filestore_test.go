//go:build !windows

package taskgraph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph/taskgraph"
)

// TestMain lets the test binary re-execute itself as a worker process.
func TestMain(m *testing.M) {
	if role := os.Getenv("TASKGRAPH_TEST_ROLE"); role != "" {
		os.Exit(runRole(role, os.Getenv("TASKGRAPH_TEST_DIR"), os.Getenv("TASKGRAPH_TEST_ARG")))
	}
	os.Exit(m.Run())
}

// worker starts the test binary as a worker process in role.
func worker(t *testing.T, role, dir, arg string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TASKGRAPH_TEST_ROLE="+role, "TASKGRAPH_TEST_DIR="+dir, "TASKGRAPH_TEST_ARG="+arg)
	cmd.Stderr = os.Stderr
	return cmd
}

func runRole(role, dir, arg string) int {
	s, err := tg.Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	switch role {
	case "claimnext":
		for {
			task, err := s.ClaimNext(ctx, arg)
			if errors.Is(err, tg.ErrNoReady) {
				return 0
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Fprintln(out, task.ID)
		}
	case "soak":
		until, _ := time.Parse(time.RFC3339Nano, arg)
		return soak(s, until)
	case "increment":
		n, _ := strconv.Atoi(arg)
		return increment(s, n)
	case "mutate":
		return mutateForever(s)
	case "holdlock":
		// Take the directory lock the way a writer does, say so, and wait
		// to be killed.
		l := flock.New(filepath.Join(dir, ".taskgraph.lock"))
		if err := l.Lock(); err != nil {
			return 1
		}
		fmt.Println("locked")
		select {}
	}
	return 2
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(from)))
	return dir
}

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

func idsOf(ts []tg.Task) []tg.ID {
	out := []tg.ID{}
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
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

func TestRestartKeepsTasksAndIDs(t *testing.T) {
	dir := t.TempDir()
	s, err := tg.Open(dir)
	require.NoError(t, err)
	for _, subj := range []string{"a", "b", "c"} {
		_, err := s.Create(ctx, tg.NewTask{Subject: subj})
		require.NoError(t, err)
	}
	_, err = s.Claim(ctx, 1, "agent")
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, 3))
	require.NoError(t, s.Close())

	s2 := openStore(t, dir)
	got, err := s2.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, tg.InProgress, got.Status)
	assert.Equal(t, "agent", got.Owner)
	n, err := s2.Create(ctx, tg.NewTask{Subject: "d"})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(4), n.ID, "id 3 was deleted and is not reused after a restart")
}

// Two stores on one directory (as two processes would have) see each
// other's writes, and an edit made by hand is seen, not overwritten.
func TestStoresShareADirectory(t *testing.T) {
	dir := t.TempDir()
	a, b := openStore(t, dir), openStore(t, dir)
	_, err := a.Create(ctx, tg.NewTask{Subject: "one"})
	require.NoError(t, err)
	_, err = b.Board(ctx) // b has a warm cache now
	require.NoError(t, err)
	_, err = a.Claim(ctx, 1, "alice")
	require.NoError(t, err)
	_, err = b.Claim(ctx, 1, "bob")
	assert.ErrorIs(t, err, tg.ErrClaimed, "b saw a's claim")
	n, err := b.Create(ctx, tg.NewTask{Subject: "two"})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(2), n.ID)

	// A hand edit in place, as an editor or the reference code does it.
	path := filepath.Join(dir, "task_2.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	edited := strings.Replace(string(data), `"description": ""`, `"description": "edited by a human, longer"`, 1)
	require.NoError(t, os.WriteFile(path, []byte(edited), 0o644))
	got, err := a.Get(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, "edited by a human, longer", got.Description)
	_, err = b.Update(ctx, 2, tg.Patch{Subject: ptr("two!")})
	require.NoError(t, err)
	got, err = a.Get(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, "two!", got.Subject)
	assert.Equal(t, "edited by a human, longer", got.Description, "the hand edit was not overwritten")

	// A file created behind the store's back is found.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_10.json"), []byte(`{"id": 10, "subject": "by hand", "status": "pending"}`), 0o644))
	all, err := b.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{1, 2, 10}, idsOf(all))
}

func ptr[T any](v T) *T { return &v }

// Eight processes call ClaimNext on one directory of 500 tasks until none
// is left: every task is claimed exactly once.
func TestMultiProcessClaimNext(t *testing.T) {
	const tasks, procs = 500, 8
	dir := t.TempDir()
	s := openStore(t, dir, tg.WithoutSync())
	for i := range tasks {
		_, err := s.Create(ctx, tg.NewTask{Subject: fmt.Sprint("task ", i)})
		require.NoError(t, err)
	}
	claims := map[tg.ID]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for p := range procs {
		cmd := worker(t, "claimnext", dir, fmt.Sprint("proc-", p))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				id, err := strconv.ParseInt(sc.Text(), 10, 64)
				assert.NoError(t, err)
				mu.Lock()
				claims[tg.ID(id)]++
				mu.Unlock()
			}
			assert.NoError(t, cmd.Wait())
		})
	}
	wg.Wait()
	assert.Len(t, claims, tasks, "no task lost")
	for id, n := range claims {
		assert.Equal(t, 1, n, "task %d claimed %d times", id, n)
	}
	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Len(t, b.InProgress, tasks)
}

// A lock held by a process that then dies is released by the kernel.
func TestLockOfKilledProcessIsFreed(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	cmd := worker(t, "holdlock", dir, "")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = s.Create(short, tg.NewTask{Subject: "waits"})
	assert.ErrorIs(t, err, context.DeadlineExceeded, "cancellation while waiting for the lock")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	_, err = s.Create(ctx, tg.NewTask{Subject: "after the holder died"})
	require.NoError(t, err)
}

// Found by the soak: a store that never saw a task created and deleted by
// others must still not allocate its id again.
func TestIDNotReusedAcrossStores(t *testing.T) {
	dir := t.TempDir()
	a, b, c := openStore(t, dir), openStore(t, dir), openStore(t, dir)
	_, err := a.Create(ctx, tg.NewTask{Subject: "first"})
	require.NoError(t, err)
	_, err = b.Board(ctx) // b is warm and will never see task 2
	require.NoError(t, err)
	x, err := a.Create(ctx, tg.NewTask{Subject: "x"})
	require.NoError(t, err)
	require.NoError(t, c.Delete(ctx, x.ID))
	y, err := b.Create(ctx, tg.NewTask{Subject: "y"})
	require.NoError(t, err)
	assert.Equal(t, x.ID+1, y.ID)
}

// A writer killed in the middle of appending to the change log leaves a
// partial line; the records after it must still reach every store.
func TestTornChangeLogRecord(t *testing.T) {
	dir := t.TempDir()
	a, b := openStore(t, dir), openStore(t, dir)
	for _, subj := range []string{"one", "two"} {
		_, err := a.Create(ctx, tg.NewTask{Subject: subj})
		require.NoError(t, err)
	}
	_, err := b.Board(ctx) // warm
	require.NoError(t, err)
	f, err := os.OpenFile(filepath.Join(dir, ".taskgraph.log"), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`P 1 123 45 678 {"id": 1, "subj`) // cut short, no newline
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, err = a.Update(ctx, 2, tg.Patch{Description: ptr("after the torn record")})
	require.NoError(t, err)
	// List re-checks no file: only the log can tell b about task 2.
	all, err := b.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, "one", all[0].Subject, "the torn record for task 1 was not trusted")
	assert.Equal(t, "after the torn record", all[1].Description)
}

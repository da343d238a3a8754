package taskgraph_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

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
		claimedBy(t, &wg, "claimnext", dir, fmt.Sprint("proc-", p), func(id tg.ID) {
			mu.Lock()
			claims[id]++
			mu.Unlock()
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

// claimedBy starts a worker process in role that prints the id of each task
// it claims, one a line, and calls claimed for each, in wg until the worker
// has exited.
func claimedBy(t *testing.T, wg *sync.WaitGroup, role, dir, arg string, claimed func(tg.ID)) {
	t.Helper()
	cmd := worker(t, role, dir, arg)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	wg.Go(func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			id, err := strconv.ParseInt(sc.Text(), 10, 64)
			assert.NoError(t, err)
			claimed(tg.ID(id))
		}
		assert.NoError(t, cmd.Wait())
	})
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

// Lost updates: P processes × M read-increment-write cycles with IfRev and
// a retry on ErrConflict end with exactly P×M.
func TestNoLostUpdatesAcrossProcesses(t *testing.T) {
	const procs, each = 4, 25
	dir := t.TempDir()
	s := openStore(t, dir)
	c, err := s.Create(ctx, tg.NewTask{Subject: "counter", Metadata: map[string]any{"n": 0}})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for p := range procs {
		cmd := worker(t, "increment", dir, fmt.Sprint(each))
		require.NoError(t, cmd.Start(), "worker %d", p)
		wg.Go(func() { assert.NoError(t, cmd.Wait()) })
	}
	wg.Wait()
	got, err := s.Get(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, float64(procs*each), got.Metadata["n"])
	assert.Equal(t, int64(1+procs*each), got.Rev)
}

func increment(s *tg.FileStore, _, arg string) int {
	times, _ := strconv.Atoi(arg)
	conflicts := 0
	for i := 0; i < times; {
		c, err := s.Get(ctx, 1)
		if err != nil {
			return 1
		}
		n := c.Metadata["n"].(float64)
		_, err = s.Update(ctx, 1, tg.Patch{Metadata: map[string]any{"n": n + 1}, IfRev: c.Rev})
		switch {
		case errors.Is(err, tg.ErrConflict):
			conflicts++
		case err != nil:
			fmt.Fprintln(os.Stderr, err)
			return 1
		default:
			i++
		}
	}
	fmt.Fprintln(os.Stderr, "conflicts retried:", conflicts)
	return 0
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

// claimAll is a worker that claims tasks as arg until none is ready,
// printing each id it got.
func claimAll(s *tg.FileStore, _, owner string) int {
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		task, err := s.ClaimNext(ctx, owner)
		if errors.Is(err, tg.ErrNoReady) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, task.ID)
	}
}

// holdLock is a worker that takes the directory lock the way a writer
// does, says so, and waits to be killed.
func holdLock(_ *tg.FileStore, dir, _ string) int {
	l := flock.New(filepath.Join(dir, ".taskgraph.lock"))
	if err := l.Lock(); err != nil {
		return 1
	}
	fmt.Println("locked")
	for {
		// Not select {}: with no other goroutine, Go on Windows ends the
		// process as deadlocked, and the lock with it.
		time.Sleep(time.Hour)
	}
}

// Two labelled agents, two processes each, drain a priority mix with
// ClaimNext WithLabels: each gets only tasks with its label, most urgent
// first, and no task is claimed twice.
func TestMultiProcessLabelledAgents(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir, tg.WithoutSync())
	tasks := taskgraphtest.LabelledMix(t, s, 120)
	var mu sync.Mutex
	var claims []taskgraphtest.Claim
	var wg sync.WaitGroup
	for _, label := range []string{"frontend", "backend"} {
		for w := range 2 {
			owner := fmt.Sprint(label, "-", w)
			claimedBy(t, &wg, "labelled", dir, owner, func(id tg.ID) {
				mu.Lock()
				claims = append(claims, taskgraphtest.Claim{Label: label, Worker: w, Task: tg.Task{ID: id, Owner: owner}})
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	taskgraphtest.CheckLabelled(t, tasks, claims)
	all, err := s.List(ctx, tg.WithStatus(tg.InProgress))
	require.NoError(t, err)
	assert.Len(t, all, len(claims), "every claim printed is in the directory")
	for _, task := range all {
		assert.True(t, strings.HasPrefix(task.Owner, "frontend-") || strings.HasPrefix(task.Owner, "backend-"))
	}
}

// claimLabelled is a worker that claims tasks as owner "LABEL-N" with
// WithLabels(LABEL) until none is ready, printing each id it got, in
// order.
func claimLabelled(s *tg.FileStore, _, owner string) int {
	label, _, _ := strings.Cut(owner, "-")
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for {
		task, err := s.ClaimNext(ctx, owner, tg.WithLabels(label))
		if errors.Is(err, tg.ErrNoReady) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Fprintln(out, task.ID)
	}
}

// Eight processes work through 24 tasks of a label limited to 2 (claim,
// work a little, complete, again): the histories the store wrote under
// its lock never have more than 2 of them in progress at once, and every
// task was done once.
func TestMultiProcessLabelLimit(t *testing.T) {
	const tasks, procs, limit = 24, 8, 2
	dir := t.TempDir()
	s := openStore(t, dir)
	require.NoError(t, s.SetLimit(ctx, "db", limit))
	for i := range tasks {
		_, err := s.Create(ctx, tg.NewTask{Subject: fmt.Sprint("migration ", i), Labels: []string{"db"}})
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for p := range procs {
		cmd := worker(t, "limited", dir, fmt.Sprint("proc-", p))
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, cmd.Wait())
		}()
	}
	wg.Wait()
	all, err := s.List(ctx)
	require.NoError(t, err)
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, task := range all {
		require.Equal(t, tg.Completed, task.Status, "task %d", task.ID)
		var claimed, done int
		for _, h := range task.History {
			switch h.Event {
			case tg.HistoryClaimed:
				claimed++
				edges = append(edges, edge{h.At, +1})
			case tg.HistoryCompleted:
				done++
				edges = append(edges, edge{h.At, -1})
			}
		}
		require.Equal(t, 1, claimed, "task %d claimed once: %v", task.ID, task.History)
		require.Equal(t, 1, done, "task %d", task.ID)
	}
	slices.SortStableFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	running, most := 0, 0
	for _, e := range edges {
		running += e.delta
		most = max(most, running)
	}
	assert.Equal(t, limit, most, "at most %d in progress at once, and the limit was reached", limit)
}

// claimLimited claims, works 5 ms and completes tasks until the graph is
// finished, waiting when a limit holds the rest back.
func claimLimited(s *tg.FileStore, _, owner string) int {
	for {
		task, err := s.ClaimNext(ctx, owner)
		if errors.Is(err, tg.ErrNoReady) {
			b, err := s.Board(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if b.Finished() {
				return 0
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(5 * time.Millisecond)
		if _, err := s.Complete(ctx, task.ID, owner); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

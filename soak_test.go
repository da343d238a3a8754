//go:build !windows

package taskgraph_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// event is one successful write, as a soak worker saw it return.
type event struct {
	Op     string    `json:"op"`
	ID     tg.ID     `json:"id"`
	Rev    int64     `json:"rev"`
	Status tg.Status `json:"status"`
	Owner  string    `json:"owner"`
	By     []tg.ID   `json:"by"`
	At     time.Time `json:"at"` // UpdatedAt: read under the lock, so it orders writes
}

func init() { roles["soak"] = soak } // a worker role (main_test.go)

// soak runs a random mix of single-file mutations until a file exists
// (or, if the test died, a deadline passes; arg is "file\ndeadline") and
// prints each success as an event.
func soak(s *tg.FileStore, _, arg string) int {
	stop, deadline, _ := strings.Cut(arg, "\n")
	until, _ := time.Parse(time.RFC3339Nano, deadline)
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(time.Now().UnixNano())))
	owner := fmt.Sprint("soak-", os.Getpid())
	enc := json.NewEncoder(os.Stdout)
	emit := func(op string, t tg.Task) {
		enc.Encode(event{Op: op, ID: t.ID, Rev: t.Rev, Status: t.Status, Owner: t.Owner, By: t.BlockedBy, At: t.UpdatedAt})
	}
	expected := func(err error) bool {
		for _, e := range []error{tg.ErrNotFound, tg.ErrBlocked, tg.ErrClaimed, tg.ErrCycle, tg.ErrInvalid, tg.ErrNoReady} {
			if errors.Is(err, e) {
				return true
			}
		}
		return false
	}
	for time.Now().Before(until) {
		if _, err := os.Stat(stop); err == nil {
			return 0
		}
		all, err := s.List(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "list:", err)
			return 1
		}
		pick := func() tg.ID {
			if len(all) == 0 {
				return 1
			}
			return all[rng.IntN(len(all))].ID
		}
		var t tg.Task
		op := ""
		switch r := rng.IntN(100); {
		case r < 20:
			op = "create"
			var by []tg.ID
			if len(all) > 0 && rng.IntN(2) == 0 {
				by = []tg.ID{pick()}
			}
			t, err = s.Create(ctx, tg.NewTask{Subject: "soak", BlockedBy: by})
		case r < 35:
			op = "claim"
			t, err = s.Claim(ctx, pick(), owner)
		case r < 50:
			op = "claim"
			t, err = s.ClaimNext(ctx, owner)
		case r < 70:
			op = "complete"
			var c tg.Completion
			c, err = s.Complete(ctx, pick(), owner)
			t = c.Task
		case r < 77:
			op = "release"
			t, err = s.Release(ctx, pick(), owner)
		case r < 90:
			op = "edge"
			t, err = s.Update(ctx, pick(), tg.Patch{AddBlockedBy: []tg.ID{pick()}})
		case r < 95:
			op = "edge"
			t, err = s.Update(ctx, pick(), tg.Patch{RemoveBlockedBy: []tg.ID{pick()}})
		default:
			id := pick()
			if err = s.Delete(ctx, id); err == nil {
				enc.Encode(event{Op: "delete", ID: id, At: time.Now()})
			}
			if err != nil && !expected(err) {
				fmt.Fprintln(os.Stderr, "delete:", err)
				return 1
			}
			continue
		}
		switch {
		case err == nil:
			emit(op, t)
		case !expected(err):
			fmt.Fprintln(os.Stderr, op, err)
			return 1
		}
	}
	return 0
}

// soakLimit bounds how long TestSoak waits for the writes it asserts.
const soakLimit = 30 * time.Second

// TestSoak runs several processes on one directory with a random mix of
// operations, checks the directory while they run, and then replays every
// acknowledged write in lock order to check the invariants: revisions of
// a task advance by exactly one (no write lost or granted twice), no task
// started or completed while a blocker was unfinished at that moment, every
// in_progress task has an owner, no id was reused, the graph is acyclic and
// every file parses. TASKGRAPH_SOAK sets the least duration (default 2s);
// it runs on, up to soakLimit, until the kinds of writes it asserts have
// happened (on a loaded machine, 2 s can pass without a completion).
func TestSoak(t *testing.T) {
	d := 2 * time.Second
	if testing.Short() {
		d = 500 * time.Millisecond
	}
	if v := os.Getenv("TASKGRAPH_SOAK"); v != "" {
		var err error
		d, err = time.ParseDuration(v)
		require.NoError(t, err)
	}
	const procs = 4
	dir := t.TempDir()
	s := openStore(t, dir)
	for range 5 {
		_, err := s.Create(ctx, tg.NewTask{Subject: "seed"})
		require.NoError(t, err)
	}
	start := time.Now()
	stop := filepath.Join(t.TempDir(), "stop")
	var mu sync.Mutex
	var events []event
	ops := map[string]int{} // events by kind, as they arrive
	var wg sync.WaitGroup
	limit := max(d, soakLimit)
	for range procs {
		cmd := worker(t, "soak", dir, stop+"\n"+start.Add(limit+10*time.Second).Format(time.RFC3339Nano))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var e event
				if assert.NoError(t, json.Unmarshal(sc.Bytes(), &e)) {
					mu.Lock()
					events = append(events, e)
					ops[e.Op]++
					mu.Unlock()
				}
			}
			assert.NoError(t, cmd.Wait())
		})
	}
	// Check while they run.
	checks := 0
	enough := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return time.Since(start) >= d && ops["claim"] > 0 && ops["complete"] > 0
	}
	for !enough() && time.Since(start) < limit {
		problems, err := tg.Check(ctx, dir)
		require.NoError(t, err)
		for _, p := range problems {
			assert.Contains(t, []tg.ProblemKind{tg.ProblemTempFile}, p.Kind, "during the soak: %s", p)
		}
		checks++
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, os.WriteFile(stop, nil, 0o644))
	wg.Wait()
	d = time.Since(start).Round(time.Millisecond)

	all, err := s.List(ctx)
	require.NoError(t, err, "every file parses")
	assert.Nil(t, tg.FindCycle(all), "acyclic")
	problems, err := tg.Check(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, problems)

	// Replay in lock order. The initial five tasks are at rev 1.
	sort.SliceStable(events, func(i, j int) bool { return events[i].At.Before(events[j].At) })
	type state struct {
		rev    int64
		status tg.Status
	}
	cur := map[tg.ID]*state{}
	for id := tg.ID(1); id <= 5; id++ {
		cur[id] = &state{rev: 1, status: tg.Pending}
	}
	everCreated := map[tg.ID]bool{1: true, 2: true, 3: true, 4: true, 5: true}
	counts := map[string]int{}
	type version struct {
		id  tg.ID
		rev int64
	}
	seen := map[version]event{}
	for _, e := range events {
		if e.Op != "delete" {
			// Claiming a task one holds returns it without a write: the
			// same version again, which must be identical.
			if prev, ok := seen[version{e.ID, e.Rev}]; ok {
				require.True(t, prev.Status == e.Status && prev.Owner == e.Owner && prev.At.Equal(e.At),
					"task %d rev %d granted twice: %+v and %+v", e.ID, e.Rev, prev, e)
				continue
			}
			seen[version{e.ID, e.Rev}] = e
		}
		counts[e.Op]++
		if e.Op == "delete" {
			delete(cur, e.ID)
			continue
		}
		if e.Op == "create" {
			require.False(t, everCreated[e.ID], "id %d reused", e.ID)
			everCreated[e.ID] = true
			cur[e.ID] = &state{}
		}
		st := cur[e.ID]
		require.NotNil(t, st, "write to task %d that does not exist at that moment: %+v", e.ID, e)
		require.Equal(t, st.rev+1, e.Rev, "task %d: each write advances rev by one (%+v)", e.ID, e)
		if e.Status != st.status && e.Status != tg.Pending {
			for _, b := range e.By {
				if bs := cur[b]; bs == nil || bs.status != tg.Completed {
					t.Errorf("task %d became %s while blocker %d was unfinished (%+v)", e.ID, e.Status, b, e)
				}
			}
		}
		if e.Status == tg.InProgress {
			assert.NotEmpty(t, e.Owner, "in_progress without owner: %+v", e)
		}
		st.rev, st.status = e.Rev, e.Status
	}
	final := map[tg.ID]tg.Status{}
	for _, task := range all {
		final[task.ID] = task.Status
		require.Contains(t, cur, task.ID)
		assert.Equal(t, cur[task.ID].rev, task.Rev, "task %d: the replay ends where the directory is", task.ID)
	}
	assert.Equal(t, len(cur), len(all))
	t.Logf("%v soak, %d processes, %d checks while running, writes by kind %v, %d tasks at the end", d, procs, checks, counts, len(all))
	assert.Greater(t, counts["complete"], 0)
	assert.Greater(t, counts["claim"], 0)
}

//go:build !windows

package taskgraph_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

// layered creates layers of width tasks, each blocked by two tasks of the
// layer before, and returns their ids.
func layered(t *testing.T, s tg.Store, layers, width int) []tg.ID {
	t.Helper()
	var all, prev []tg.ID
	for l := 0; l < layers; l++ {
		var cur []tg.ID
		for i := 0; i < width; i++ {
			var by []tg.ID
			if len(prev) > 0 {
				by = []tg.ID{prev[i], prev[(i+1)%width]}
			}
			task, err := s.Create(ctx, tg.NewTask{Subject: fmt.Sprintf("L%d-%d", l, i), BlockedBy: by})
			require.NoError(t, err)
			cur = append(cur, task.ID)
		}
		all, prev = append(all, cur...), cur
	}
	return all
}

// blockersDone returns an error unless every blocker of task is completed.
func blockersDone(ctx context.Context, s tg.Store, task tg.Task) error {
	for _, b := range task.BlockedBy {
		bt, err := s.Get(ctx, b)
		if err != nil {
			return err
		}
		if bt.Status != tg.Completed {
			return fmt.Errorf("task %d started while its blocker %d is %s", task.ID, b, bt.Status)
		}
	}
	return nil
}

func TestWorkDrainsALayeredGraph(t *testing.T) {
	stores := map[string]func(t *testing.T) tg.Store{
		"MemStore":  func(*testing.T) tg.Store { return tg.NewMemStore() },
		"FileStore": func(t *testing.T) tg.Store { return openStore(t, t.TempDir()) },
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ids := layered(t, s, 4, 6)
			var mu sync.Mutex
			ran := map[tg.ID]int{}
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for w := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					// A poll of an hour: a worker that waits is woken by
					// events, never by polling.
					errs[w] = tg.Work(ctx, s, fmt.Sprint("agent-", w), func(ctx context.Context, task tg.Task) error {
						if err := blockersDone(ctx, s, task); err != nil {
							return err
						}
						mu.Lock()
						ran[task.ID]++
						mu.Unlock()
						time.Sleep(time.Millisecond)
						return nil
					}, tg.WorkPoll(time.Hour))
				}()
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			for _, id := range ids {
				assert.Equal(t, 1, ran[id], "task %d ran once", id)
			}
			b, err := s.Board(ctx)
			require.NoError(t, err)
			require.True(t, b.Finished())
			require.Len(t, b.Completed, len(ids))
		})
	}
}

// A task whose work fails is failed with the error's text, its dependents
// are stranded, and Work goes on with the rest and returns once nothing
// else can run, saying which tasks failed and which are stranded.
func TestWorkFailsATask(t *testing.T) {
	s := tg.NewMemStore()
	a, err := s.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	b, err := s.Create(ctx, tg.NewTask{Subject: "b", BlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err)
	c, err := s.Create(ctx, tg.NewTask{Subject: "c"})
	require.NoError(t, err)
	var did []tg.ID
	err = tg.Work(ctx, s, "agent", func(_ context.Context, task tg.Task) error {
		did = append(did, task.ID)
		if task.ID == a.ID {
			return errors.New("boom")
		}
		return nil
	}, tg.WorkPoll(time.Hour))
	require.ErrorIs(t, err, tg.ErrStalled)
	var stalled *tg.StalledError
	require.ErrorAs(t, err, &stalled)
	require.Equal(t, &tg.StalledError{Failed: []tg.ID{a.ID}, Stranded: []tg.ID{b.ID}}, stalled)
	require.Equal(t, []tg.ID{a.ID, c.ID}, did)
	got, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	require.Equal(t, tg.Failed, got.Status)
	require.Equal(t, "boom", got.Reason)
	board, err := s.Board(ctx)
	require.NoError(t, err)
	require.Equal(t, []tg.ID{b.ID}, idsOf(board.Stranded))
	require.True(t, board.Finished())
}

// A worker with labels takes only tasks that carry them.
func TestWorkLabels(t *testing.T) {
	s := tg.NewMemStore()
	fe, err := s.Create(ctx, tg.NewTask{Subject: "ui", Labels: []string{"frontend"}})
	require.NoError(t, err)
	be, err := s.Create(ctx, tg.NewTask{Subject: "db", Labels: []string{"backend"}})
	require.NoError(t, err)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var did []tg.ID
	err = tg.Work(wctx, s, "fe-agent", func(_ context.Context, task tg.Task) error {
		did = append(did, task.ID)
		cancel() // one task, then stop: the backend task stays for others
		return nil
	}, tg.WorkLabels("frontend"), tg.WorkPoll(time.Hour))
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, []tg.ID{fe.ID}, did)
	got, err := s.Get(ctx, be.ID)
	require.NoError(t, err)
	require.Equal(t, tg.Pending, got.Status)
}

// A waiting worker is woken by the write that makes work ready, and by a
// lease that lapses — with no write at all and no polling.
func TestWorkWakesWithoutPolling(t *testing.T) {
	for _, name := range []string{"MemStore", "FileStore"} {
		t.Run(name, func(t *testing.T) {
			var s tg.Store = tg.NewMemStore()
			if name == "FileStore" {
				s = openStore(t, t.TempDir())
			}
			a, err := s.Create(ctx, tg.NewTask{Subject: "a"})
			require.NoError(t, err)
			b, err := s.Create(ctx, tg.NewTask{Subject: "b", BlockedBy: []tg.ID{a.ID}})
			require.NoError(t, err)
			// Someone else holds a, with a lease it never renews.
			_, err = s.Claim(ctx, a.ID, "crashed", tg.WithLease(300*time.Millisecond))
			require.NoError(t, err)
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			var did []tg.ID
			err = tg.Work(wctx, s, "waiter", func(_ context.Context, task tg.Task) error {
				did = append(did, task.ID)
				return nil
			}, tg.WorkPoll(time.Hour))
			require.NoError(t, err)
			require.Equal(t, []tg.ID{a.ID, b.ID}, did)
			got, err := s.Get(ctx, a.ID)
			require.NoError(t, err)
			require.Equal(t, "waiter", got.Owner)
			require.Equal(t, "crashed", got.PrevOwner)
		})
	}
}

func TestKeepAlive(t *testing.T) {
	s := tg.NewMemStore()
	a, err := s.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "me", tg.WithLease(150*time.Millisecond))
	require.NoError(t, err)
	kctx, stop := tg.KeepAlive(ctx, s, a.ID, "me", 150*time.Millisecond)
	time.Sleep(600 * time.Millisecond) // four leases long
	_, err = s.ClaimNext(ctx, "other")
	require.ErrorIs(t, err, tg.ErrNoReady, "the renewed claim must not lapse")
	require.NoError(t, kctx.Err())

	// Someone releases the task: the next renewal fails, and the work's
	// context is cancelled with that cause.
	_, err = s.Release(ctx, a.ID, "")
	require.NoError(t, err)
	select {
	case <-kctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lost claim did not cancel the context")
	}
	require.ErrorIs(t, context.Cause(kctx), tg.ErrInvalid)
	require.ErrorIs(t, stop(), tg.ErrInvalid)
}

func TestMemStoreWatch(t *testing.T) {
	s := tg.NewMemStore()
	taskgraphtest.Watch(t, s, s)
}
func init() { roles["work"] = workRole } // a worker role (main_test.go)

// workRole is a worker process running Work. Its argument is its owner
// name; "victim" stops forever in its first task, holding it, until it is
// killed. It prints "ran ID" for each task it does.
func workRole(s *tg.FileStore, _, owner string) int {
	err := tg.Work(ctx, s, owner, func(ctx context.Context, task tg.Task) error {
		if err := blockersDone(ctx, s, task); err != nil {
			return err
		}
		fmt.Printf("ran %d\n", task.ID)
		if owner == "victim" {
			select {}
		}
		return nil
	}, tg.WorkLease(600*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Four processes drain a layered graph with Work; one is killed with
// SIGKILL while it holds a task, and another takes that task over once its
// lease lapses.
func TestWorkProcesses(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	ids := layered(t, s, 4, 6)

	victim := worker(t, "work", dir, "victim")
	out, err := victim.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, victim.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	var held tg.ID
	_, err = fmt.Sscanf(line, "ran %d", &held)
	require.NoError(t, err)
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	victim.Wait()

	var mu sync.Mutex
	ran := map[tg.ID]int{}
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		cmd := worker(t, "work", dir, fmt.Sprint("agent-", w))
		var buf strings.Builder
		cmd.Stdout = &buf
		require.NoError(t, cmd.Start())
		wg.Add(1)
		go func() {
			defer wg.Done()
			assert.NoError(t, cmd.Wait())
			mu.Lock()
			defer mu.Unlock()
			for _, l := range strings.Fields(strings.ReplaceAll(buf.String(), "ran ", "")) {
				var id tg.ID
				fmt.Sscan(l, &id)
				ran[id]++
			}
		}()
	}
	wg.Wait()
	for _, id := range ids {
		assert.Equal(t, 1, ran[id], "task %d ran once among the survivors", id)
	}
	b, err := s.Board(ctx)
	require.NoError(t, err)
	require.True(t, b.Finished())
	got, err := s.Get(ctx, held)
	require.NoError(t, err)
	require.Equal(t, tg.Completed, got.Status)
	require.Equal(t, "victim", got.PrevOwner)
}

// A lease renewed while the watcher was busy is not reported as lapsed, and
// its real lapse later is.
func TestRenewedLeaseIsNotLapsed(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	s := tg.NewMemStore(tg.WithClock(clock))
	a, err := s.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "x", tg.WithLease(10*time.Second))
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	events, err := s.Watch(wctx)
	require.NoError(t, err)
	_, err = s.Create(ctx, tg.NewTask{Subject: "b"}) // the watcher waits to deliver this
	require.NoError(t, err)
	_, err = s.Renew(ctx, a.ID, "x", 100*time.Second)
	require.NoError(t, err)
	advance(20 * time.Second) // past the first lease, not the renewed one
	var got []string
	deadline := time.After(300 * time.Millisecond)
collect:
	for {
		select {
		case e := <-events:
			got = append(got, fmt.Sprint(e.Kind, " ", e.Task.ID))
		case <-deadline:
			break collect
		}
	}
	require.NotContains(t, got, fmt.Sprint("lapsed ", a.ID), "a renewed lease reported as lapsed: %v", got)
	advance(200 * time.Second)
	for e := range events {
		if e.Kind == tg.Lapsed {
			require.Equal(t, a.ID, e.Task.ID)
			return
		}
	}
	t.Fatal("the renewed lease's real lapse was never reported")
}

// countingStore counts ClaimNext calls.
type countingStore struct {
	*tg.MemStore
	mu     sync.Mutex
	claims int
}

func (c *countingStore) ClaimNext(ctx context.Context, owner string, opts ...tg.ClaimOption) (tg.Task, error) {
	c.mu.Lock()
	c.claims++
	c.mu.Unlock()
	return c.MemStore.ClaimNext(ctx, owner, opts...)
}

// A worker with labels does not spin on a lapsed lease of a task it may
// not take.
func TestWorkDoesNotSpinOnOthersLapsedLease(t *testing.T) {
	s := &countingStore{MemStore: tg.NewMemStore()}
	x, err := s.Create(ctx, tg.NewTask{Subject: "x", Labels: []string{"x"}})
	require.NoError(t, err)
	_, err = s.Claim(ctx, x.ID, "dead", tg.WithLease(10*time.Millisecond))
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = tg.Work(wctx, s, "y-agent", func(context.Context, tg.Task) error { return nil }, tg.WorkLabels("y"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	s.mu.Lock()
	defer s.mu.Unlock()
	require.LessOrEqual(t, s.claims, 3, "ClaimNext calls in 300 ms")
}

// Update never takes a task out of completed: Reopen does, after checking
// that nothing it blocks has started.
func TestUpdateDoesNotReopenCompleted(t *testing.T) {
	for name, s := range map[string]tg.Store{"MemStore": tg.NewMemStore(), "FileStore": openStore(t, t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			a, err := s.Create(ctx, tg.NewTask{Subject: "a"})
			require.NoError(t, err)
			b, err := s.Create(ctx, tg.NewTask{Subject: "b", BlockedBy: []tg.ID{a.ID}})
			require.NoError(t, err)
			_, err = s.Claim(ctx, a.ID, "x")
			require.NoError(t, err)
			_, err = s.Complete(ctx, a.ID, "x")
			require.NoError(t, err)
			_, err = s.Claim(ctx, b.ID, "y")
			require.NoError(t, err)
			_, err = s.Update(ctx, a.ID, tg.Patch{Status: ptr(tg.Pending)})
			require.ErrorIs(t, err, tg.ErrInvalid)
			_, err = s.Reopen(ctx, a.ID)
			require.ErrorIs(t, err, tg.ErrInvalid)
			got, err := s.Get(ctx, a.ID)
			require.NoError(t, err)
			require.Equal(t, tg.Completed, got.Status)
		})
	}
}

// Await returns as soon as something becomes claimable — a task made
// ready by another agent, or a lease that lapses — or the graph finishes,
// and otherwise waits out its deadline; in every store.
func TestAwait(t *testing.T) {
	for _, name := range []string{"MemStore", "FileStore"} {
		t.Run(name, func(t *testing.T) {
			var s tg.Store = tg.NewMemStore()
			if name == "FileStore" {
				s = openStore(t, t.TempDir())
			}
			a, err := s.Create(ctx, tg.NewTask{Subject: "a"})
			require.NoError(t, err)
			b, err := s.Create(ctx, tg.NewTask{Subject: "b", BlockedBy: []tg.ID{a.ID}})
			require.NoError(t, err)
			_, err = s.Claim(ctx, a.ID, "other")
			require.NoError(t, err)

			// Nothing claimable: the deadline ends the wait.
			short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err = tg.Await(short, s, tg.WorkPoll(time.Hour))
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)

			// Another agent completes a: b is ready, and Await wakes
			// without polling.
			go func() {
				time.Sleep(100 * time.Millisecond)
				_, _ = s.Complete(ctx, a.ID, "other")
			}()
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			board, err := tg.Await(wctx, s, tg.WorkPoll(time.Hour))
			require.NoError(t, err)
			require.Equal(t, []tg.ID{b.ID}, idsOf(board.Ready))

			// A lease that lapses wakes it too, when it lapses (not a
			// second later, as a lease that lapsed before the call is).
			_, err = s.Claim(ctx, b.ID, "crashed", tg.WithLease(200*time.Millisecond))
			require.NoError(t, err)
			start := time.Now()
			// A store seen without Watch: the lapse's own timer wakes it.
			board, err = tg.Await(wctx, &boardCounter{Store: s}, tg.WorkPoll(time.Hour))
			require.NoError(t, err)
			assert.Less(t, time.Since(start), 950*time.Millisecond, "woke late for a lapse")
			require.Equal(t, []tg.ID{b.ID}, idsOf(board.InProgress))
			_, err = s.ClaimNext(ctx, "me")
			require.NoError(t, err, "what Await woke for can be claimed")

			// Labels: a ready task without them does not end the wait.
			_, err = s.Create(ctx, tg.NewTask{Subject: "c"})
			require.NoError(t, err)
			short, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
			_, err = tg.Await(short, s, tg.WorkPoll(time.Hour), tg.WorkLabels("gpu"))
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded)

			// A finished graph ends it at once.
			_, err = s.Complete(ctx, b.ID, "me")
			require.NoError(t, err)
			_, err = s.Cancel(ctx, 3, "not needed")
			require.NoError(t, err)
			board, err = tg.Await(wctx, s, tg.WorkPoll(time.Hour), tg.WorkLabels("gpu"))
			require.NoError(t, err)
			require.True(t, board.Finished())
		})
	}
}

// boardCounter counts Board calls: how often a wait looked.
type boardCounter struct {
	tg.Store
	boards atomic.Int64
}

func (c *boardCounter) Board(ctx context.Context, f ...tg.Filter) (tg.Board, error) {
	c.boards.Add(1)
	return c.Store.Board(ctx, f...)
}

// A store whose clock is behind this machine's decides a lease has not
// lapsed when the wall clock says it has: a claim-and-wait loop must
// neither spin on such a lease nor sleep past it for long. (Before:
// 32,555 looks in 300 ms.)
func TestAwaitWithAStoreClockBehind(t *testing.T) {
	past := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	mem := tg.NewMemStore(tg.WithClock(func() time.Time { return past }))
	_, err := mem.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	_, err = mem.Claim(ctx, 1, "crashed", tg.WithLease(time.Minute)) // lapsed long ago by the wall clock, not by the store's
	require.NoError(t, err)
	s := &boardCounter{Store: mem}
	wctx, cancel := context.WithTimeout(ctx, 2500*time.Millisecond)
	defer cancel()
	tries := 0
	for wctx.Err() == nil {
		_, err := s.ClaimNext(ctx, "me")
		require.ErrorIs(t, err, tg.ErrNoReady)
		tries++
		if _, err := tg.Await(wctx, s, tg.WorkPoll(time.Hour)); err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
	}
	assert.LessOrEqual(t, s.boards.Load(), int64(12), "the wait spun")
	assert.GreaterOrEqual(t, tries, 2, "the lease was looked at again within a second or so")
}

// TestWorkWaitsOutDeferralsAndRetries: Work retries a flaky task after its
// backoff and takes a deferred task once its time has come, woken by the
// watch (Undeferred), not by polling (WorkPoll is an hour); a graph with
// only deferred work left is not finished.
func TestWorkWaitsOutDeferralsAndRetries(t *testing.T) {
	for _, name := range []string{"MemStore", "FileStore"} {
		t.Run(name, func(t *testing.T) {
			var s tg.Store = tg.NewMemStore()
			if name == "FileStore" {
				s = openStore(t, t.TempDir())
			}
			start := time.Now()
			flaky, err := s.Create(ctx, tg.NewTask{Subject: "flaky", MaxAttempts: 3, Backoff: 100 * time.Millisecond})
			require.NoError(t, err)
			// Well after the retries (100 then 200 ms after each failure),
			// however late the first claim comes on a loaded machine.
			later, err := s.Create(ctx, tg.NewTask{Subject: "later", NotBefore: start.Add(time.Second)})
			require.NoError(t, err)
			wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			var did []tg.ID
			var at []time.Duration
			err = tg.Work(wctx, s, "worker", func(_ context.Context, task tg.Task) error {
				did, at = append(did, task.ID), append(at, time.Since(start))
				if task.ID == flaky.ID && task.Attempts < 2 {
					return errors.New("flaked")
				}
				return nil
			}, tg.WorkPoll(time.Hour))
			require.NoError(t, err)
			require.Equal(t, []tg.ID{flaky.ID, flaky.ID, flaky.ID, later.ID}, did, "at %v", at)
			assert.GreaterOrEqual(t, at[1]-at[0], 100*time.Millisecond, "the first retry waits out the backoff")
			assert.GreaterOrEqual(t, at[2]-at[1], 200*time.Millisecond, "the second waits twice as long")
			assert.GreaterOrEqual(t, at[3], time.Second, "the deferred task waits for its time")
			assert.Less(t, at[3], 5*time.Second, "and is taken when it comes, not at a poll")
			got, err := s.Get(ctx, flaky.ID)
			require.NoError(t, err)
			assert.Equal(t, tg.Completed, got.Status)
			assert.Equal(t, 2, got.Attempts)
		})
	}
}

// TestWatchReportsUndeferred: a watch reports when a deferred task's time
// comes, with no write.
func TestWatchReportsUndeferred(t *testing.T) {
	s := tg.NewMemStore()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	a, err := s.Create(ctx, tg.NewTask{Subject: "a", NotBefore: time.Now().Add(200 * time.Millisecond)})
	require.NoError(t, err)
	events, err := s.Watch(wctx)
	require.NoError(t, err)
	e := <-events
	assert.Equal(t, tg.Undeferred, e.Kind)
	assert.Equal(t, a.ID, e.Task.ID)
	assert.False(t, time.Now().Before(a.NotBefore))
}

// TestKilledWorkersUseUpAttempts: a task with three attempts whose worker
// process is killed with SIGKILL three times — each time the next worker
// takes it over once the lease lapses — ends failed, its reason naming
// the attempts, and its dependent stranded; the claim after the third
// lapse does not run it a fourth time.
func TestKilledWorkersUseUpAttempts(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	job, err := s.Create(ctx, tg.NewTask{Subject: "crashes its worker", MaxAttempts: 3})
	require.NoError(t, err)
	dep, err := s.Create(ctx, tg.NewTask{Subject: "after it", BlockedBy: []tg.ID{job.ID}})
	require.NoError(t, err)
	for kill := 1; kill <= 3; kill++ {
		victim := worker(t, "work", dir, "victim")
		out, err := victim.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, victim.Start())
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err, "worker %d", kill)
		assert.Equal(t, fmt.Sprintf("ran %d\n", job.ID), line)
		require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
		victim.Wait()
		got, err := s.Get(ctx, job.ID)
		require.NoError(t, err)
		assert.Equal(t, kill-1, got.Attempts, "worker %d took the task over, counting the lapses before it", kill)
	}
	held, err := s.Get(ctx, job.ID)
	require.NoError(t, err)
	time.Sleep(time.Until(held.LeaseExpiresAt) + 10*time.Millisecond)
	_, err = s.ClaimNext(ctx, "survivor")
	require.ErrorIs(t, err, tg.ErrNoReady, "the third lapse used the last attempt")
	got, err := s.Get(ctx, job.ID)
	require.NoError(t, err)
	assert.Equal(t, tg.Failed, got.Status)
	assert.Equal(t, 3, got.Attempts)
	assert.Equal(t, "gave up after 3 attempts; the last: the lease of victim lapsed", got.Reason)
	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{dep.ID}, idsOf(b.Stranded))
	assert.ErrorIs(t, b.Stall(), tg.ErrStalled)
}

// TestAwaitSeesALimitRaisedElsewhere: an agent waiting for work held
// back by a concurrency limit wakes when another store on the same
// directory raises the limit (the conformance case AwaitRaisedLimit
// raises it through the waiting store).
func TestAwaitSeesALimitRaisedElsewhere(t *testing.T) {
	dir := t.TempDir()
	taskgraphtest.AwaitRaisedLimit(t, openStore(t, dir), openStore(t, dir))
}

// TestWorkUnder: Work with WorkUnder takes only the tasks under its
// parent, and returns once they are done, with other work left.
func TestWorkUnder(t *testing.T) {
	s := tg.NewMemStore()
	epic, err := s.Create(ctx, tg.NewTask{Subject: "epic"})
	require.NoError(t, err)
	var under []tg.ID
	for _, subject := range []string{"a", "b"} {
		c, err := s.Create(ctx, tg.NewTask{Subject: subject, Parent: epic.ID})
		require.NoError(t, err)
		under = append(under, c.ID)
	}
	_, err = s.Create(ctx, tg.NewTask{Subject: "elsewhere", Priority: tg.P0})
	require.NoError(t, err)
	var done []tg.ID
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = tg.Work(wctx, s, "me", func(_ context.Context, t tg.Task) error {
		done = append(done, t.ID)
		return nil
	}, tg.WorkUnder(epic.ID))
	require.NoError(t, err, "the tasks under the epic are done")
	assert.Equal(t, under, done)
	_, err = tg.Await(ctx, s, tg.WorkUnder(-1))
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = tg.Await(ctx, s, tg.WorkUnder(99))
	assert.ErrorIs(t, err, tg.ErrNotFound, "no task under a task that does not exist: not finished")
	assert.ErrorIs(t, tg.Work(ctx, s, "me", func(context.Context, tg.Task) error { return nil }, tg.WorkUnder(99)), tg.ErrNotFound)
}

// TestWorkLabelsNotFinishedByALapseThatEnded: a labelled agent waiting for
// a lease to lapse, on a store it polls, sees that task completed by its
// holder meanwhile: its own tasks are all ended, but the graph is not
// finished (another task is in progress), so Work goes on waiting.
func TestWorkLabelsNotFinishedByALapseThatEnded(t *testing.T) {
	ms := tg.NewMemStore()
	a, err := ms.Create(ctx, tg.NewTask{Subject: "a", Labels: []string{"x"}})
	require.NoError(t, err)
	z, err := ms.Create(ctx, tg.NewTask{Subject: "z"})
	require.NoError(t, err)
	_, err = ms.Claim(ctx, a.ID, "other", tg.WithLease(400*time.Millisecond))
	require.NoError(t, err)
	_, err = ms.Claim(ctx, z.ID, "zed") // no lease: in progress throughout
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		time.Sleep(150 * time.Millisecond)
		_, err := ms.Complete(ctx, a.ID, "other")
		done <- err
	}()
	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	polled := struct{ tg.Store }{ms} // no Watch: Work polls
	err = tg.Work(wctx, polled, "me", func(context.Context, tg.Task) error { return nil }, tg.WorkLabels("x"), tg.WorkPoll(10*time.Second))
	require.NoError(t, <-done)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "Work returned while z is in progress")
}

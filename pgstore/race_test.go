package pgstore_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// raceIterations is how many rounds the race tests run: a few hundred by
// default, to keep `go test -race ./pgstore` quick; set
// TASKGRAPH_RACE_ITERATIONS (e.g. 10000) for a long run.
func raceIterations(t *testing.T) int {
	n := 300
	if v := os.Getenv("TASKGRAPH_RACE_ITERATIONS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(t, err, "TASKGRAPH_RACE_ITERATIONS")
	}
	return n
}

// TestReopenRacesClaimNext: Reopen of a completed task A and ClaimNext of
// its dependent B, run at once from two stores over separate connections,
// never leave B in progress while A is not completed. Each round makes a
// fresh A (completed) and B (pending, blocked by A), releases both calls
// together, then checks the invariant.
func TestReopenRacesClaimNext(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s1 := open(t, p, graph)
	s2 := open(t, p, graph)
	n := raceIterations(t)
	var violations, claimed, reopened int
	start := time.Now()
	for i := range n {
		a, err := s1.Create(ctx, taskgraph.NewTask{Subject: "a"})
		require.NoError(t, err)
		_, err = s1.Claim(ctx, a.ID, "setup")
		require.NoError(t, err)
		_, err = s1.Complete(ctx, a.ID, "setup")
		require.NoError(t, err)
		b, err := s1.Create(ctx, taskgraph.NewTask{Subject: "b", BlockedBy: []taskgraph.ID{a.ID}, Labels: []string{"b"}})
		require.NoError(t, err)

		var wg sync.WaitGroup
		var reopenErr, claimErr error
		var got taskgraph.Task
		go1 := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-go1
			_, reopenErr = s1.Reopen(ctx, a.ID)
		}()
		go func() {
			defer wg.Done()
			<-go1
			got, claimErr = s2.ClaimNext(ctx, "w", taskgraph.WithLabels("b"))
		}()
		close(go1)
		wg.Wait()
		if reopenErr != nil && !errors.Is(reopenErr, taskgraph.ErrInvalid) {
			require.NoError(t, reopenErr, "round %d: Reopen", i)
		}
		if claimErr != nil && !errors.Is(claimErr, taskgraph.ErrNoReady) {
			require.NoError(t, claimErr, "round %d: ClaimNext", i)
		}
		if claimErr == nil {
			require.Equal(t, b.ID, got.ID, "round %d: the only task labelled b", i)
			claimed++
		}
		if reopenErr == nil {
			reopened++
		}

		ga, err := s1.Get(ctx, a.ID)
		require.NoError(t, err)
		gb, err := s1.Get(ctx, b.ID)
		require.NoError(t, err)
		if gb.Status == taskgraph.InProgress && ga.Status != taskgraph.Completed {
			violations++
			if violations <= 3 {
				t.Errorf("round %d: B (%d) is in progress while its blocker A (%d) is %s (Reopen: %v, ClaimNext: %v)",
					i, b.ID, a.ID, ga.Status, reopenErr, claimErr)
			}
		}
		require.NoError(t, s1.Delete(ctx, b.ID))
		require.NoError(t, s1.Delete(ctx, a.ID))
	}
	t.Logf("%d rounds in %v: %d violations; ClaimNext claimed B %d times, Reopen reopened A %d times",
		n, time.Since(start).Round(time.Millisecond), violations, claimed, reopened)
	if violations > 0 {
		t.Errorf("%d of %d rounds left B in progress with A not completed", violations, n)
	}
}

// TestWritesNotifyAfterCommit: every write notifies the graph once, after
// it has committed, from a transaction of its own; a read, a ClaimNext
// that finds nothing and a Complete that writes nothing notify nothing; and no trigger notifies from inside a write's transaction,
// where the notify lock would be held through the commit's flush
// (migration 007).
func TestWritesNotifyAfterCommit(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	a, err := s.Create(ctx, taskgraph.NewTask{Subject: "a"})
	require.NoError(t, err)

	conn, err := p.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, `LISTEN taskgraph`)
	require.NoError(t, err)
	defer conn.Exec(ctx, `UNLISTEN taskgraph`)
	drain := func() []string { // this graph's: other tests may write on the database meanwhile
		var got []string
		for {
			wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			n, err := conn.Conn().WaitForNotification(wait)
			cancel()
			if err != nil {
				return got
			}
			if n.Payload == graph {
				got = append(got, n.Payload)
			}
		}
	}
	_, err = s.ClaimNext(ctx, "w") // the one-statement claim
	require.NoError(t, err)
	assert.Equal(t, []string{graph}, drain(), "a claim notifies once")
	_, err = s.Complete(ctx, a.ID, "w")
	require.NoError(t, err)
	assert.Equal(t, []string{graph}, drain(), "a completion notifies once")
	_, err = s.Complete(ctx, a.ID, "w")
	require.Error(t, err, "completed already")
	assert.Empty(t, drain(), "a completion that writes nothing notifies nothing")
	_, err = s.ClaimNext(ctx, "w")
	require.ErrorIs(t, err, taskgraph.ErrNoReady)
	assert.Empty(t, drain(), "a claim that claims nothing notifies nothing (idle workers would wake each other for ever)")
	_, err = s.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, drain(), "a read notifies nothing")

	var triggers int
	require.NoError(t, p.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = 'taskgraph_tasks'::regclass AND NOT tgisinternal`).Scan(&triggers))
	assert.Zero(t, triggers, "nothing notifies from inside a write's transaction")
}

// TestBlockersLockedInIDOrder: a claim locks its task's blockers in id
// order, as every write locks tasks, whatever the order of its blocked_by
// (the order its edges were added). Locking them in blocked_by's order, a
// claim of 9 (blocked by 5, then 3) held 5 while it waited for 3, and
// deadlocked against a writer holding 3 and asking for 5: PostgreSQL
// broke it after deadlock_timeout (1 s), and the claim, retried, took that
// long.
func TestBlockersLockedInIDOrder(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	require.NoError(t, s.Load(ctx, []taskgraph.Task{
		{ID: 3, Subject: "b3", Status: taskgraph.Completed},
		{ID: 5, Subject: "b5", Status: taskgraph.Completed},
		{ID: 9, Subject: "task", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{5, 3}},
	}))
	tx, err := p.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = tx.Exec(ctx, `SELECT 1 FROM taskgraph_tasks WHERE graph = $1 AND id = 3 FOR UPDATE`, graph)
	require.NoError(t, err)

	claimed := make(chan error, 1)
	go func() {
		_, err := s.Claim(ctx, 9, "w")
		claimed <- err
	}()
	// Once the claim waits for 3, it holds no lock on 5 if it locks in id
	// order: the writer takes 5 without waiting (NOWAIT fails at once if
	// the claim holds it).
	require.Eventually(t, func() bool {
		var n int
		err := p.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND query LIKE '%CROSS JOIN LATERAL%'`).Scan(&n)
		return err == nil && n > 0
	}, 10*time.Second, 10*time.Millisecond, "the claim waits for task 3")
	_, err = tx.Exec(ctx, `SELECT 1 FROM taskgraph_tasks WHERE graph = $1 AND id = 5 FOR UPDATE NOWAIT`, graph)
	require.NoError(t, err, "the claim, waiting for 3, must not hold 5")
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-claimed)
}

// TestCompletesRaceOnADependent: two holders complete at once the two
// blockers of one task, from two stores over separate connections; each
// completion locks the dependent before it reads what it readies, so the
// one that commits second sees the first and reports the task as
// unblocked: exactly one of the two does, every round.
func TestCompletesRaceOnADependent(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s1 := open(t, p, graph)
	s2 := open(t, p, graph)
	n := raceIterations(t)
	wrong := 0
	for i := range n {
		a, err := s1.Create(ctx, taskgraph.NewTask{Subject: "a"})
		require.NoError(t, err)
		b, err := s1.Create(ctx, taskgraph.NewTask{Subject: "b"})
		require.NoError(t, err)
		c, err := s1.Create(ctx, taskgraph.NewTask{Subject: "c", BlockedBy: []taskgraph.ID{a.ID, b.ID}})
		require.NoError(t, err)
		_, err = s1.Claim(ctx, a.ID, "x")
		require.NoError(t, err)
		_, err = s2.Claim(ctx, b.ID, "y")
		require.NoError(t, err)

		var wg sync.WaitGroup
		var ca, cb taskgraph.Completion
		var errA, errB error
		start := make(chan struct{})
		wg.Add(2)
		go func() { defer wg.Done(); <-start; ca, errA = s1.Complete(ctx, a.ID, "x") }()
		go func() { defer wg.Done(); <-start; cb, errB = s2.Complete(ctx, b.ID, "y") }()
		close(start)
		wg.Wait()
		require.NoError(t, errA, "round %d", i)
		require.NoError(t, errB, "round %d", i)
		reported := len(ca.Unblocked) + len(cb.Unblocked)
		if reported != 1 {
			wrong++
			if wrong <= 3 {
				t.Errorf("round %d: task %d was reported unblocked %d times (by %d: %v, by %d: %v)", i, c.ID, reported, a.ID, ca.Unblocked, b.ID, cb.Unblocked)
			}
		}
		for _, id := range []taskgraph.ID{c.ID, b.ID, a.ID} {
			require.NoError(t, s1.Delete(ctx, id))
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d rounds reported the dependent unblocked other than once", wrong, n)
	}
}

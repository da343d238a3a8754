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
// it has committed, from a transaction of its own; a read, and a
// ClaimNext that finds nothing, notify nothing; and no trigger notifies from inside a write's transaction,
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
	drain := func() []string {
		var got []string
		for {
			wait, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			n, err := conn.Conn().WaitForNotification(wait)
			cancel()
			if err != nil {
				return got
			}
			got = append(got, n.Payload)
		}
	}
	_, err = s.ClaimNext(ctx, "w") // the one-statement claim
	require.NoError(t, err)
	assert.Equal(t, []string{graph}, drain(), "a claim notifies once")
	_, err = s.Complete(ctx, a.ID, "w")
	require.NoError(t, err)
	assert.Equal(t, []string{graph}, drain(), "a completion notifies once")
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

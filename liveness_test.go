package taskgraph_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// TestWorkPastMaxRuntime: a worker whose function runs past the task's
// MaxRuntime loses its claim — its context is cancelled, with ErrLapsed as
// the cause, though its lease was renewed all along — and a second worker
// then takes the task over as a new attempt, which completes it.
func TestWorkPastMaxRuntime(t *testing.T) {
	s, err := tg.Open(t.TempDir())
	require.NoError(t, err)
	defer s.Close()
	a, err := s.Create(ctx, tg.NewTask{Subject: "hangs on first try", MaxRuntime: 400 * time.Millisecond, MaxAttempts: 3})
	require.NoError(t, err)
	cause := make(chan error, 1)
	wctx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	first := make(chan error, 1)
	go func() {
		first <- tg.Work(wctx, s, "slow", func(ctx context.Context, task tg.Task) error {
			<-ctx.Done() // hangs until the claim is lost
			cause <- context.Cause(ctx)
			stop() // one task is all this worker does
			return ctx.Err()
		}, tg.WorkLease(150*time.Millisecond))
	}()
	// The second worker starts once the first has lost the task.
	select {
	case err := <-cause:
		assert.True(t, errors.Is(err, tg.ErrLapsed), "the worker's context says why: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the slow worker's context was never cancelled")
	}
	require.NoError(t, tg.Work(ctx, s, "fast", func(ctx context.Context, task tg.Task) error { return nil }, tg.WorkLease(time.Minute)))
	<-first
	done, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, tg.Completed, done.Status)
	assert.Equal(t, "fast", done.Owner)
	assert.Equal(t, 1, done.Attempts, "the attempt past its runtime is counted")
	var lapses []tg.Transition
	for _, h := range done.History {
		if h.Event == tg.HistoryLapsed {
			lapses = append(lapses, h)
		}
	}
	require.Len(t, lapses, 1)
	assert.Equal(t, "slow", lapses[0].By)
	assert.Equal(t, "ran past its max runtime of 400ms", lapses[0].Detail)
}

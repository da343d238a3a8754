package taskgraph

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLockWaitWithoutCancel: a write whose context can never end (no Done
// channel) waits for the directory lock in flock itself, on the store's own
// descriptor, and goes on as soon as the holder lets go; one with a
// context that can end waits on a descriptor of its own, and gives up
// when the context ends.
func TestLockWaitWithoutCancel(t *testing.T) {
	dir := t.TempDir()
	holder, err := Open(dir)
	require.NoError(t, err)
	defer holder.Close()
	waiter, err := Open(dir)
	require.NoError(t, err)
	defer waiter.Close()
	_, err = waiter.List(context.Background()) // read before the lock is held
	require.NoError(t, err)

	err = holder.acquire(context.Background(), true)
	release := holder.endOp
	require.NoError(t, err)
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = waiter.Create(short, NewTask{Subject: "gives up"})
	require.ErrorIs(t, err, context.DeadlineExceeded)

	done := make(chan error, 1)
	go func() {
		_, err := waiter.Create(context.Background(), NewTask{Subject: "waits"})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the write did not wait for the lock: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the write still waits after the lock was let go")
	}
	tasks, err := holder.List(context.Background())
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	assert.Equal(t, "waits", tasks[0].Subject)
}

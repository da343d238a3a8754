//go:build !windows

package taskgraph

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWatchEndsWithItsReason: a FileStore watch that cannot read the
// directory any more ends, and its last event says why.
func TestWatchEndsWithItsReason(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	s := openDir(t, dir)
	rf := &readFault{fileSystem: s.fs}
	s.useFS(rf)
	events, err := s.Watch(ctx)
	require.NoError(t, err)
	rf.set("task_9.json", syscall.EIO)
	// Made behind the lock, so the watch must read the file itself.
	writeFiles(t, dir, map[string]string{"task_9.json": `{"id": 9, "subject": "x", "status": "pending"}`})
	var last Event
	for e := range events {
		last = e
	}
	require.NoError(t, ctx.Err(), "the watch ended by itself")
	assert.Equal(t, Ended, last.Kind)
	assert.ErrorIs(t, last.Err, syscall.EIO)
	assert.NotErrorIs(t, last.Err, ErrClosed)

	// Cancelling the context ends a watch without an Ended event.
	wctx, stop := context.WithCancel(ctx)
	rf.set("", nil)
	events, err = s.Watch(wctx)
	require.NoError(t, err)
	stop()
	for e := range events {
		assert.NotEqual(t, Ended, e.Kind)
	}
}

package pgstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// TestWatchEndsWhenTheConnectionIsLost: a watch whose connection dies
// ends, and its last event says why — not ErrClosed, which is for a store
// that was closed. (It used to end silently: a consumer could not tell
// "context done" from "database gone".)
func TestWatchEndsWhenTheConnectionIsLost(t *testing.T) {
	app := fmt.Sprintf("tgwatch%d", rand.Uint32())
	p := poolWith(t, map[string]string{"application_name": app})
	s := open(t, p, graphName(t))
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := s.Watch(wctx)
	require.NoError(t, err)
	admin := pool(t)
	var killed int
	require.Eventually(t, func() bool {
		err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = $1 AND query ILIKE 'LISTEN%'`, app).Scan(&killed)
		return err == nil && killed == 1
	}, 10*time.Second, 50*time.Millisecond)
	var last taskgraph.Event
	for e := range events {
		last = e
	}
	require.NoError(t, wctx.Err(), "the watch ended by itself")
	assert.Equal(t, taskgraph.Ended, last.Kind)
	require.Error(t, last.Err)
	assert.NotErrorIs(t, last.Err, taskgraph.ErrClosed)
	assert.Contains(t, last.Err.Error(), "pgstore: watch")
}

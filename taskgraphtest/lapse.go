package taskgraphtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph/taskgraph"
)

// watchLapse checks that a lease that lapses is reported as a Lapsed event
// when it expires, though nothing is written then. Part of Watch.
func watchLapse(t *testing.T, watched tg.Watcher, writer tg.Store) {
	t.Helper()
	a, err := writer.Create(ctx, tg.NewTask{Subject: "leased"})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := watched.Watch(wctx)
	require.NoError(t, err)
	_, err = writer.Claim(ctx, a.ID, "x", tg.WithLease(300*time.Millisecond))
	require.NoError(t, err)
	var got []string
	for e := range events {
		if e.Task.ID == a.ID && e.Kind != tg.Unblocked {
			got = append(got, fmt.Sprint(e.Kind, " ", e.Task.ID))
		}
		if e.Kind == tg.Lapsed || e.Kind == tg.Ended {
			break
		}
	}
	require.Equal(t, []string{fmt.Sprint("updated ", a.ID), fmt.Sprint("lapsed ", a.ID)}, got,
		"a lapsed lease must be reported by the watch, as a Lapsed event after the claim's Updated")
	_, err = writer.ClaimNext(ctx, "y")
	require.NoError(t, err, "the lapsed task is claimable")
}

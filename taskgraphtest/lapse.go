// This file holds the checks that Watch runs after its own: a lease that
// lapses, and the outcomes (Fail, Cancel, Reopen) as events.

package taskgraphtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// watchLapse checks that a lease that lapses is reported as a Lapsed event
// when it expires, though nothing is written then; and so is a claim that
// its no-progress window ends under a lease of an hour, the event's task
// saying by which clock (Task.Lapse). Part of Watch. (One watch for both:
// a hub in front of pgstore holds a connection for each watch session.)
func watchLapse(t *testing.T, watched tg.Watcher, writer tg.Store) {
	t.Helper()
	a, err := writer.Create(ctx, tg.NewTask{Subject: "leased"})
	require.NoError(t, err)
	h, err := writer.Create(ctx, tg.NewTask{Subject: "may hang", ProgressWindow: 600 * time.Millisecond})
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := watched.Watch(wctx)
	require.NoError(t, err)
	_, err = writer.Claim(ctx, a.ID, "x", tg.WithLease(300*time.Millisecond))
	require.NoError(t, err)
	c, err := writer.Claim(ctx, h.ID, "x", tg.WithLease(time.Hour))
	require.NoError(t, err)
	var got []string
	for e := range events {
		if e.Task.ID == a.ID && e.Kind != tg.Unblocked {
			got = append(got, fmt.Sprint(e.Kind, " ", e.Task.ID))
		}
		if e.Kind == tg.Lapsed && e.Task.ID == a.ID || e.Kind == tg.Ended {
			break
		}
	}
	require.Equal(t, []string{fmt.Sprint("updated ", a.ID), fmt.Sprint("lapsed ", a.ID)}, got,
		"a lapsed lease must be reported by the watch, as a Lapsed event after the claim's Updated")
	_, err = writer.ClaimNext(ctx, "y")
	require.NoError(t, err, "the lapsed task is claimable")

	lapsed := false
	for e := range events {
		if e.Kind == tg.Ended {
			t.Fatalf("the watch ended before the claim lapsed: %v", e.Err)
		}
		if e.Task.ID != h.ID || e.Kind != tg.Lapsed {
			continue
		}
		at, clock := e.Task.Lapse()
		require.Equal(t, tg.ClockProgress, clock, "the event's task says which clock ended the claim")
		require.True(t, c.ClaimedAt.Add(600*time.Millisecond).Equal(at))
		require.False(t, time.Now().Before(at), "reported once the window ran out, not before")
		lapsed = true
		break
	}
	require.True(t, lapsed, "the watch closed before the no-progress window ran out")
	_, err = writer.Cancel(ctx, h.ID, "checked") // a lapsed claim left behind would be reported to the next watch
	require.NoError(t, err)
}

// watchOutcomes checks that failing, cancelling and reopening a task are
// reported as updates of it, in every store.
func watchOutcomes(t *testing.T, watched tg.Watcher, writer tg.Store) {
	t.Helper()
	a, err := writer.Create(ctx, tg.NewTask{Subject: "will fail"})
	require.NoError(t, err)
	b, err := writer.Create(ctx, tg.NewTask{Subject: "stranded, then cancelled", BlockedBy: []tg.ID{a.ID}})
	require.NoError(t, err)
	_, err = writer.Claim(ctx, a.ID, "x")
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	events, err := watched.Watch(wctx)
	require.NoError(t, err)
	_, err = writer.Fail(ctx, a.ID, "x", "broken")
	require.NoError(t, err)
	_, err = writer.Cancel(ctx, b.ID, "not needed")
	require.NoError(t, err)
	_, err = writer.Reopen(ctx, a.ID)
	require.NoError(t, err)
	want := []string{
		fmt.Sprint("updated ", a.ID, " failed"),
		fmt.Sprint("updated ", b.ID, " cancelled"),
		fmt.Sprint("updated ", a.ID, " pending"),
	}
	var got []string
	for e := range events {
		if e.Kind == tg.Unblocked {
			continue
		}
		got = append(got, fmt.Sprint(e.Kind, " ", e.Task.ID, " ", e.Task.Status))
		if e.Kind == tg.Ended || len(got) == len(want) || (len(got) > 0 && got[len(got)-1] == want[len(want)-1]) {
			break
		}
	}
	// A watch may coalesce a task's updates into its latest; it never
	// reports one as deleted or created.
	for _, g := range got {
		require.Contains(t, want, g, "events %v", got)
	}
	require.Equal(t, want[len(want)-1], got[len(got)-1], "events %v", got)
}

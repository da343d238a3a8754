package pgstore_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

// The store decides as MemStore does, operation by operation, with leases
// driven by the checker's clock.
func TestAgree(t *testing.T) {
	p := pool(t)
	taskgraphtest.Agree(t, func(t *testing.T, now func() time.Time) taskgraph.Store {
		graph := graphName(t)
		s, err := pgstore.Open(ctx, p, graph, pgstore.WithClock(now))
		require.NoError(t, err)
		t.Cleanup(func() { p.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, graph) })
		return s
	})
}

// With WithClock, timestamps and lease expiry follow the given clock, not
// the database's.
func TestWithClock(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	now := time.Date(2030, 1, 2, 3, 4, 5, 6_000, time.UTC)
	s, err := pgstore.Open(ctx, p, graph, pgstore.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, graph) })

	task, err := s.Create(ctx, taskgraph.NewTask{Subject: "leased"})
	require.NoError(t, err)
	require.Equal(t, now, task.CreatedAt)
	task, err = s.ClaimNext(ctx, "a", taskgraph.WithLease(time.Minute))
	require.NoError(t, err)
	require.Equal(t, now, task.ClaimedAt)
	require.Equal(t, now.Add(time.Minute), task.LeaseExpiresAt)

	now = now.Add(time.Minute - time.Microsecond)
	_, err = s.ClaimNext(ctx, "b")
	require.ErrorIs(t, err, taskgraph.ErrNoReady, "the lease has a microsecond left")
	now = now.Add(time.Microsecond)
	task, err = s.ClaimNext(ctx, "b")
	require.NoError(t, err, "the lease lapsed by the store's clock")
	require.Equal(t, "a", task.PrevOwner)
	require.Equal(t, now, task.UpdatedAt)
}

// The limits of Rules.Stored apply to pgstore as to MemStore, on the
// ClaimNext fast path too: a claim that would wrap the rev or outgrow
// MaxTaskSize is refused with the same error, and a big task that fits is
// claimed all the same.
func TestStoredLimitsAsMemStore(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	now := func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }
	pg, err := pgstore.Open(ctx, p, graph, pgstore.WithClock(now))
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, graph) })
	mem := taskgraph.NewMemStore(taskgraph.WithClock(now))
	both := func(what string, op func(s taskgraph.Store) (taskgraph.Task, error)) {
		t.Helper()
		want, wantErr := op(mem)
		got, gotErr := op(pg)
		t.Logf("%s: %v", what, wantErr)
		if wantErr != nil {
			require.Error(t, gotErr, what)
			require.Equal(t, wantErr.Error(), gotErr.Error(), what)
			return
		}
		require.NoError(t, gotErr, what)
		require.Equal(t, want.ID, got.ID, what)
		require.Equal(t, want.Rev, got.Rev, what)
		require.Equal(t, want.Owner, got.Owner, what)
	}
	load := func(s taskgraph.Store) (taskgraph.Task, error) {
		return taskgraph.Task{}, s.(taskgraph.Loader).Load(ctx, []taskgraph.Task{{ID: 1, Subject: "worn out", Status: taskgraph.Pending, Rev: math.MaxInt64 - 1}})
	}
	claimNext := func(owner string) func(s taskgraph.Store) (taskgraph.Task, error) {
		return func(s taskgraph.Store) (taskgraph.Task, error) { return s.ClaimNext(ctx, owner) }
	}
	both("load at the highest rev", load)
	both("claim a task at the highest rev", claimNext("a"))
	both("delete it", func(s taskgraph.Store) (taskgraph.Task, error) { return taskgraph.Task{}, s.Delete(ctx, 1) })

	big := strings.Repeat("x", taskgraph.MaxTaskSize-500)
	both("create a big task", func(s taskgraph.Store) (taskgraph.Task, error) {
		return s.Create(ctx, taskgraph.NewTask{Subject: "big", Description: big})
	})
	both("claim it with an owner that does not fit", claimNext(strings.Repeat("o", taskgraph.MaxOwner)))
	both("claim it with one that does", claimNext("a"))
	both("grow it past the limit", func(s taskgraph.Store) (taskgraph.Task, error) {
		return s.Update(ctx, 2, taskgraph.Patch{Subject: ptr(strings.Repeat("y", 3000))})
	})
}

func ptr[T any](v T) *T { return &v }

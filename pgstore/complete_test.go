package pgstore_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// Complete returns the row it wrote without reading it back: the task as
// the Rulebook left it, with its locked dependents as Blocks. This checks
// that it is exactly what a read of the row gives, every field set, on
// the database's clock and on a clock with nanoseconds.
func TestCompleteReturnsTheRow(t *testing.T) {
	p := pool(t)
	clocks := map[string]func() time.Time{
		"database clock": nil,
		"nanosecond clock": func() time.Time {
			return time.Date(2026, 12, 5, 9, 0, 0, 123456789, time.FixedZone("X", 3600))
		},
	}
	for name, clock := range clocks {
		t.Run(name, func(t *testing.T) {
			graph := graphName(t)
			var opts []pgstore.Option
			if clock != nil {
				opts = append(opts, pgstore.WithClock(clock))
			}
			s, err := pgstore.Open(ctx, p, graph, opts...)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			created := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
			require.NoError(t, s.Load(ctx, []taskgraph.Task{
				{ID: 1, Subject: "blocker", Status: taskgraph.Completed, CreatedAt: created, UpdatedAt: created},
				{ID: 2, Subject: "épique", Status: taskgraph.Pending, CreatedAt: created, UpdatedAt: created},
				{ID: 3, Subject: "the task", Description: "line\n\"quoted\" <b>", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{1},
					Metadata: map[string]any{"n": 1.5, "deep": map[string]any{"list": []any{"a", 2.0, true, nil}}, "empty": ""},
					Priority: taskgraph.PriorityLevel(0), Labels: []string{"backend", "db"}, Key: "k-3", Parent: 2,
					MaxAttempts: 3, Backoff: 1500 * time.Millisecond, Due: created.Add(time.Hour), CreatedAt: created, UpdatedAt: created},
				{ID: 4, Subject: "dependent", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{3}, CreatedAt: created, UpdatedAt: created},
				{ID: 5, Subject: "dependent, still blocked", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{3, 2}, CreatedAt: created, UpdatedAt: created},
			}))
			_, err = s.Claim(ctx, 3, "alice", taskgraph.WithLease(time.Minute))
			require.NoError(t, err)
			_, err = s.Note(ctx, 3, "alice", "half done: \u2028 see \\ notes")
			require.NoError(t, err)
			c, err := s.Complete(ctx, 3, "alice", taskgraph.WithResult("done, 3 files"))
			require.NoError(t, err)
			got, err := s.Get(ctx, 3)
			require.NoError(t, err)
			require.Equal(t, got, c.Task)
			require.Equal(t, []taskgraph.ID{4, 5}, c.Task.Blocks)
			require.Len(t, c.Unblocked, 1)
			four, err := s.Get(ctx, 4)
			require.NoError(t, err)
			require.Equal(t, four, c.Unblocked[0])
		})
	}
}

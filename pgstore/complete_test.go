package pgstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// Complete returns the row it wrote, with its locked dependents as Blocks:
// exactly what a read of the row gives, every field set, on the
// database's clock and on a clock with nanoseconds.
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

// roundTrips counts what a pool sends: batches and single queries.
type roundTrips struct{ batches, queries atomic.Int64 }

func (r *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.queries.Add(1)
	return ctx
}
func (r *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.batches.Add(1)
	return ctx
}
func (r *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// Complete by the task's holder is one round trip (its locks, the write,
// the dependents it readies, the COMMIT and the notification), and decides
// as MemStore does; every case the one-statement completion cannot decide
// (another holder, a blocker unfinished, a full history, a result too big,
// a task not in progress or missing) falls back to the Rulebook's
// transaction, which decides as MemStore does too.
func TestCompleteByHolderAsMemStore(t *testing.T) {
	rt := &roundTrips{}
	p := poolConfigured(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.Tracer = rt })
	now := func() time.Time { return time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC) }
	graph := graphName(t)
	pg, err := pgstore.Open(ctx, p, graph, pgstore.WithClock(now))
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, graph) })
	mem := taskgraph.NewMemStore(taskgraph.WithClock(now))
	var history []taskgraph.Transition
	for range taskgraph.MaxHistory - 1 { // one short of full: a claim fills it, a completion summarises
		history = append(history, taskgraph.Transition{At: now(), Event: taskgraph.HistoryEdited})
	}
	big := strings.Repeat("x", taskgraph.MaxTaskSize-3000)
	tasks := []taskgraph.Task{
		{ID: 1, Subject: "done blocker", Status: taskgraph.Completed},
		{ID: 2, Subject: "plain", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{1}, Metadata: map[string]any{"k": "v"}, Labels: []string{"l"}},
		{ID: 3, Subject: "dependent of 2", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{2}},
		{ID: 4, Subject: "dependent of 2 and 5", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{2, 5}},
		{ID: 5, Subject: "pending blocker", Status: taskgraph.Pending},
		{ID: 6, Subject: "in progress while its blocker is pending, as a merge leaves it", Status: taskgraph.InProgress, Owner: "a", BlockedBy: []taskgraph.ID{5}},
		{ID: 7, Subject: "history one short of full", Status: taskgraph.Pending, History: history},
		{ID: 8, Subject: "big", Description: big, Status: taskgraph.Pending},
		{ID: 9, Subject: "claimed by b", Status: taskgraph.Pending},
		{ID: 10, Subject: "small", Status: taskgraph.Pending},
	}
	for _, s := range []taskgraph.Store{mem, pg} {
		require.NoError(t, s.(taskgraph.Loader).Load(ctx, tasks))
		for _, id := range []taskgraph.ID{2, 7, 8, 10} {
			_, err := s.Claim(ctx, id, "a")
			require.NoError(t, err)
		}
		_, err := s.Claim(ctx, 9, "b")
		require.NoError(t, err)
	}
	ids := func(ts []taskgraph.Task) (out []taskgraph.ID) {
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	for _, c := range []struct {
		what    string
		id      taskgraph.ID
		owner   string
		result  string
		oneTrip bool // decided by the one-statement completion
		refused bool // by MemStore
	}{
		{"by its holder, readying one of two dependents", 2, "a", "done", true, false},
		{"again", 2, "a", "done", false, true},
		{"by another than its holder", 9, "a", "", false, true},
		{"with a blocker that is not completed", 6, "a", "", false, true},
		{"a pending task", 5, "a", "", false, true},
		{"a missing task", 99, "a", "", false, true},
		{"a big task, with a result that does not fit", 8, "a", strings.Repeat("r", 3000), false, true},
		{"a big task, with a result that fits", 8, "a", strings.Repeat("r", 100), false, false},
		{"a small task, with a result past the limit", 10, "a", strings.Repeat("r", taskgraph.MaxTaskSize), false, true},
		{"a small task, with a result that fits", 10, "a", strings.Repeat("é", 400), true, false},
		{"with a history that must be summarised", 7, "a", "done", false, false},
		{"by its holder, with no result", 9, "b", "", true, false},
	} {
		want, wantErr := mem.Complete(ctx, c.id, c.owner, taskgraph.WithResult(c.result))
		require.Equal(t, c.refused, wantErr != nil, "%s: MemStore: %v", c.what, wantErr)
		batches, queries := rt.batches.Load(), rt.queries.Load()
		got, gotErr := pg.Complete(ctx, c.id, c.owner, taskgraph.WithResult(c.result))
		trips := rt.batches.Load() - batches + rt.queries.Load() - queries
		if wantErr != nil {
			require.Error(t, gotErr, c.what)
			require.Equal(t, wantErr.Error(), gotErr.Error(), c.what)
			continue
		}
		require.NoError(t, gotErr, c.what)
		if c.oneTrip {
			require.EqualValues(t, 1, trips, "%s: round trips", c.what)
		}
		for _, pair := range [][2]taskgraph.Task{{want.Task, got.Task}} {
			w, g := pair[0], pair[1]
			require.Equal(t, w.ID, g.ID, c.what)
			require.Equal(t, w.Rev, g.Rev, c.what)
			require.Equal(t, w.Status, g.Status, c.what)
			require.Equal(t, w.Owner, g.Owner, c.what)
			require.Equal(t, w.Result, g.Result, c.what)
			require.Equal(t, w.UpdatedAt, g.UpdatedAt, c.what)
			require.Equal(t, w.LeaseExpiresAt, g.LeaseExpiresAt, c.what)
			require.Equal(t, w.Blocks, g.Blocks, c.what)
			require.Equal(t, w.History, g.History, c.what)
		}
		require.Equal(t, ids(want.Unblocked), ids(got.Unblocked), c.what)
		read, err := pg.Get(ctx, c.id)
		require.NoError(t, err)
		require.Equal(t, read, got.Task, "%s: the task returned is the row", c.what)
	}
}

// Complete by its holder keeps the plans PostgreSQL keeps (generic plans)
// for the statements after its first lock, as Complete's transaction does
// (TestDependentsByBlockedByIndex checks what those plans are): none of
// them is planned anew at any call, with no statement spent on saying so.
func TestCompleteByHolderPlannedOnce(t *testing.T) {
	p := poolConfigured(t, oneSession)
	s := open(t, p, graphName(t))
	var tasks []taskgraph.Task
	for i := 1; i <= 20; i++ {
		tasks = append(tasks, taskgraph.Task{ID: taskgraph.ID(i), Subject: "t", Status: taskgraph.Pending})
	}
	tasks = append(tasks, taskgraph.Task{ID: 21, Subject: "dependent", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{1, 2, 3}})
	require.NoError(t, s.Load(ctx, tasks))
	for i := 1; i <= 20; i++ {
		got, err := s.ClaimNext(ctx, "w") // one statement, which reads no blockers by blockersSQL
		require.NoError(t, err)
		require.EqualValues(t, i, got.ID)
		c, err := s.Complete(ctx, taskgraph.ID(i), "w")
		require.NoError(t, err)
		require.Equal(t, i == 3, len(c.Unblocked) == 1, "task %d", i)
	}
	for what, sql := range map[string]string{"dependents": pgstore.DependentsSQL, "blockers": pgstore.BlockersSQL, "completion": pgstore.CompleteSQL, "unblocked": pgstore.UnblockedSQL} {
		var generic, custom int64
		require.NoError(t, p.QueryRow(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, sql).Scan(&generic, &custom), what)
		assert.Zero(t, custom, "%s: planned anew %d times (and %d times by the kept plan)", what, custom, generic)
		assert.EqualValues(t, 20, generic, what)
	}
}

// A history written by hand as a JSON scalar (null) is no history to every
// read and to the Rulebook; the one-statement claim and completion leave
// such a row to the Rulebook's transaction, which writes the entries as an
// array, as for a task without a history.
func TestScalarHistoryRow(t *testing.T) {
	p := pool(t)
	g := graphName(t)
	s := open(t, p, g)
	setNull := func(id taskgraph.ID) {
		t.Helper()
		_, err := p.Exec(ctx, `UPDATE taskgraph_tasks SET history = 'null'::jsonb WHERE graph = $1 AND id = $2`, g, int64(id))
		require.NoError(t, err)
		got, err := s.Get(ctx, id)
		require.NoError(t, err)
		require.Nil(t, got.History)
	}
	for _, owner := range []string{"w", ""} {
		task, err := s.Create(ctx, taskgraph.NewTask{Subject: "hand-edited"})
		require.NoError(t, err)
		setNull(task.ID)
		claimed, err := s.ClaimNext(ctx, "w")
		require.NoError(t, err)
		require.Equal(t, task.ID, claimed.ID)
		require.Len(t, claimed.History, 1, "the claim's entry alone")
		setNull(task.ID)
		c, err := s.Complete(ctx, task.ID, owner)
		require.NoError(t, err, "owner %q", owner)
		require.Len(t, c.Task.History, 1, "owner %q: the completion's entry alone", owner)
		require.Equal(t, taskgraph.HistoryCompleted, c.Task.History[0].Event)
		got, err := s.Get(ctx, task.ID)
		require.NoError(t, err)
		require.Equal(t, got, c.Task)
	}
}

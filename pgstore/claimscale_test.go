package pgstore_test

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/claimbench"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// TestClaimNextReadsByStreams: under a reached limit, and WithUnder,
// ClaimNext's statements read about as many pages at 20,000 tasks as at
// 2,000 (the walk does not grow; an index's depth may), and take the task the Rulebook takes. They pick by streams of
// the pending tasks (by labels, by parent: pick.go), instead of walking
// the pending tasks in claim order past those the limit holds back
// (before: the pages read grew with them, 2,000 tasks held back at
// 20,000) or those not under the task (before: a recursive query of the
// descendants per task walked, seconds a claim at 100,000 tasks).
func TestClaimNextReadsByStreams(t *testing.T) {
	p := pool(t)
	plain, held, under := map[int]int{}, map[int]int{}, map[int]int{}
	for _, n := range []int{2_000, 20_000} {
		s := open(t, p, graphName(t))
		tasks := claimbench.Tasks(n)
		for i := range claimbench.Epics { // the epics last in claim order: a stream passes them by no other
			tasks[i].Priority = taskgraph.P4
		}
		require.NoError(t, s.Load(ctx, tasks))
		require.NoError(t, claimbench.Setup(ctx, s))
		graph := s.Graph()
		plain[n], _ = pagesRead(t, p, pgstore.ClaimReadySQL, graph, "w", int64(0), nil, int64(math.MaxInt64), taskgraph.MaxTaskSize, []string{}, "{}")
		require.NoError(t, s.SetLimit(ctx, claimbench.Label, 1))
		var first any
		held[n], first = pagesRead(t, p, pgstore.ClaimReadySQL, graph, "w", int64(0), nil, int64(math.MaxInt64), taskgraph.MaxTaskSize, []string{}, "{}")
		assert.Equal(t, int64(claimbench.Epics+1), first, "the first task without the label whose limit is reached")
		under[n], first = pagesRead(t, p, pgstore.NextUnderSQL, graph, []string{}, nil, []int64{}, []string{}, int64(claimbench.Epics))
		i := slices.IndexFunc(tasks, func(t taskgraph.Task) bool {
			return t.Parent == claimbench.Epics && t.Status == taskgraph.Pending && t.Priority == taskgraph.P1
		})
		assert.Equal(t, int64(tasks[i].ID), first, "the first child of the last epic in claim order")
		claimed, err := s.ClaimNext(ctx, "w", taskgraph.WithUnder(claimbench.Epics))
		require.NoError(t, err)
		assert.Equal(t, taskgraph.ID(claimbench.Epics), claimed.Parent)
		assert.NotContains(t, claimed.Labels, claimbench.Label, "held back by its limit")
	}
	t.Logf("pages read: plain %v, held back %v, under %v", plain, held, under)
	// Ten times the tasks may cost a probe of an index one page more: the
	// tree, shared by every graph in the table (other tests' too), may be
	// a level deeper by then, and WithUnder probes once per parent (86 →
	// 113 pages in one CI run, 116 → 115 in another). What must not grow
	// with the tasks is the walk: half as many pages again at most (the
	// walk before: 138 → 677 under a reached limit).
	assert.LessOrEqual(t, held[20_000], held[2_000]*3/2+20, "under a reached limit")
	assert.LessOrEqual(t, under[20_000], under[2_000]*3/2+20, "WithUnder")
}

// pagesRead runs sql with args in a transaction it rolls back, and
// returns the first column of its first row (nil if none); then again,
// explained, and returns the pages it read (from the cache or not).
func pagesRead(t *testing.T, p *pgxpool.Pool, sql string, args ...any) (int, any) {
	t.Helper()
	var first any
	tx, err := p.Begin(ctx)
	require.NoError(t, err)
	rows, err := tx.Query(ctx, sql, args...)
	require.NoError(t, err)
	if rows.Next() {
		values, err := rows.Values()
		require.NoError(t, err)
		first = values[0]
	}
	rows.Close()
	require.NoError(t, rows.Err())
	require.NoError(t, tx.Rollback(ctx))

	tx, err = p.Begin(ctx)
	require.NoError(t, err)
	var raw []byte
	require.NoError(t, tx.QueryRow(ctx, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+sql, args...).Scan(&raw))
	require.NoError(t, tx.Rollback(ctx))
	var out []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		}
	}
	require.NoError(t, json.Unmarshal(raw, &out))
	return out[0].Plan.Hit + out[0].Plan.Read, first
}

package pgstore_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// TestMigrateFromVersion3: a database at schema version 3 (before
// outcomes, priorities, labels and keys) is migrated by Open; its tasks
// read with the defaults, and the new rules hold on them.
func TestMigrateFromVersion3(t *testing.T) {
	p := pool(t)
	schema := fmt.Sprintf("tgmig%d", rand.Uint32())
	_, err := p.Exec(ctx, `CREATE SCHEMA `+schema)
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(ctx, `DROP SCHEMA `+schema+` CASCADE`) })
	old := poolWith(t, map[string]string{"search_path": schema})
	_, err = old.Exec(ctx, `CREATE TABLE taskgraph_schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`)
	require.NoError(t, err)
	files, err := filepath.Glob("migrations/00[123]_*.sql")
	require.NoError(t, err)
	require.Len(t, files, 3)
	for i, f := range files {
		sql, err := os.ReadFile(f)
		require.NoError(t, err)
		_, err = old.Exec(ctx, string(sql))
		require.NoError(t, err, f)
		_, err = old.Exec(ctx, `INSERT INTO taskgraph_schema_migrations (version) VALUES ($1)`, i+1)
		require.NoError(t, err)
	}
	_, err = old.Exec(ctx, `INSERT INTO taskgraph_graphs (name, high_water) VALUES ('g', 3);
		INSERT INTO taskgraph_tasks (graph, id, subject, status, owner, blocked_by, created_at, updated_at, rev) VALUES
		('g', 1, 'old one', 'completed', 'a', '{}', now(), now(), 3),
		('g', 2, 'old two', 'pending', '', '{1}', now(), now(), 1),
		('g', 3, 'old three', 'pending', '', '{}', now(), now(), 1)`)
	require.NoError(t, err)
	_, err = pgstore.Open(ctx, old, "g", pgstore.WithoutCreate())
	require.ErrorContains(t, err, "at version 3", "a store that may not migrate says so")

	s, err := pgstore.Open(ctx, old, "g")
	require.NoError(t, err, "Open migrates")
	all, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, all, 3)
	for _, task := range all {
		assert.Equal(t, taskgraph.DefaultPriority, task.Priority)
		assert.Empty(t, task.Labels)
		assert.Empty(t, task.Key)
	}
	p0 := taskgraph.P0
	urgent, err := s.Create(ctx, taskgraph.NewTask{Subject: "urgent", Priority: p0, Key: "urgent", Labels: []string{"x"}})
	require.NoError(t, err)
	assert.Equal(t, taskgraph.ID(4), urgent.ID)
	got, err := s.ClaimNext(ctx, "w")
	require.NoError(t, err)
	assert.Equal(t, urgent.ID, got.ID, "the new task, more urgent than the old ones")
	_, err = s.Fail(ctx, urgent.ID, "w", "failed status is allowed")
	require.NoError(t, err)
	var version int
	require.NoError(t, old.QueryRow(ctx, `SELECT max(version) FROM taskgraph_schema_migrations`).Scan(&version))
	assert.Equal(t, pgstore.SchemaVersion(), version, "every migration applied")
}

// TestClaimNextIndexed: the statement that picks ClaimNext's task is
// served by the index on (graph, priority, created_at, id) of the pending
// tasks, with
// and without labels: it reads the claim order off the index instead of
// sorting the graph's pending tasks.
func TestClaimNextIndexed(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	var tasks []taskgraph.Task
	for i := 1; i <= 5000; i++ {
		task := taskgraph.Task{ID: taskgraph.ID(i), Subject: "t", Status: taskgraph.Pending, Priority: taskgraph.PriorityLevel(i % 5)}
		if i%2 == 0 {
			task.Labels = []string{"frontend"}
		}
		if i%3 == 0 {
			task.Status = taskgraph.Completed
		}
		tasks = append(tasks, task)
	}
	require.NoError(t, s.Load(ctx, tasks)) // analyzes the table after a large load
	for _, labels := range [][]string{{}, {"frontend"}} {
		rows, err := p.Query(ctx, `EXPLAIN `+pgstore.ClaimReadySQL, graph, "owner", int64(0), nil, int64(1<<62), taskgraph.MaxTaskSize, labels, "{}")
		require.NoError(t, err)
		plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		text := strings.Join(plan, "\n")
		// The part of the plan that picks the task: the UPDATE's first
		// InitPlan, up to the UPDATE's own scan (the next node at its
		// depth).
		from := slices.IndexFunc(plan, func(l string) bool { return strings.HasPrefix(l, "  InitPlan") })
		require.True(t, from >= 0, "labels %v:\n%s", labels, text)
		to := from + 1 + slices.IndexFunc(plan[from+1:], func(l string) bool { return strings.HasPrefix(l, "  ->") || strings.HasPrefix(l, "  InitPlan") })
		require.Greater(t, to, from, "labels %v:\n%s", labels, text)
		// The walk, while no limit is reached: the claim index's scan
		// and the nodes above it, up to the Limit.
		scan := from + slices.IndexFunc(plan[from:to], func(l string) bool { return strings.Contains(l, "Index Scan using taskgraph_tasks_claim on") })
		require.GreaterOrEqual(t, scan, from, "labels %v:\n%s", labels, text)
		limit := scan
		for limit > from && !(strings.Contains(plan[limit], "->  Limit") && indent(plan[limit]) < indent(plan[scan])) {
			limit--
		}
		walk := strings.Join(subtree(plan, limit), "\n")
		assert.Contains(t, walk, "LockRows", "one statement locks the row it picks:\n%s", text)
		assert.NotContains(t, walk, "Sort", "the order comes off the index:\n%s", text)
		// When a limit is reached: the streams of the label sets, each in
		// claim order off its index.
		pick := strings.Join(plan[from:to], "\n")
		assert.Contains(t, pick, "Index Scan using taskgraph_tasks_claim_labels", "labels %v:\n%s", labels, text)
		assert.NotContains(t, pick, "Seq Scan", "labels %v:\n%s", labels, text)
		// The row picked is then updated by its key, not found by
		// joining the graph's every row.
		byKey := regexp.MustCompile(`Index Cond: \(\(graph = [^)]*\) AND \(id = (\$\d+|\(InitPlan \d+\)\.col1)\)\)`) // PostgreSQL 15, 17
		assert.Len(t, byKey.FindAllString(strings.Join(plan[to:], "\n"), -1), 1, "labels %v:\n%s", labels, text)
	}
	got, err := s.ClaimNext(ctx, "w", taskgraph.WithLabels("frontend"))
	require.NoError(t, err)
	assert.Equal(t, taskgraph.ID(10), got.ID, "P0, frontend, not completed: 10")
}

// TestClaimNextPlannedOnce: PostgreSQL plans ClaimNext's statement once
// per connection and reuses the plan (a generic plan), with and without
// labels. A label filter that is always there makes the generic plan
// look dearer than a custom one, and every call is then planned anew
// (about half a millisecond each, a third of a claim's cost).
func TestClaimNextPlannedOnce(t *testing.T) {
	p := poolConfigured(t, oneSession)
	s := open(t, p, graphName(t))
	var tasks []taskgraph.Task
	for i := 1; i <= 200; i++ {
		task := taskgraph.Task{ID: taskgraph.ID(i), Subject: "t", Status: taskgraph.Pending, Priority: taskgraph.PriorityLevel(i % 5)}
		if i%2 == 0 {
			task.Labels = []string{"frontend"}
		}
		tasks = append(tasks, task)
	}
	require.NoError(t, s.Load(ctx, tasks))
	for _, labels := range [][]string{nil, {"frontend"}} {
		for range 20 {
			_, err := s.ClaimNext(ctx, "w", taskgraph.WithLabels(labels...))
			require.NoError(t, err)
		}
	}
	rows, err := p.Query(ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1`, pgstore.ClaimReadySQL)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		var stmt string
		var generic, custom int64
		require.NoError(t, rows.Scan(&stmt, &generic, &custom))
		n++
		assert.Positive(t, generic, "ClaimNext's statement is re-planned at every call: %d custom plans, %d generic", custom, generic)
		assert.LessOrEqual(t, custom, int64(5), "PostgreSQL tries 5 custom plans before it settles on the generic one")
	}
	require.NoError(t, rows.Err())
	assert.NotZero(t, n, "ClaimNext's statement was prepared on this connection")
}

// TestDependentsByBlockedByIndex: a task's dependents are looked up by the
// index on blocked_by alone, in the plans PostgreSQL keeps for the
// statements (generic ones): not by ANDing it with a bitmap of the whole
// graph from the primary key, which reads an index entry per task of the
// graph at every Complete and ClaimNext (the plan the bench's database
// got, 20 graphs in 49,000 rows, before the graph was compared as "IS
// TRUE"), nor by reading the table.
func TestDependentsByBlockedByIndex(t *testing.T) {
	tx, graph := genericPlans(t)
	for name, sql := range map[string]string{
		"blocksOf":      `SELECT ` + pgstore.BlocksOf + ` FROM taskgraph_tasks t WHERE graph = $1 AND id = $2`,
		"dependentsSQL": pgstore.DependentsSQL,
		"unblockedSQL":  pgstore.UnblockedSQL,
	} {
		text := explainGeneric(t, tx, sql, graph)
		assert.Contains(t, text, "Bitmap Index Scan on taskgraph_tasks_blocked_by", "%s:\n%s", name, text)
		assert.NotContains(t, text, "BitmapAnd", "%s:\n%s", name, text)
		assert.NotContains(t, text, "Seq Scan", "%s:\n%s", name, text)
	}
}

// TestBlockersByPrimaryKey: the blockers a Claim or Complete reads with its
// task's lock (blockersSQL), and their own blockers (whether one was
// completed out of order), are looked up by the primary key, graph and
// id, in the plan PostgreSQL keeps: not by reading the graph's every
// entry and filtering the ids. The only filter is on a list of ids
// (unnest), never on a table.
func TestBlockersByPrimaryKey(t *testing.T) {
	tx, graph := genericPlans(t)
	text := explainGeneric(t, tx, pgstore.BlockersSQL, graph)
	assert.Contains(t, text, "Index Cond: ((graph = $1) AND (id = b.id))", text)
	assert.Contains(t, text, "Index Cond: ((graph = x_1.graph) AND (id = bb.id))", text)
	node := ""
	for l := range strings.Lines(text) {
		if strings.Contains(l, "->") {
			node = l
		}
		if strings.Contains(l, "Filter") { // unnest in FROM, or in a subquery's select list (allCompleted)
			assert.Regexp(t, `Function Scan on unnest|Subquery Scan on bb? `, node, "a filter on a table:\n%s", text)
		}
	}
	assert.NotContains(t, text, "Seq Scan", text)
}

// TestReadyByPrimaryKey: whether a task's blockers are completed is
// looked up by the primary key, one blocker at a time, in a form the
// planner cannot turn into a join. Written as NOT EXISTS, it was an
// anti-join, which with statistics taken before any task was completed
// (as on a graph just loaded) was planned as a scan of the table joined
// against each blocker; here, with fresh statistics, the anti-join shows,
// not the scan.
func TestReadyByPrimaryKey(t *testing.T) {
	tx, graph := genericPlans(t)
	text := explainGeneric(t, tx, `SELECT t.id FROM taskgraph_tasks t WHERE graph = $1 AND id = $2 AND `+pgstore.ReadyCondition, graph)
	assert.Contains(t, text, "Index Cond: ((graph = t.graph) AND (id = b.id))", text)
	// An anti-join is the plan the statistics can turn into a scan of
	// the table; a lookup per blocker cannot become one.
	assert.NotContains(t, text, "Anti Join", text)
	assert.NotContains(t, text, "Seq Scan", text)
	// The blockers one by one, up to the first not completed (allCompleted):
	// not a table of them all first.
	assert.Contains(t, text, "ProjectSet", text)
	assert.NotContains(t, text, "Function Scan on unnest", text)
}

// indent is the number of spaces that begin l, a line of a plan.
func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

// subtree is the node of plan at line i and the lines below it, up to
// the next line indented as much as it or less.
func subtree(plan []string, i int) []string {
	end := i + 1
	for end < len(plan) && indent(plan[end]) > indent(plan[i]) {
		end++
	}
	return plan[i:end]
}

// genericPlans loads five graphs of 1,000 tasks, as a table shared by
// several graphs holds, most of them completed, as in a graph at work, and
// returns a transaction that plans prepared statements generically (the
// plans PostgreSQL keeps), and one of the graphs.
func genericPlans(t *testing.T) (pgx.Tx, string) {
	p := pool(t)
	graph := graphName(t)
	for g := range 5 {
		name := graph
		if g > 0 {
			name = fmt.Sprintf("%s-other-%d", graph, g)
		}
		s := open(t, p, name)
		var tasks []taskgraph.Task
		for i := 1; i <= 1000; i++ {
			st := taskgraph.Completed
			if i%10 == 0 {
				st = taskgraph.Pending
			}
			tasks = append(tasks, taskgraph.Task{ID: taskgraph.ID(i), Subject: "t", Status: st})
		}
		require.NoError(t, s.Load(ctx, tasks))
	}
	_, err := p.Exec(ctx, `ANALYZE taskgraph_tasks`)
	require.NoError(t, err)
	conn, err := p.Acquire(ctx)
	require.NoError(t, err)
	t.Cleanup(conn.Release)
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	_, err = tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`)
	require.NoError(t, err)
	return tx, graph
}

// explainGeneric returns the plan of sql ($1 the graph, $2 a task id) as
// tx prepares it, for task 5 of graph.
func explainGeneric(t *testing.T, tx pgx.Tx, sql, graph string) string {
	t.Helper()
	_, err := tx.Exec(ctx, `PREPARE explained AS `+sql)
	require.NoError(t, err)
	defer func() {
		_, err := tx.Exec(ctx, `DEALLOCATE explained`)
		require.NoError(t, err)
	}()
	rows, err := tx.Query(ctx, `EXPLAIN EXECUTE explained ('`+strings.ReplaceAll(graph, `'`, `''`)+`', 5)`)
	require.NoError(t, err)
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(plan, "\n")
}

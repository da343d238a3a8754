package pgstore_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

var ctx = context.Background()

// TestMain re-executes the test binary as worker processes.
func TestMain(m *testing.M) {
	if role := os.Getenv("PGSTORE_TEST_ROLE"); role != "" {
		os.Exit(runRole(role, os.Getenv("PGSTORE_TEST_GRAPH")))
	}
	if os.Getenv("TASKGRAPH_POSTGRES_URL") == "" {
		sayLoudly(notRun)
	}
	os.Exit(m.Run())
}

// notRun is the one line that says the PostgreSQL tests did not run.
const notRun = "PGSTORE TESTS NOT RUN: set TASKGRAPH_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable); .ci/run sets it"

// sayLoudly writes line on stderr and, when there is one, on the terminal:
// go test ./... shows a passing package's stderr only with -v, so a person
// running it would otherwise never learn that these tests were skipped.
func sayLoudly(line string) {
	fmt.Fprintln(os.Stderr, line)
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		fmt.Fprintln(tty, line)
		tty.Close()
	}
}

// pool connects to $TASKGRAPH_POSTGRES_URL.
func pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	url := os.Getenv("TASKGRAPH_POSTGRES_URL")
	if url == "" {
		t.Skip("set TASKGRAPH_POSTGRES_URL (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL tests; .ci/run sets it")
	}
	p, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	require.NoError(t, p.Ping(ctx), "PostgreSQL at $TASKGRAPH_POSTGRES_URL is unreachable")
	t.Cleanup(p.Close)
	return p
}

// poolWith connects to $TASKGRAPH_POSTGRES_URL with runtime parameters of
// its own (search_path, application_name), closed when the test ends.
func poolWith(t *testing.T, params map[string]string) *pgxpool.Pool {
	t.Helper()
	return poolConfigured(t, func(cfg *pgxpool.Config) {
		for k, v := range params {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	})
}

// poolConfigured connects to $TASKGRAPH_POSTGRES_URL with the
// configuration configure makes of it, closed when the test ends.
func poolConfigured(t *testing.T, configure func(*pgxpool.Config)) *pgxpool.Pool {
	t.Helper()
	pool(t) // skips without a database
	cfg, err := pgxpool.ParseConfig(os.Getenv("TASKGRAPH_POSTGRES_URL"))
	require.NoError(t, err)
	configure(cfg)
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// oneSession is a configuration of a pool of one connection: a test
// reads that session's prepared statements, or prepares them once.
func oneSession(cfg *pgxpool.Config) { cfg.MaxConns = 1 }

var unsafe = regexp.MustCompile(`[^A-Za-z0-9_/-]+`)

// graphName gives every test its own graph, so runs never collide.
func graphName(t testing.TB) string {
	return fmt.Sprintf("%s-%d-%d", unsafe.ReplaceAllString(t.Name(), "_"), os.Getpid(), rand.Int64())
}

func open(t testing.TB, p *pgxpool.Pool, graph string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(ctx, p, graph)
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, graph) })
	return s
}

func TestConformance(t *testing.T) {
	p := pool(t)
	taskgraphtest.Run(t, func(t *testing.T) taskgraph.Store { return open(t, p, graphName(t)) })
}

// The store works on a pool set to pgx's other query modes: the simple
// protocol and unprepared statements, which a pool in front of a
// connection pooler may need (JSON goes as text: a []byte went as bytea,
// and every write failed with "invalid input syntax for type json").
func TestConformanceInOtherQueryModes(t *testing.T) {
	pool(t) // skips without a database
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeSimpleProtocol, pgx.QueryExecModeExec} {
		t.Run(mode.String(), func(t *testing.T) {
			p := poolConfigured(t, func(cfg *pgxpool.Config) { cfg.ConnConfig.DefaultQueryExecMode = mode })
			taskgraphtest.Run(t, func(t *testing.T) taskgraph.Store { return open(t, p, graphName(t)) })
		})
	}
}

func TestMigrateConcurrently(t *testing.T) {
	p := pool(t)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { assert.NoError(t, pgstore.Migrate(ctx, p)) })
	}
	wg.Wait()
}

func TestGraphsAreSeparate(t *testing.T) {
	p := pool(t)
	a, b := open(t, p, graphName(t)+"a"), open(t, p, graphName(t)+"b")
	_, err := a.Create(ctx, taskgraph.NewTask{Subject: "in a"})
	require.NoError(t, err)
	all, err := b.List(ctx)
	require.NoError(t, err)
	assert.Empty(t, all)
	n, err := b.Create(ctx, taskgraph.NewTask{Subject: "in b"})
	require.NoError(t, err)
	assert.Equal(t, taskgraph.ID(1), n.ID, "ids are per graph")
}

// A plan started in a directory moves to the database with ids and edges
// intact, and back.
func TestCopyBetweenStores(t *testing.T) {
	p := pool(t)
	fs, err := taskgraph.Open(t.TempDir())
	require.NoError(t, err)
	defer fs.Close()
	for i, subj := range []string{"schema", "api", "docs", "tests"} {
		var by []taskgraph.ID
		if i > 0 {
			by = []taskgraph.ID{taskgraph.ID(i)}
		}
		_, err := fs.Create(ctx, taskgraph.NewTask{Subject: subj, BlockedBy: by})
		require.NoError(t, err)
	}
	require.NoError(t, fs.Delete(ctx, 4))
	_, err = fs.Claim(ctx, 1, "alice")
	require.NoError(t, err)

	pg := open(t, p, graphName(t))
	require.NoError(t, taskgraph.Copy(ctx, pg, fs))
	want, err := fs.List(ctx)
	require.NoError(t, err)
	got, err := pg.List(ctx)
	require.NoError(t, err)
	require.Len(t, got, 3)
	for i := range want {
		assert.Equal(t, want[i].ID, got[i].ID)
		assert.Equal(t, want[i].BlockedBy, got[i].BlockedBy)
		assert.Equal(t, want[i].Blocks, got[i].Blocks)
		assert.Equal(t, want[i].Owner, got[i].Owner)
		assert.Equal(t, want[i].Status, got[i].Status)
	}
	back, err := taskgraph.Open(t.TempDir())
	require.NoError(t, err)
	defer back.Close()
	require.NoError(t, taskgraph.Copy(ctx, back, pg))
	again, err := back.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, len(want), len(again))
}

func TestWatch(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	other, err := pgstore.Open(ctx, p, graph) // another client of the database
	require.NoError(t, err)
	taskgraphtest.Watch(t, s, other)
}

func runRole(role, graph string) int {
	p, err := pgxpool.New(ctx, os.Getenv("TASKGRAPH_POSTGRES_URL"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer p.Close()
	s, err := pgstore.Open(ctx, p, graph)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	owner := fmt.Sprint("worker-", os.Getpid())
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var opts []taskgraph.ClaimOption
	if role == "leased" {
		opts = append(opts, taskgraph.WithLease(time.Second))
	}
	idle := 0
	for {
		t, err := s.ClaimNext(ctx, owner, opts...)
		if errors.Is(err, taskgraph.ErrNoReady) {
			b, err := s.Board(ctx)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if len(b.Ready)+len(b.Blocked)+len(b.InProgress) == 0 {
				return 0
			}
			idle++
			time.Sleep(time.Millisecond) // others still hold the blockers
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if role == "leased" {
			fmt.Fprintln(out, "claimed", t.ID) // the work takes a while
			out.Flush()
			time.Sleep(5 * time.Millisecond)
		}
		if _, err := s.Complete(ctx, t.ID, owner); err != nil {
			fmt.Fprintln(os.Stderr, "complete:", err)
			return 1
		}
		fmt.Fprintln(out, t.ID)
		out.Flush()
	}
}

// buildLayered creates n tasks in layers of width, each blocked by up to 3
// tasks of the layer before.
func buildLayered(t testing.TB, s *pgstore.Store, n, width int) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tasks []taskgraph.Task
	for i := 1; i <= n; i++ {
		task := taskgraph.Task{ID: taskgraph.ID(i), Subject: fmt.Sprint("task ", i), Status: taskgraph.Pending}
		if layer := (i - 1) / width; layer > 0 {
			lo := (layer-1)*width + 1
			for range 3 {
				b := taskgraph.ID(lo + rng.IntN(width))
				if !contains(task.BlockedBy, b) {
					task.BlockedBy = append(task.BlockedBy, b)
				}
			}
		}
		tasks = append(tasks, task)
	}
	require.NoError(t, s.Load(ctx, tasks))
}

func contains(s []taskgraph.ID, id taskgraph.ID) bool {
	for _, x := range s {
		if x == id {
			return true
		}
	}
	return false
}

// Eight worker processes, each with its own pool, run ClaimNext+Complete
// over 2,000 tasks in a layered DAG: every task is completed exactly once,
// and never claimed before all its blockers were completed.
func TestMultiProcessWorkers(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	const n = 2000
	buildLayered(t, s, n, 50)
	counts := map[taskgraph.ID]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "PGSTORE_TEST_ROLE=work", "PGSTORE_TEST_GRAPH="+graph)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				id, _ := strconv.ParseInt(sc.Text(), 10, 64)
				mu.Lock()
				counts[taskgraph.ID(id)]++
				mu.Unlock()
			}
			assert.NoError(t, cmd.Wait())
		})
	}
	wg.Wait()
	require.Len(t, counts, n)
	for id, c := range counts {
		assert.Equal(t, 1, c, "task %d completed %d times", id, c)
	}
	all, err := s.List(ctx)
	require.NoError(t, err)
	byID := map[taskgraph.ID]taskgraph.Task{}
	for _, task := range all {
		byID[task.ID] = task
	}
	for _, task := range all {
		require.Equal(t, taskgraph.Completed, task.Status)
		for _, b := range task.BlockedBy {
			// Completion is a blocker's last write: its UpdatedAt.
			assert.True(t, byID[b].UpdatedAt.Before(task.ClaimedAt), "task %d claimed at %v before blocker %d completed at %v", task.ID, task.ClaimedAt, b, byID[b].UpdatedAt)
		}
	}
}

// A worker killed with SIGKILL mid-run loses nothing committed, and leaves
// no task stuck but those its lease holds, which lapse by database time.
func TestKilledWorker(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	buildLayered(t, s, 300, 30)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PGSTORE_TEST_ROLE=leased", "PGSTORE_TEST_GRAPH="+graph)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(out)
	var acked []taskgraph.ID
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "claimed "); ok {
			if len(acked) >= 40 {
				// Kill it while it holds this task.
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
				t.Logf("killed while holding task %s", rest)
				break
			}
			continue
		}
		id, _ := strconv.ParseInt(sc.Text(), 10, 64)
		acked = append(acked, taskgraph.ID(id))
	}
	_ = cmd.Wait()

	all, err := s.List(ctx)
	require.NoError(t, err)
	status := map[taskgraph.ID]taskgraph.Task{}
	for _, task := range all {
		status[task.ID] = task
	}
	for _, id := range acked {
		assert.Equal(t, taskgraph.Completed, status[id].Status, "acknowledged completion of %d", id)
	}
	var stuck []taskgraph.ID
	for _, task := range all {
		if task.Status == taskgraph.InProgress {
			require.False(t, task.LeaseExpiresAt.IsZero(), "task %d held with no lease", task.ID)
			stuck = append(stuck, task.ID)
		}
	}
	// Whatever the dead worker held comes back once its lease lapses.
	for _, id := range stuck {
		deadline := time.Now().Add(10 * time.Second)
		for {
			got, err := s.Claim(ctx, id, "rescuer")
			if err == nil {
				assert.Equal(t, "rescuer", got.Owner)
				assert.True(t, strings.HasPrefix(got.PrevOwner, "worker-"))
				break
			}
			require.ErrorIs(t, err, taskgraph.ErrClaimed)
			require.True(t, time.Now().Before(deadline), "the lease of %d never lapsed", id)
			time.Sleep(50 * time.Millisecond)
		}
	}
	require.NotEmpty(t, stuck, "the worker died holding a task")
	t.Logf("killed after %d acknowledged completions; %d task(s) held by the dead worker were reclaimed", len(acked), len(stuck))
}

// The count of backward edges that lets edge edits skip the cycle search
// stays equal to a recount through every kind of edge edit.
func TestBackwardEdgeCount(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	check := func(step string) { t.Helper(); checkBackward(t, p, graph, step) }
	for range 5 {
		_, err := s.Create(ctx, taskgraph.NewTask{Subject: "t"})
		require.NoError(t, err)
	}
	_, err := s.Create(ctx, taskgraph.NewTask{Subject: "blocks 1 and 2", Blocks: []taskgraph.ID{1, 2}, BlockedBy: []taskgraph.ID{3}})
	require.NoError(t, err)
	check("create with blocks")
	_, err = s.Update(ctx, 1, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{5}, RemoveBlockedBy: []taskgraph.ID{6}})
	require.NoError(t, err)
	check("update edges")
	_, err = s.Update(ctx, 5, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{1}})
	require.ErrorIs(t, err, taskgraph.ErrCycle)
	check("refused cycle")
	_, err = s.Update(ctx, 4, taskgraph.Patch{AddBlocks: []taskgraph.ID{2}, RemoveBlocks: []taskgraph.ID{9}})
	require.NoError(t, err)
	check("add blocks")
	require.NoError(t, s.Delete(ctx, 6, taskgraph.Detach()))
	check("delete detach")
	require.NoError(t, s.Load(ctx, []taskgraph.Task{{ID: 10, Subject: "x", Status: taskgraph.Pending}, {ID: 11, Subject: "y", Status: taskgraph.Pending}, {ID: 12, Subject: "z", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{11}}}))
	_, err = s.Update(ctx, 10, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{12}})
	require.NoError(t, err)
	check("load and a backward edge")
}

// checkBackward requires the stored count of backward edges of graph to
// equal a recount.
func checkBackward(t *testing.T, p *pgxpool.Pool, graph, step string) int64 {
	t.Helper()
	var stored, actual int64
	require.NoError(t, p.QueryRow(ctx, `SELECT backward_edges FROM taskgraph_graphs WHERE name = $1`, graph).Scan(&stored))
	require.NoError(t, p.QueryRow(ctx, `SELECT count(*) FROM taskgraph_tasks t, unnest(t.blocked_by) AS b(id) WHERE t.graph = $1 AND b.id > t.id`, graph).Scan(&actual))
	require.Equal(t, actual, stored, step)
	return stored
}

// Load counts the backward edges of the tasks as stored, with BlockedBy
// de-duplicated: a blocker named twice is one edge, and once it is removed
// the graph is back on the no-cycle fast path.
func TestLoadCountsDeduplicatedEdges(t *testing.T) {
	p := pool(t)
	graph := graphName(t)
	s := open(t, p, graph)
	require.NoError(t, s.Load(ctx, []taskgraph.Task{
		{ID: 1, Subject: "a", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{2, 2, 2}},
		{ID: 2, Subject: "b", Status: taskgraph.Pending},
	}))
	got, err := s.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, []taskgraph.ID{2}, got.BlockedBy)
	require.Equal(t, int64(1), checkBackward(t, p, graph, "after the load"))
	_, err = s.Update(ctx, 1, taskgraph.Patch{RemoveBlockedBy: []taskgraph.ID{2}})
	require.NoError(t, err)
	require.Equal(t, int64(0), checkBackward(t, p, graph, "after removing the edge"))
}

// A blocker 0 in a load is refused with exactly the file store's error.
func TestLoadBlockerZeroAsFileStore(t *testing.T) {
	p := pool(t)
	tasks := func() []taskgraph.Task {
		return []taskgraph.Task{{ID: 1, Subject: "a", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{0}}}
	}
	fs, err := taskgraph.Open(t.TempDir())
	require.NoError(t, err)
	defer fs.Close()
	want := fs.Load(ctx, tasks())
	require.ErrorIs(t, want, taskgraph.ErrInvalid)
	got := open(t, p, graphName(t)).Load(ctx, tasks())
	require.ErrorIs(t, got, taskgraph.ErrInvalid)
	var wantInv, gotInv *taskgraph.InvalidError
	require.ErrorAs(t, want, &wantInv)
	require.ErrorAs(t, got, &gotInv)
	require.Equal(t, *wantInv, *gotInv)
	require.Equal(t, want.Error(), got.Error())
}

// go test ./... run by a person in a terminal says, in one line naming
// TASKGRAPH_POSTGRES_URL, that the PostgreSQL tests did not run: the line
// reaches the terminal although go test hides a passing package's output.
func TestSkipIsSaidLoudly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs util-linux script(1) for a terminal")
	}
	script, err := exec.LookPath("script")
	require.NoError(t, err, "script(1) (util-linux) gives go test a terminal")
	cmd := exec.Command(script, "-qec", "go test -count=1 -run '^$' .", "/dev/null")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TASKGRAPH_POSTGRES_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), notRun)
	assert.Equal(t, 1, strings.Count(string(out), "TASKGRAPH_POSTGRES_URL"), "one line: %s", out)
}

// WithLogger: the store says through it that Open created the graph, and
// only then.
func TestWithLogger(t *testing.T) {
	p := pool(t)
	var buf strings.Builder
	log := slog.New(slog.NewTextHandler(&buf, nil))
	graph := graphName(t)
	s, err := pgstore.Open(ctx, p, graph, pgstore.WithLogger(log))
	require.NoError(t, err)
	t.Cleanup(func() { p.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, graph) })
	require.NoError(t, s.Close())
	assert.Contains(t, buf.String(), `level=INFO msg="pgstore: created the graph" graph=`+graph+"\n")
	buf.Reset()
	s, err = pgstore.Open(ctx, p, graph, pgstore.WithLogger(log))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.Empty(t, buf.String(), "a graph that exists is not created")
}

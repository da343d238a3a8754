// The bench's pgstore rows: the same operations and the worker
// throughput on PostgreSQL, the throughput alternated with an older
// commit's pgstore in the same run.

package main

import (
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// benchPostgres measures pgstore beside the file store: the same operations
// on a layered DAG, ClaimNext under limits and WithUnder against a plain
// ClaimNext at the largest size (pgClaimsAtScale), and ClaimNext+Complete
// throughput with worker processes. Graphs are named per run and dropped at the end.
//
// The throughput is measured by worker processes of a small helper program
// (pgHelper), built twice: against this code, on the database at url, and,
// if oldURL is set, against the pgstore of the commit baseline (its tree
// taken with git archive: it has its own module path and schema), on the
// database at oldURL. In each round, for each worker count, the two run
// one after the other, the first of the pair alternating from round to
// round (new, old; then old, new; ...), each draining a graph it has just
// loaded, with a floor measured between phases as for every group.
func benchPostgres(url, oldURL, baseline, root string, ns []int, samples, rounds, throughputTasks int, workers []int, floor func() float64) []Result {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	run := fmt.Sprintf("bench-%d-%d", os.Getpid(), time.Now().Unix())
	defer pool.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name LIKE $1`, run+"%")
	var out []Result
	for _, n := range ns {
		s, err := pgstore.Open(ctx, pool, fmt.Sprintf("%s-dag-%d", run, n))
		if err != nil {
			log.Fatal(err)
		}
		if err := s.Load(ctx, dagTasks(n)); err != nil {
			log.Fatal(err)
		}
		for _, r := range measureStore(s, "dag", n, samples, rounds, floor) {
			r.Shape = "pg-dag"
			out = append(out, r)
		}
	}
	// ClaimNext under limits and WithUnder at the largest size, against a
	// plain ClaimNext (issue 39, item 3).
	n := ns[len(ns)-1]
	out = append(out, pgClaimsAtScale(pool, fmt.Sprintf("%s-claims-%d", run, n), n, rounds, floor)...)

	type phase struct {
		name, url, helper string
	}
	phases := []phase{{"new", url, buildPgHelper(root, "new", "")}}
	pools := []*pgxpool.Pool{pool}
	if oldURL != "" {
		phases = append(phases, phase{"old", oldURL, buildPgHelper(root, "old", baseline)})
		oldPool, err := pgxpool.New(ctx, oldURL)
		if err != nil {
			log.Fatal(err)
		}
		defer oldPool.Close()
		defer oldPool.Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name LIKE $1`, run+"%")
		pools = append(pools, oldPool)
	}
	// Groups for interleave: worker count × phase.
	var groups []int
	for _, p := range workers {
		for i := range phases {
			groups = append(groups, p*len(phases)+i)
		}
	}
	opsPerSec := map[int][]float64{} // by group, by round
	interleave(floor, rounds, groups, func(round, g int) {
		p, i := g/len(phases), g%len(phases)
		if round%2 == 1 { // alternate which phase of the pair runs first
			i = len(phases) - 1 - i
		}
		ph := phases[i]
		graph := fmt.Sprintf("%s-ready-%d-%d-%s", run, p, round, ph.name)
		// A checkpoint before the load, so that none falls in the measured
		// phase (timed ones come every 5 minutes): the first write of a
		// page after a checkpoint logs the whole page, and would fall on
		// whichever phase one happened to precede. The load has written
		// every page the phase writes since, as steady work has.
		if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
			log.Printf("pgstore rows: CHECKPOINT (measuring without): %v", err)
		}
		helper(ph.helper, "load", ph.url, graph, fmt.Sprint(throughputTasks))
		opsPerSec[p*len(phases)+i] = append(opsPerSec[p*len(phases)+i], throughput(p, throughputTasks, ph.helper, "work", ph.url, graph).opsPerSec)
		// Each phase starts on a table that holds no one else's rows, live
		// or dead, as autovacuum keeps it (a server may run without it;
		// this one does): left there, the rounds before weigh on the
		// rounds after, and on the two codes' tables unequally.
		if _, err := pools[i].Exec(ctx, `DELETE FROM taskgraph_graphs WHERE name = $1`, graph); err != nil {
			log.Fatal(err)
		}
		if _, err := pools[i].Exec(ctx, `VACUUM taskgraph_tasks`); err != nil {
			log.Printf("pgstore rows: VACUUM (measuring without): %v", err)
		}
	})
	for i, ph := range phases {
		single := opsPerSec[workers[0]*len(phases)+i]
		for _, p := range workers {
			ops := opsPerSec[p*len(phases)+i]
			m := medianOf(ops)
			note := fmt.Sprintf("%.0f ops/s (rounds %s)", m, fmtRange(ops))
			if p != workers[0] {
				note += fmt.Sprintf("; %s× %d worker (rounds %s)", fmtF(medianOf(divide(ops, single))), workers[0], fmtRange(divide(ops, single)))
			}
			if ph.name == "new" && len(phases) > 1 {
				old := divide(ops, opsPerSec[p*len(phases)+1])
				note += fmt.Sprintf("; %s× %s (rounds %s)", fmtF(medianOf(old)), baseline, fmtRange(old))
			}
			shape := "pg-ready"
			if ph.name == "old" {
				shape = "pg-" + baseline
			}
			out = append(out, Result{Shape: shape, N: throughputTasks, Op: fmt.Sprintf("throughput %d procs", p),
				Median: 1e6 / m, P90: 1e6 / m, Note: note})
		}
	}
	return out
}

// divide returns a[i]/b[i], round by round.
func divide(a, b []float64) []float64 {
	out := make([]float64, min(len(a), len(b)))
	for i := range out {
		out[i] = a[i] / b[i]
	}
	return out
}

// pgHelper is the program whose processes load and drain the throughput
// graphs, the same source built against either module ({{module}}):
//
//	helper load URL GRAPH N   Open (migrating the schema) and Load N ready tasks
//	helper work URL GRAPH     ClaimNext+Complete until none is ready; print a workReport
const pgHelper = `package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"{{module}}"
	"{{module}}/pgstore"
)

func main() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Args[2])
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	s, err := pgstore.Open(ctx, pool, os.Args[3])
	if err != nil {
		log.Fatal(err)
	}
	switch os.Args[1] {
	case "load":
		n, _ := strconv.Atoi(os.Args[4])
		tasks := make([]taskgraph.Task, n)
		for i := range tasks {
			tasks[i] = taskgraph.Task{ID: taskgraph.ID(i + 1), Subject: fmt.Sprint("ready task ", i), Status: taskgraph.Pending}
		}
		if err := s.Load(ctx, tasks); err != nil {
			log.Fatal(err)
		}
	case "work":
		owner := fmt.Sprint("worker-", os.Getpid())
		var lat []int64
		for {
			start := time.Now()
			t, err := s.ClaimNext(ctx, owner)
			if errors.Is(err, taskgraph.ErrNoReady) {
				break
			}
			if err != nil {
				log.Fatal(err)
			}
			lat = append(lat, time.Since(start).Nanoseconds())
			start = time.Now()
			if _, err := s.Complete(ctx, t.ID, owner); err != nil {
				log.Fatal(err)
			}
			lat = append(lat, time.Since(start).Nanoseconds())
		}
		json.NewEncoder(os.Stdout).Encode(map[string]any{"latencies_ns": lat})
	}
}
`

// buildPgHelper builds pgHelper into root/pghelper-name: with commit "",
// against this module, added to it by an overlay (nothing is written to
// the source tree); else against the tree of commit, extracted from this
// repository with git archive into root.
func buildPgHelper(root, name, commit string) string {
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(gomod)), "go.mod") {
		log.Fatalf("pgstore rows: run the bench inside taskgraph's module (go env GOMOD: %s %v)", gomod, err)
	}
	modDir := filepath.Dir(strings.TrimSpace(string(gomod)))
	bin := filepath.Join(root, "pghelper-"+name)
	if commit != "" {
		src := filepath.Join(root, "src-"+commit)
		if err := os.MkdirAll(src, 0o755); err != nil {
			log.Fatal(err)
		}
		sh := fmt.Sprintf("git -C %q archive %q | tar -x -C %q", modDir, commit, src)
		if out, err := exec.Command("sh", "-c", sh).CombinedOutput(); err != nil {
			log.Fatalf("extracting %s: %v: %s", commit, err, out)
		}
		modDir = src
	}
	modPath, err := exec.Command("go", "-C", modDir, "list", "-m").Output()
	if err != nil {
		log.Fatalf("module of %s: %v", modDir, err)
	}
	main := filepath.Join(root, "pghelper-"+name+".go")
	source := strings.ReplaceAll(pgHelper, "{{module}}", strings.TrimSpace(string(modPath)))
	if err := os.WriteFile(main, []byte(source), 0o644); err != nil {
		log.Fatal(err)
	}
	overlay := filepath.Join(root, "pghelper-"+name+".json")
	o := fmt.Sprintf(`{"Replace":{%q:%q}}`, filepath.Join(modDir, "internal", "pgbenchhelper", "main.go"), main)
	if err := os.WriteFile(overlay, []byte(o), 0o644); err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-overlay", overlay, "-o", bin, "./internal/pgbenchhelper")
	cmd.Dir = modDir
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("building the pgstore helper (%s): %v: %s", name, err, out)
	}
	return bin
}

// helper runs a pgstore helper to its end.
func helper(bin string, args ...string) {
	cmd := exec.Command(bin, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("%s %s: %v: %s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
}

// dagTasks is the layered DAG of build, as tasks to Load.
func dagTasks(n int) []taskgraph.Task {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	const width = 100
	tasks := make([]taskgraph.Task, 0, n)
	for i := 1; i <= n; i++ {
		t := taskgraph.Task{ID: taskgraph.ID(i), Subject: fmt.Sprintf("dag task %d", i), Description: "benchmark task", Status: taskgraph.Pending}
		if layer := (i - 1) / width; layer > 0 {
			lo := (layer-1)*width + 1
			for range 3 {
				t.BlockedBy = append(t.BlockedBy, taskgraph.ID(lo+rng.IntN(width)))
			}
		}
		tasks = append(tasks, t)
	}
	return tasks
}

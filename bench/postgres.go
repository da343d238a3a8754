// The bench's pgstore rows: the same operations and the worker
// throughput on PostgreSQL.

package main

import (
	"encoding/json"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// benchPostgres measures pgstore beside the file store: the same operations
// on a layered DAG, and ClaimNext+Complete throughput with worker processes.
// Graphs are named per run and dropped at the end.
func benchPostgres(url string, ns []int, samples, throughputTasks int, workers []string) []Result {
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
		for _, r := range measureStore(s, "dag", n, samples) {
			r.Shape = "pg-dag"
			out = append(out, r)
		}
	}
	var single float64
	for _, f := range workers {
		p, err := strconv.Atoi(f)
		if err != nil {
			log.Fatal(err)
		}
		graph := fmt.Sprintf("%s-ready-%d", run, p)
		s, err := pgstore.Open(ctx, pool, graph)
		if err != nil {
			log.Fatal(err)
		}
		tasks := make([]taskgraph.Task, throughputTasks)
		for i := range tasks {
			tasks[i] = taskgraph.Task{ID: taskgraph.ID(i + 1), Subject: fmt.Sprint("ready task ", i), Status: taskgraph.Pending}
		}
		if err := s.Load(ctx, tasks); err != nil {
			log.Fatal(err)
		}
		opsPerSec := throughput(p, throughputTasks, "-pg", url, "-pgwork", graph).opsPerSec
		if p == 1 {
			single = opsPerSec
		}
		note := fmt.Sprintf("%.0f ops/s", opsPerSec)
		if single > 0 {
			note += fmt.Sprintf(" = %.1f× one worker", opsPerSec/single)
		}
		out = append(out, Result{Shape: "pg-ready", N: throughputTasks, Op: fmt.Sprintf("throughput %d procs", p), Median: 1e6 / opsPerSec, P90: 1e6 / opsPerSec, Note: note})
	}
	return out
}

func pgWorker(url, graph string) {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	s, err := pgstore.Open(ctx, pool, graph)
	if err != nil {
		log.Fatal(err)
	}
	r := workReport{}
	for _, d := range drain(s) {
		r.LatenciesNS = append(r.LatenciesNS, d.Nanoseconds())
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		log.Fatal(err)
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

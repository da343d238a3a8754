// The hub's rows (issue 41, item 7): what a hub over loopback adds to
// each operation of a FileStore, the throughput of agent processes
// through a hub against that of agent processes opening the directory,
// and what a Watch subscriber of the API costs per change.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
	"github.com/taskgraph-dev/taskgraph/internal/cputime"
)

// hubOverhead is the target of item 7: an operation through the hub
// costs at most the store's own plus this.
const hubOverhead = 500 * time.Microsecond

// hubThroughputShare is the other target: processes through a hub reach
// at least this share of the throughput of processes on the directory.
const hubThroughputShare = 0.8

// startHub serves s as a hub on a loopback port of this process, with no
// rate bound (the bench measures the hub, not its throttle), and returns
// its URL, an admin's token (which may act as any owner) and a stop.
func startHub(s hub.Store) (string, string, func()) {
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "bench", hub.Admin)
	if err != nil {
		log.Fatal(err)
	}
	api := hub.NewServer(s, tokens, hub.WithRate(0, 0))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return "http://" + ln.Addr().String(), tok, func() {
		api.Close()
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}
}

// benchHub returns the hub's rows: operations on a dag of n tasks, and
// the throughput of p processes on tasks ready tasks, each measured
// directly and through a hub alternately, rounds times, between floors.
func benchHub(root string, n, samples, rounds, tasks, p int, floor func() float64) []Result {
	var out []Result
	out = append(out, hubOps(root, n, samples, rounds, floor)...)
	out = append(out, hubThroughput(root, tasks, p, rounds, floor)...)
	for _, wn := range []int{n / 10, n} {
		out = append(out, hubWatch(root, wn, samples)...)
	}
	return out
}

// openBehindHub opens the FileStore of dir, starts a hub in front of it
// and returns both the store and a client of the hub, with what closes
// all three.
func openBehindHub(dir string) (*taskgraph.FileStore, *hub.Client, func()) {
	s, err := taskgraph.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	url, tok, stop := startHub(s)
	c, err := hub.NewClient(url, tok)
	if err != nil {
		log.Fatal(err)
	}
	return s, c, func() {
		c.Close()
		stop()
		s.Close()
	}
}

// hubOps times Get, Claim, ClaimNext, Complete and Update on one
// FileStore of n tasks, directly and through a client of a hub in front
// of it, one after the other in every round (the order swapped each
// round): the difference of their medians, round by round, is what the
// hub adds.
func hubOps(root string, n, samples, rounds int, floor func() float64) []Result {
	dir := filepath.Join(root, fmt.Sprintf("hub-dag-%d", n))
	build(dir, "dag", n)
	s, c, closeAll := openBehindHub(dir)
	defer closeAll()
	if _, err := c.Board(ctx); err != nil { // warm both
		log.Fatal(err)
	}
	ops := []string{"Get", "Claim", "ClaimNext", "Complete", "Update (add edge)"}
	rng := rand.New(rand.NewPCG(uint64(n), 13))
	per := max(samples/rounds, 3)
	// times[via][op] of this round; medians[via][op], by round
	medians := [2]map[string][]float64{{}, {}}
	all := [2]map[string][]time.Duration{{}, {}}
	stores := [2]taskgraph.Store{s, c}
	run := func(via int) {
		st := stores[via]
		times := map[string][]time.Duration{}
		timed := func(op string, f func() error) {
			start := time.Now()
			if err := f(); err != nil {
				log.Fatalf("hub bench: %s: %v", op, err)
			}
			times[op] = append(times[op], time.Since(start))
		}
		for range per * 10 {
			id := taskgraph.ID(1 + rng.IntN(n))
			timed("Get", func() error { _, err := st.Get(ctx, id); return err })
		}
		for range per {
			var task taskgraph.Task
			timed("ClaimNext", func() (err error) { task, err = st.ClaimNext(ctx, "bench"); return err })
			if _, err := st.Release(ctx, task.ID, "bench"); err != nil {
				log.Fatal(err)
			}
			timed("Claim", func() error { _, err := st.Claim(ctx, task.ID, "bench"); return err })
			timed("Complete", func() error { _, err := st.Complete(ctx, task.ID, "bench"); return err })
			a := taskgraph.ID(2 + rng.IntN(n-1))
			b := taskgraph.ID(1 + rng.IntN(int(a)-1))
			timed("Update (add edge)", func() error {
				_, err := st.Update(ctx, a, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{b}})
				return err
			})
		}
		for _, op := range ops {
			medians[via][op] = append(medians[via][op], median(times[op]))
			all[via][op] = append(all[via][op], times[op]...)
		}
	}
	floors := interleave(floor, rounds, []int{0}, func(round, _ int) {
		first := round % 2 // direct first in even rounds, the hub first in odd ones
		run(first)
		run(1 - first)
	})
	var out []Result
	for _, op := range ops {
		var extra, ratios []float64
		for round := range rounds {
			extra = append(extra, medians[1][op][round]-medians[0][op][round])
			ratios = append(ratios, medians[1][op][round]/floors[0][round])
		}
		verdict := "met"
		if medianOf(extra) > float64(hubOverhead.Microseconds()) {
			verdict = "NOT met"
		}
		out = append(out, Result{Shape: "dag", N: n, Op: "hub: " + op, Median: median(all[1][op]), P90: pct(all[1][op], 90),
			Samples: len(all[1][op]), Ratio: medianOf(ratios), RoundRatios: ratios,
			Note: fmt.Sprintf("direct %.0f µs; the hub adds %.0f µs (rounds %s; target ≤ +%d µs: %s)",
				median(all[0][op]), medianOf(extra), fmtUS(extra), hubOverhead.Microseconds(), verdict)})
	}
	return out
}

// fmtUS formats microsecond figures as a range, "a–b".
func fmtUS(xs []float64) string {
	if len(xs) == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f–%.0f", slices.Min(xs), slices.Max(xs))
}

// hubThroughput runs p processes doing ClaimNext+Complete until none is
// ready: on a directory of their own each (-work), and through a hub in
// front of the directory (-work-hub), alternately, rounds times.
func hubThroughput(root string, tasks, p, rounds int, floor func() float64) []Result {
	dir := func(via, round int) string {
		return filepath.Join(root, fmt.Sprintf("hub-throughput-%d-%d", via, round))
	}
	for round := range rounds {
		for via := range 2 {
			buildReady(dir(via, round), tasks)
		}
	}
	tps := [2][]float64{}
	perFloor := [2][]float64{}
	// CPU a write, by round: of the workers (the clients, through the
	// hub), and of this process, which runs the hub
	workCPU, hubCPU := [2][]float64{}, []float64{}
	interleave(floor, rounds, []int{0, 1}, func(round, via int) {
		var tp throughputResult
		if via == 0 {
			tp = throughput(p, tasks, os.Args[0], "-work", dir(via, round))
		} else {
			s, err := taskgraph.Open(dir(via, round))
			if err != nil {
				log.Fatal(err)
			}
			url, tok, stop := startHub(s)
			os.Setenv("TASKGRAPH_TOKEN", tok) // the workers' token
			stopProfile := profile(fmt.Sprintf("hub-%d", round))
			before := cputime.Now()
			tp = throughput(p, tasks, os.Args[0], "-work-hub", url)
			hubCPU = append(hubCPU, float64((cputime.Now()-before)/time.Microsecond)/float64(2*tasks))
			stopProfile()
			stop()
			s.Close()
		}
		tps[via] = append(tps[via], tp.opsPerSec)
		workCPU[via] = append(workCPU[via], float64(tp.cpuPerOp.Microseconds()))
		after := floor()
		perFloor[via] = append(perFloor[via], tp.opsPerSec*after/1e6)
	})
	var shares []float64
	for round := range rounds {
		shares = append(shares, tps[1][round]/tps[0][round])
	}
	verdict := "met"
	if medianOf(shares) < hubThroughputShare {
		verdict = "NOT met"
	}
	d, h := medianOf(tps[0]), medianOf(tps[1])
	return []Result{
		{Shape: "ready", N: tasks, Op: fmt.Sprintf("throughput %d procs, direct", p), Median: 1e6 / d, P90: 1e6 / slices.Min(tps[0]),
			Note: fmt.Sprintf("%.0f ops/s (rounds %s), ClaimNext+Complete, each process opening the directory; CPU a write: %.0f µs", d, fmtUS(tps[0]), medianOf(workCPU[0]))},
		{Shape: "ready", N: tasks, Op: fmt.Sprintf("throughput %d procs, hub", p), Median: 1e6 / h, P90: 1e6 / slices.Min(tps[1]),
			Note: fmt.Sprintf("%.0f ops/s (rounds %s) = %s× direct (rounds %s; target ≥ %.1f×: %s); CPU a write: %.0f µs in the hub, %.0f µs in the clients",
				h, fmtUS(tps[1]), fmtF(medianOf(shares)), fmtRange(shares), hubThroughputShare, verdict, medianOf(hubCPU), medianOf(workCPU[1]))},
	}
}

// workHub is a -work-hub process: ClaimNext+Complete through the hub at
// url, with $TASKGRAPH_TOKEN, until none is ready.
func workHub(url string) {
	defer profile(fmt.Sprintf("work-hub-%d", os.Getpid()))()
	c, err := hub.NewClient(url, os.Getenv("TASKGRAPH_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	lat := drain(c)
	r := workReport{Writes: int64(len(lat))}
	for _, d := range lat {
		r.LatenciesNS = append(r.LatenciesNS, d.Nanoseconds())
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		log.Fatal(err)
	}
}

// hubWatch times, on a graph of n ready tasks, how long after a write
// its event reaches a Watch of the store itself and a Watch of a client
// of a hub in front of it: a subscriber that costs O(change) per change
// takes as long at 10× the tasks.
func hubWatch(root string, n, samples int) []Result {
	dir := filepath.Join(root, fmt.Sprintf("hub-watch-%d", n))
	buildReady(dir, n)
	s, c, closeAll := openBehindHub(dir)
	defer closeAll()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	direct, err := s.Watch(wctx)
	if err != nil {
		log.Fatal(err)
	}
	viaHub, err := c.Watch(wctx)
	if err != nil {
		log.Fatal(err)
	}
	await := func(events <-chan taskgraph.Event, id taskgraph.ID, start time.Time) time.Duration {
		timeout := time.After(10 * time.Second)
		for {
			select {
			case e := <-events:
				if e.Kind == taskgraph.Updated && e.Task.ID == id {
					return time.Since(start)
				}
			case <-timeout:
				log.Fatalf("hub bench: no event of task %d within 10 s", id)
			}
		}
	}
	rng := rand.New(rand.NewPCG(uint64(n), 17))
	var dl, hl []time.Duration
	for i := range samples * 3 {
		id := taskgraph.ID(1 + rng.IntN(n))
		desc := fmt.Sprint("edit ", i)
		start := time.Now()
		if _, err := s.Update(ctx, id, taskgraph.Patch{Description: &desc}); err != nil {
			log.Fatal(err)
		}
		dl = append(dl, await(direct, id, start))
		hl = append(hl, await(viaHub, id, start))
	}
	return []Result{
		{Shape: "ready", N: n, Op: "watch: write → event", Median: median(dl), P90: pct(dl, 90), Samples: len(dl),
			Note: "the store's own Watch; the time includes the write"},
		{Shape: "ready", N: n, Op: "hub watch: write → event", Median: median(hl), P90: pct(hl, 90), Samples: len(hl),
			Note: fmt.Sprintf("a client's Watch through the hub: %.0f µs after the store's own", median(hl)-median(dl))},
	}
}

// profile profiles this process's CPU into the file name.prof of the
// directory $TASKGRAPH_BENCH_CPUPROFILE, if set, until the function it
// returns is called: where the time of a hub, or of its clients, goes
// (go tool pprof the files it leaves).
func profile(name string) func() {
	pd := os.Getenv("TASKGRAPH_BENCH_CPUPROFILE")
	if pd == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(pd, name+".prof"))
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

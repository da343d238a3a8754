// Command bench measures taskgraph's FileStore against the physical floor
// of this machine — one durable atomic write — in one run, so every figure
// can be read as a ratio that noise on a shared machine affects little.
//
//	go run ./bench            # full run: N = 100 ... 100,000, three shapes, 1-8 workers
//	go run ./bench -quick     # N = 100 and 1,000, under a minute
//	go run ./bench -n 10000 -shapes chain -json out.json
//	go run ./bench -pg-only -pg postgres://…/bench_new -pg-old postgres://…/bench_old
//	go run ./bench -hub-only   # the hub's rows (issue 41): through a hub against the store's own
//	go run ./bench -board-only # taskgraph serve's work per change (issue 39): by its event against anew
//
// The floor swings 2× within minutes on a shared machine, so it is
// measured beside every group, not once: each kind of operation of a
// graph, and each throughput run, is measured in -rounds rounds, and
// every group lies between two measurements of the floor (floor, group,
// floor, group, ..., floor). A group's ratio is its median against the
// mean of its two neighbouring floors; a row gives the median of its
// rounds' ratios and, in its note, every round's.
//
// With -pg, pgstore is measured too; with -pg-old, its throughput rows are
// measured alternately with the pgstore of the commit -baseline (default
// 0600a01, the code before the outcomes work), built from that commit's
// tree into a helper program of its own and run on a database of its own
// (see benchPostgres).
//
// All directories are created under -dir (default a new temporary
// directory) and removed only at the end: file creation on these machines
// slows down for minutes after many files are deleted.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

var ctx = context.Background()

// Result is one measured figure.
type Result struct {
	Shape   string  `json:"shape"`
	N       int     `json:"n"`
	Op      string  `json:"op"`
	Median  float64 `json:"median_us"`
	P90     float64 `json:"p90_us"`
	P99     float64 `json:"p99_us,omitempty"`
	Ratio   float64 `json:"ratio_to_floor"`
	Samples int     `json:"samples"`
	Note    string  `json:"note,omitempty"`
	// RoundRatios is the ratio of each round: its median against the
	// mean of the floors measured right before and after it (for a
	// throughput, writes per second times that floor).
	RoundRatios []float64 `json:"round_ratios,omitempty"`
}

// Report is the whole run, as written by -json.
type Report struct {
	GoVersion string  `json:"go"`
	CPUs      int     `json:"cpus"`
	Machine   string  `json:"machine"` // host, CPU model and kernel: where the figures hold
	FloorUS   float64 `json:"floor_write_us"`
	ReadUS    float64 `json:"floor_read_us"`
	// SyscallsPerWrite is the I/O system calls of one ClaimNext or
	// Complete (strace -c; 0 without strace), by kind in SyscallKinds.
	SyscallsPerWrite float64  `json:"syscalls_per_write,omitempty"`
	SyscallKinds     string   `json:"syscall_kinds,omitempty"`
	Durability       string   `json:"durability"` // the protocol of the measured stores, and why
	Rounds           int      `json:"rounds"`     // of every measured group
	Results          []Result `json:"results"`
}

func main() {
	var (
		quick     = flag.Bool("quick", false, "small sizes and fewer samples: under a minute")
		sizes     = flag.String("n", "", "comma-separated graph sizes (default 100,1000,10000,100000; -quick: 100,1000)")
		shapes    = flag.String("shapes", "chain,star,dag", "comma-separated shapes: chain, star, dag")
		workers   = flag.String("workers", "1,2,4,8", "worker process counts for the throughput run")
		jsonOut   = flag.String("json", "", "also write the results as JSON to this file")
		baseDir   = flag.String("dir", "", "directory for the benchmark's files (default: a new temporary directory)")
		image     = flag.String("image", "", "filesystem image to mount and measure on, made (ext4 with its defaults) if missing; Linux, as root")
		coldOnly  = flag.String("cold", "", "internal: cold Open+Board of this directory, print micros and RSS")
		readOnly  = flag.String("readloop", "", "internal: os.ReadFile every task file of this directory, print micros")
		workDir   = flag.String("work", "", "internal: ClaimNext+Complete on this directory until none is ready")
		pgURL     = flag.String("pg", os.Getenv("TASKGRAPH_POSTGRES_URL"), "PostgreSQL URL: also benchmark pgstore (default $TASKGRAPH_POSTGRES_URL)")
		pgOld     = flag.String("pg-old", "", "PostgreSQL URL of a database of its own for the -baseline commit's pgstore, measured alternately with this code's (none: not compared)")
		baseline  = flag.String("baseline", "0600a01", "the commit whose pgstore -pg-old measures")
		pgSizes   = flag.String("pg-n", "", "comma-separated graph sizes for pgstore (default 1000,100000; -quick: 1000)")
		pgOnly    = flag.Bool("pg-only", false, "only the pgstore rows (with -pg)")
		rounds    = flag.Int("rounds", 3, "rounds of every measured group, each between two floor measurements")
		svgOut    = flag.String("svg", "", "also draw how the median cost of each write grows with N, as SVG, to this file")
		hubRows   = flag.Bool("hub", true, "also measure the hub: each operation through it at N = 10,000 (-quick: 1,000), 8 processes through it, a Watch subscriber")
		hubOnly   = flag.Bool("hub-only", false, "only the hub's rows")
		boardOnly = flag.Bool("board-only", false, "only the rows of taskgraph serve's work per change")
		workHubU  = flag.String("work-hub", "", "internal: ClaimNext+Complete through the hub at this URL ($TASKGRAPH_TOKEN) until none is ready")
	)
	flag.Parse()
	switch {
	case *coldOnly != "":
		cold(*coldOnly)
		return
	case *readOnly != "":
		readLoop(*readOnly)
		return
	case *workDir != "":
		work(*workDir)
		return
	case *workHubU != "":
		workHub(*workHubU)
		return
	}

	ns, pgNs := []int{100, 1000, 10000, 100000}, []int{1000, 100000}
	samples := 40
	throughputTasks := 10000
	if *quick {
		ns, pgNs, samples, throughputTasks = []int{100, 1000}, []int{1000}, 15, 1000
	}
	if *sizes != "" {
		ns = parseSizes(*sizes)
	}
	if *pgSizes != "" {
		pgNs = parseSizes(*pgSizes)
	}
	root := *baseDir
	if *image != "" {
		if root != "" {
			log.Fatal("-image and -dir: give one (the image is mounted on a directory of its own)")
		}
		mnt, unmount, err := mountImage(*image)
		if err != nil {
			log.Fatalf("-image: %v", err)
		}
		defer unmount()
		root = mnt
	}
	if root == "" {
		var err error
		if root, err = os.MkdirTemp("", "taskgraph-bench-"); err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(root)
	}

	rep := Report{GoVersion: runtime.Version(), CPUs: runtime.NumCPU(), Machine: machine(), Rounds: *rounds}
	var floors, reads []time.Duration
	// floorIn returns a function that measures the floor in dir, beside
	// each measured group: a group's ratio is to the mean of the floors
	// measured right before and right after it (see interleave).
	floorIn := func(dir string) func() float64 {
		return func() float64 {
			w, r := floor(filepath.Join(dir, ".floor"), floorWrites)
			floors, reads = append(floors, w...), append(reads, r...)
			return median(w)
		}
	}
	fmt.Printf("machine: %s\n", rep.Machine)
	fmt.Printf("floor: durable write %.0f µs (median of %d, 300 bytes; re-measured beside every measured group, %d rounds)\n",
		floorIn(root)(), floorWrites, *rounds)
	if s, err := taskgraph.Open(root); err == nil {
		rep.Durability = s.Durability().String()
		s.Close()
	}
	fmt.Printf("durability: %s\n", rep.Durability)
	add := func(r Result) {
		rep.Results = append(rep.Results, r)
		fmt.Printf("  %-8s N=%-6d %-22s median %9.1f µs  p90 %9.1f µs  %6.2f× floor %s\n", r.Shape, r.N, r.Op, r.Median, r.P90, r.Ratio, r.Note)
	}

	var ps []int
	for _, f := range strings.Split(*workers, ",") {
		p, err := strconv.Atoi(f)
		if err != nil {
			log.Fatalf("-workers: %v", err)
		}
		ps = append(ps, p)
	}
	if *pgOnly || *hubOnly || *boardOnly {
		*shapes, ps = "", ps[:0:0]
	}
	for _, shape := range strings.Split(*shapes, ",") {
		if shape == "" {
			continue
		}
		for _, n := range ns {
			dir := filepath.Join(root, fmt.Sprintf("%s-%d", shape, n))
			build(dir, shape, n)
			fl := floorIn(dir)
			for _, r := range measure(dir, shape, n, samples, *rounds, fl) {
				add(r)
			}
			local := fl()
			for _, r := range coldOpen(dir, shape, n) {
				r.Ratio = r.Median / local
				add(r)
			}
		}
	}
	// ClaimNext under limits and WithUnder at the largest size, against a
	// plain ClaimNext (issue 39, item 3).
	if !*pgOnly && !*hubOnly && !*boardOnly {
		n := ns[len(ns)-1]
		dir := filepath.Join(root, fmt.Sprintf("claims-%d", n))
		for _, r := range claimsAtScale(dir, n, *rounds, floorIn(dir)) {
			add(r)
		}
	}
	// What taskgraph serve does per change, against making its state anew
	// (issue 39, item 5).
	if !*pgOnly && !*hubOnly {
		boardNs := []int{1000, 10000, 100000}
		if *quick {
			boardNs = boardNs[:2]
		}
		for _, r := range benchBoard(boardNs, *rounds) {
			add(r)
		}
	}
	// WithoutSync gives up durability; measured apart so no one mistakes it
	// for the durable figures.
	if !*pgOnly && !*hubOnly && !*boardOnly {
		nosyncN := min(ns[len(ns)-1], 10000)
		dir := filepath.Join(root, fmt.Sprintf("nosync-%d", nosyncN))
		build(dir, "chain", nosyncN)
		for _, r := range measure(dir, "chain", nosyncN, samples, *rounds, floorIn(dir), taskgraph.WithoutSync()) {
			r.Note = "WithoutSync: not durable; " + r.Note
			add(r)
		}
	}

	// Throughput: every round drains a fresh directory per worker count,
	// all built first; then floor, drain, floor, drain, ... in one
	// directory's neighbourhood, each drain against its two floors.
	tpDir := func(p, round int) string { return filepath.Join(root, fmt.Sprintf("throughput-%d-%d", p, round)) }
	for round := range *rounds {
		for _, p := range ps {
			buildReady(tpDir(p, round), throughputTasks)
		}
	}
	tps := map[int][]throughputResult{}
	tpFloors := interleave(floorIn(root), *rounds, ps, func(round, p int) {
		tps[p] = append(tps[p], throughput(p, throughputTasks, os.Args[0], "-work", tpDir(p, round)))
	})
	for _, p := range ps {
		var ops, perFloor, aheads, recycleds []float64
		var lat []time.Duration
		for round, tp := range tps[p] {
			ops = append(ops, tp.opsPerSec)
			perFloor = append(perFloor, tp.opsPerSec*tpFloors[p][round]/1e6) // × 1/floor
			lat = append(lat, tp.latencies...)
			aheads, recycleds = append(aheads, tp.ahead), append(recycleds, tp.recycled)
		}
		spares := ""
		if medianOf(aheads)+medianOf(recycleds) > 0 {
			spares = fmt.Sprintf("; %.0f %% of the writes decided ahead, %.0f %% files written into a spare", 100*medianOf(aheads), 100*medianOf(recycleds))
		}
		m := medianOf(ops)
		add(Result{Shape: "ready", N: throughputTasks, Op: fmt.Sprintf("throughput %d procs", p), Median: 1e6 / m, P90: 1e6 / slices.Min(ops),
			Ratio: 1 / medianOf(perFloor), RoundRatios: perFloor,
			Note: fmt.Sprintf("%.0f ops/s = %s× 1/floor (rounds %s)%s", m, fmtF(medianOf(perFloor)), fmtRange(perFloor), spares)})
		add(Result{Shape: "ready", N: throughputTasks, Op: fmt.Sprintf("latency %d procs", p), Median: pct(lat, 50), P90: pct(lat, 90), P99: pct(lat, 99),
			Ratio: pct(lat, 50) / medianOf(tpFloors[p]),
			Note:  fmt.Sprintf("one ClaimNext or Complete; p99 %.0f µs", pct(lat, 99))})
	}
	if _, err := exec.LookPath("strace"); err == nil && !*pgOnly && !*hubOnly && !*boardOnly {
		rep.SyscallsPerWrite, rep.SyscallKinds = syscallsPerWrite(root)
		fmt.Printf("I/O system calls per write: %.1f (%s)\n", rep.SyscallsPerWrite, rep.SyscallKinds)
	}

	if (*hubRows || *hubOnly) && !*pgOnly && !*boardOnly {
		hubN := 10000
		if *quick {
			hubN = 1000
		}
		for _, r := range benchHub(root, hubN, samples, *rounds, throughputTasks, 8, floorIn(root)) {
			add(r)
		}
	}
	if *pgURL != "" && !*hubOnly && !*boardOnly {
		for _, r := range benchPostgres(*pgURL, *pgOld, *baseline, root, pgNs, samples, *rounds, throughputTasks, parseSizes(*workers), floorIn(root)) {
			add(r)
		}
	}
	rep.FloorUS, rep.ReadUS = median(floors), median(reads)
	if *svgOut != "" {
		if err := os.WriteFile(*svgOut, []byte(chart(rep)), 0o644); err != nil {
			log.Fatal(err)
		}
	}

	printTable(rep)
	if *jsonOut != "" {
		data, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(data, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// floor measures the durable atomic write this store is built on, with
// nothing else: write a temp file, fsync, rename, fsync the directory. It
// returns the n write times and the n read times of the file.
func floor(dir string, n int) (writes, reads []time.Duration) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	data := []byte(strings.Repeat("x", 299) + "\n")
	path := filepath.Join(dir, "task_1.json")
	for i := range n {
		start := time.Now()
		tmp := fmt.Sprintf("%s.tmp%d", path, i)
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			log.Fatal(err)
		}
		f.Write(data)
		f.Sync()
		f.Close()
		os.Rename(tmp, path)
		d.Sync()
		writes = append(writes, time.Since(start))
		start = time.Now()
		if _, err := os.ReadFile(path); err != nil {
			log.Fatal(err)
		}
		reads = append(reads, time.Since(start))
	}
	return writes, reads
}

func parseSizes(s string) []int {
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			log.Fatalf("sizes: %v", err)
		}
		ns = append(ns, n)
	}
	return ns
}

func median(ds []time.Duration) float64 { return pct(ds, 50) }

func pct(ds []time.Duration, p int) float64 {
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[(len(s)-1)*p/100]) / 1e3
}

// build creates a graph of n tasks of the given shape, without fsync (the
// build is setup, not what is measured).
func build(dir, shape string, n int) {
	s, err := taskgraph.Open(dir, taskgraph.WithoutSync())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	const width = 100
	for i := 1; i <= n; i++ {
		var by []taskgraph.ID
		switch shape {
		case "chain":
			if i > 1 {
				by = []taskgraph.ID{taskgraph.ID(i - 1)}
			}
		case "star":
			if i > 1 {
				by = []taskgraph.ID{1}
			}
		case "dag":
			// Layers of width tasks, each blocked by about 3 of the
			// previous layer.
			layer := (i - 1) / width
			if layer > 0 {
				lo := (layer-1)*width + 1
				for range 3 {
					by = append(by, taskgraph.ID(lo+rng.IntN(width)))
				}
			}
		default:
			log.Fatalf("unknown shape %q", shape)
		}
		if _, err := s.Create(ctx, taskgraph.NewTask{Subject: fmt.Sprintf("%s task %d", shape, i), Description: "benchmark task", BlockedBy: by}); err != nil {
			log.Fatal(err)
		}
	}
}

func buildReady(dir string, n int) {
	s, err := taskgraph.Open(dir, taskgraph.WithoutSync())
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for i := range n {
		if _, err := s.Create(ctx, taskgraph.NewTask{Subject: fmt.Sprint("ready task ", i)}); err != nil {
			log.Fatal(err)
		}
	}
}

// measure times each operation on a warm, durable store.
func measure(dir, shape string, n, samples, rounds int, floor func() float64, opts ...taskgraph.Option) []Result {
	s, err := taskgraph.Open(dir, opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	return measureStore(s, shape, n, samples, rounds, floor)
}

// measureStore times each operation on s: in rounds, each round a group
// per kind of operation, every group between two measurements of the
// floor (interleave). A result's Ratio is the median of its rounds'.
func measureStore(s taskgraph.Store, shape string, n, samples, rounds int, floor func() float64) []Result {
	if _, err := s.Board(ctx); err != nil { // warm the cache
		log.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(uint64(n), 11))
	times := map[string][]time.Duration{}
	timed := func(op string, f func() error) {
		start := time.Now()
		if err := f(); err != nil {
			log.Fatalf("%s %s N=%d: %v", op, shape, n, err)
		}
		times[op] = append(times[op], time.Since(start))
	}
	per := max(samples/rounds, 3)
	groups := []struct {
		ops  []string
		k    int
		body func()
	}{
		{[]string{"Get"}, per * 10, func() {
			id := taskgraph.ID(1 + rng.IntN(n))
			timed("Get", func() error { _, err := s.Get(ctx, id); return err })
		}},
		{[]string{"Board"}, max(per/4, 3), func() {
			timed("Board", func() error { _, err := s.Board(ctx); return err })
		}},
		{[]string{"ClaimNext", "Claim", "Complete"}, per, func() {
			var task taskgraph.Task
			timed("ClaimNext", func() (err error) { task, err = s.ClaimNext(ctx, "bench"); return err })
			if _, err := s.Release(ctx, task.ID, "bench"); err != nil {
				log.Fatal(err)
			}
			timed("Claim", func() error { _, err := s.Claim(ctx, task.ID, "bench"); return err })
			timed("Complete", func() error { _, err := s.Complete(ctx, task.ID, "bench"); return err })
		}},
		{[]string{"Update (add edge)"}, per, func() {
			// An edge from an earlier to a later task, checked for cycles.
			a := taskgraph.ID(2 + rng.IntN(n-1))
			b := taskgraph.ID(1 + rng.IntN(int(a)-1))
			timed("Update (add edge)", func() error {
				_, err := s.Update(ctx, a, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{b}})
				return err
			})
		}},
		{[]string{"Create"}, per, func() {
			by := []taskgraph.ID{taskgraph.ID(1 + rng.IntN(n))}
			timed("Create", func() error {
				_, err := s.Create(ctx, taskgraph.NewTask{Subject: "new", BlockedBy: by})
				return err
			})
		}},
	}
	medians := map[string][]float64{} // of each op, by round
	idx := make([]int, len(groups))
	for i := range idx {
		idx[i] = i
	}
	floors := interleave(floor, rounds, idx, func(_, g int) {
		from := map[string]int{}
		for _, op := range groups[g].ops {
			from[op] = len(times[op])
		}
		for range groups[g].k {
			groups[g].body()
		}
		for _, op := range groups[g].ops {
			medians[op] = append(medians[op], median(times[op][from[op]:]))
		}
	})
	ratios := map[string][]float64{}
	for g, group := range groups {
		for _, op := range group.ops {
			for round, m := range medians[op] {
				ratios[op] = append(ratios[op], m/floors[g][round])
			}
		}
	}
	var out []Result
	for _, op := range []string{"Create", "Claim", "Complete", "Update (add edge)", "ClaimNext", "Get", "Board"} {
		ds := times[op]
		out = append(out, Result{Shape: shape, N: n, Op: op, Median: median(ds), P90: pct(ds, 90), Samples: len(ds),
			Ratio: medianOf(ratios[op]), RoundRatios: ratios[op], Note: "rounds " + fmtRange(ratios[op])})
	}
	return out
}

// floorWrites is the number of durable writes of one floor measurement.
const floorWrites = 30

// interleave runs each group of groups, rounds times, with a measurement
// of the floor before the first and after every group (ABAB: floor, group,
// floor, group, ..., floor), so that each group is compared with the floor
// of its own minutes on a machine whose speed swings 2× within minutes.
// run(round, g) runs group g; interleave returns, for each group, its
// neighbouring floor in each round: the mean of the floors measured right
// before and right after it, in µs.
func interleave(floor func() float64, rounds int, groups []int, run func(round, g int)) map[int][]float64 {
	out := map[int][]float64{}
	before := floor()
	for round := range rounds {
		for _, g := range groups {
			run(round, g)
			after := floor()
			out[g] = append(out[g], (before+after)/2)
			before = after
		}
	}
	return out
}

func medianOf(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fmtF formats a ratio with 2 decimals.
func fmtF(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// fmtRange lists ratios, one per round, in the order measured.
func fmtRange(xs []float64) string {
	f := make([]string, len(xs))
	for i, x := range xs {
		f[i] = fmtF(x)
	}
	return strings.Join(f, " ")
}

// coldOpen times Open+Board in fresh processes against a plain loop that
// reads every file, also in fresh processes; and the CLI's `ready --json`
// and `list --json` (output to /dev/null), each fresh process timed from
// the outside, interleaved with a fresh read loop (ABAB), so that every
// ratio is against its neighbour. A first `ready` writes the snapshot
// (.taskgraph.cache) and is not counted.
func coldOpen(dir, shape string, n int) []Result {
	var open, loop, ready, list []time.Duration
	var rss string
	cli := cliBinary()
	run := func(args ...string) time.Duration {
		cmd := exec.Command(cli, append([]string{"--dir", dir}, args...)...)
		// Standard output to /dev/null (a nil Stdout), as the issue's
		// "cold" says: collecting 50 MB of list --json through a pipe
		// is the bench's cost, not the command's.
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		var exit *exec.ExitError
		if err := cmd.Run(); err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 3) { // 3: none ready
			log.Fatalf("taskgraph %s: %v: %s", strings.Join(args, " "), err, stderr.Bytes())
		}
		return time.Since(start)
	}
	loopOnce := func() time.Duration {
		start := time.Now()
		self("-readloop", dir)
		return time.Since(start)
	}
	run("ready", "--json") // writes the snapshot
	var readyRatio, listRatio []float64
	for range 3 {
		us, r := self("-cold", dir)
		open = append(open, us)
		rss = r
		us, _ = self("-readloop", dir)
		loop = append(loop, us)
		l1, rd, l2, ls := loopOnce(), run("ready", "--json"), loopOnce(), run("list", "--json")
		ready, list = append(ready, rd), append(list, ls)
		readyRatio, listRatio = append(readyRatio, float64(rd)/float64(l1)), append(listRatio, float64(ls)/float64(l2))
	}
	m, l := median(open), median(loop)
	slices.Sort(readyRatio)
	slices.Sort(listRatio)
	return []Result{
		{Shape: shape, N: n, Op: "cold Open+Board", Median: m, P90: pct(open, 90), Samples: 3,
			Note: fmt.Sprintf("%.2f× ReadFile loop; RSS %s", m/l, rss)},
		{Shape: shape, N: n, Op: "ReadFile loop", Median: l, P90: pct(loop, 90), Samples: 3},
		{Shape: shape, N: n, Op: "cold ready --json", Median: median(ready), P90: pct(ready, 90), Samples: 3,
			Note: fmt.Sprintf("%.2f× a fresh ReadFile loop process run beside it (median of 3 neighbours)", readyRatio[1])},
		{Shape: shape, N: n, Op: "cold list --json", Median: median(list), P90: pct(list, 90), Samples: 3,
			Note: fmt.Sprintf("%.2f× a fresh ReadFile loop process run beside it (median of 3 neighbours)", listRatio[1])},
	}
}

var cliPath string

// cliBinary builds the taskgraph command once, for the cold CLI rows.
func cliBinary() string {
	if cliPath != "" {
		return cliPath
	}
	dir, err := os.MkdirTemp("", "taskgraph-bench-cli-")
	if err != nil {
		log.Fatal(err)
	}
	cliPath = filepath.Join(dir, "taskgraph")
	if out, err := exec.Command("go", "build", "-o", cliPath, "github.com/taskgraph-dev/taskgraph/cmd/taskgraph").CombinedOutput(); err != nil {
		log.Fatalf("building taskgraph: %v: %s", err, out)
	}
	return cliPath
}

// self runs this binary with a flag and parses "micros rss" from its output.
func self(flag, dir string) (time.Duration, string) {
	out, err := exec.Command(os.Args[0], flag, dir).Output()
	if err != nil {
		log.Fatalf("%s %s: %v", flag, dir, err)
	}
	f := strings.Fields(string(out))
	us, _ := strconv.ParseFloat(f[0], 64)
	rss := ""
	if len(f) > 1 {
		rss = f[1]
	}
	return time.Duration(us * 1e3), rss
}

func cold(dir string) {
	start := time.Now()
	s, err := taskgraph.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := s.Board(ctx); err != nil {
		log.Fatal(err)
	}
	el := time.Since(start)
	runtime.GC()
	fmt.Printf("%d %s\n", el.Microseconds(), rssMiB())
}

func rssMiB() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.Fields(rest)[0])
			return fmt.Sprintf("%.0fMiB", float64(kb)/1024)
		}
	}
	return "?"
}

func readLoop(dir string) {
	start := time.Now()
	d, err := os.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	names, err := d.Readdirnames(-1)
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range names {
		if strings.HasPrefix(name, "task_") {
			if _, err := os.ReadFile(filepath.Join(dir, name)); err != nil {
				log.Fatal(err)
			}
		}
	}
	fmt.Println(time.Since(start).Microseconds())
}

// throughputResult is what the worker processes of one run did.
type throughputResult struct {
	opsPerSec float64         // writes per second over all of them
	latencies []time.Duration // of every write
	// shares of the writes decided ahead of the lock, and written into a
	// spare
	ahead, recycled float64
	// cpuPerOp is the CPU time (user and system) the worker processes
	// took, per write
	cpuPerOp time.Duration
}

// workReport is what a -work process prints when it is done.
type workReport struct {
	LatenciesNS []int64 `json:"latencies_ns"`
	Writes      int64   `json:"writes"`
	Ahead       int64   `json:"ahead"`
	Recycled    int64   `json:"recycled"`
}

// throughput runs p copies of the program bin with args, each doing
// ClaimNext+Complete until no task is ready.
func throughput(p, tasks int, bin string, args ...string) throughputResult {
	start := time.Now()
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		res             throughputResult
		writes          int64
		ahead, recycled int64
		cpu             time.Duration
	)
	for range p {
		wg.Go(func() {
			r, used := runWorker(bin, args...)
			mu.Lock()
			defer mu.Unlock()
			cpu += used
			for _, ns := range r.LatenciesNS {
				res.latencies = append(res.latencies, time.Duration(ns))
			}
			writes += r.Writes
			ahead, recycled = ahead+r.Ahead, recycled+r.Recycled
		})
	}
	wg.Wait()
	res.opsPerSec = float64(2*tasks) / time.Since(start).Seconds()
	res.cpuPerOp = cpu / time.Duration(2*tasks)
	if writes > 0 {
		res.ahead, res.recycled = float64(ahead)/float64(writes), float64(recycled)/float64(writes)
	}
	return res
}

// runWorker runs the program bin with args, its standard error passed
// through, and returns the workReport it prints and the CPU time it took.
func runWorker(bin string, args ...string) (workReport, time.Duration) {
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		log.Fatal(err)
	}
	var r workReport
	if err := json.Unmarshal(out, &r); err != nil {
		log.Fatalf("worker report: %v", err)
	}
	return r, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func work(dir string) {
	defer profile(fmt.Sprintf("work-%d", os.Getpid()))() // where a worker's time goes
	s, err := taskgraph.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	lat := drain(s)
	st := s.Stats()
	r := workReport{Writes: st.Writes, Ahead: st.Ahead, Recycled: st.Recycled}
	for _, d := range lat {
		r.LatenciesNS = append(r.LatenciesNS, d.Nanoseconds())
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		log.Fatal(err)
	}
}

// drain is a worker: ClaimNext+Complete until no task is ready. It
// returns the time each of them took.
func drain(s taskgraph.Store) []time.Duration {
	owner := fmt.Sprint("worker-", os.Getpid())
	var lat []time.Duration
	for {
		start := time.Now()
		t, err := s.ClaimNext(ctx, owner)
		if errors.Is(err, taskgraph.ErrNoReady) {
			return lat
		}
		if err != nil {
			log.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		start = time.Now()
		if _, err := s.Complete(ctx, t.ID, owner); err != nil {
			log.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
}

// syscallsPerWrite counts the I/O system calls of one ClaimNext or Complete
// with strace -c: a worker drains 200 ready tasks, another 1,200, and the
// difference is divided by the 2,000 writes between them, so that opening
// the store counts for nothing. The Go runtime's calls are left out.
func syscallsPerWrite(root string) (float64, string) {
	runtimeCalls := map[string]bool{}
	for _, c := range strings.Fields("futex nanosleep epoll_pwait sched_yield tgkill rt_sigreturn getpid madvise mmap munmap rt_sigprocmask rt_sigaction sigaltstack mprotect rseq set_robust_list gettid clone clone3 execve") {
		runtimeCalls[c] = true
	}
	counts := make([]map[string]float64, 2)
	for i, n := range []int{200, 1200} {
		dir := filepath.Join(root, fmt.Sprintf("syscalls-%d", n))
		buildReady(dir, n)
		out := filepath.Join(root, fmt.Sprintf("strace-%d.txt", n))
		cmd := exec.Command("strace", "-f", "-c", "-o", out, os.Args[0], "-work", dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			log.Fatalf("strace: %v", err)
		}
		data, err := os.ReadFile(out)
		if err != nil {
			log.Fatal(err)
		}
		counts[i] = map[string]float64{}
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 || f[len(f)-1] == "total" || f[0][0] < '0' || f[0][0] > '9' {
				continue
			}
			calls, err := strconv.Atoi(f[3])
			if err == nil {
				counts[i][f[len(f)-1]] = float64(calls)
			}
		}
	}
	var total float64
	var kinds []string
	for _, k := range slices.Sorted(maps.Keys(counts[1])) {
		d := (counts[1][k] - counts[0][k]) / 2000
		if runtimeCalls[k] || d < 0.05 {
			continue
		}
		total += d
		kinds = append(kinds, fmt.Sprintf("%s %.1f", k, d))
	}
	return total, strings.Join(kinds, ", ")
}

func printTable(rep Report) {
	fmt.Printf("\ntaskgraph benchmark (%s, %d CPUs, %s); floor = durable write %.0f µs, read %.0f µs\n", rep.GoVersion, rep.CPUs, rep.Machine, rep.FloorUS, rep.ReadUS)
	if rep.SyscallsPerWrite > 0 {
		fmt.Printf("I/O system calls per write: %.1f (%s)\n", rep.SyscallsPerWrite, rep.SyscallKinds)
	}
	fmt.Println()
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape\tN\top\tmedian µs\tp90 µs\t× floor\tnote\t")
	for _, r := range rep.Results {
		ratio := fmtF(r.Ratio)
		if r.Ratio == 0 {
			ratio = "" // a throughput compared with something else than the floor
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%s\t%s\t\n", r.Shape, r.N, r.Op, r.Median, r.P90, ratio, r.Note)
	}
	tw.Flush()
}

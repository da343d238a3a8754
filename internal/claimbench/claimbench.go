// Package claimbench measures ClaimNext at scale under concurrency limits
// and WithUnder against a plain ClaimNext, on one fixture, in one run:
// the store benchmarks (the root package's, pgstore's) and go run ./bench
// share it, so that every store is measured the same way.
package claimbench

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/cputime"
)

// Epics is the number of epics of the fixture: tasks 1 to Epics, each the
// parent of a run of consecutive tasks, epic Epics of the last run.
const Epics = 10

// Label is the label of every tenth task, and Unused a label no task
// carries. The tasks carrying Label are more urgent (P1) than the others
// (P2): a limit on Label that is reached holds back every one of them,
// and they all come first in the claim order.
const (
	Label  = "gpu"
	Unused = "unused"
)

// Tasks returns the fixture of n tasks (n > 10*Epics): the epics, then
// their children, a third of them completed; every tenth task carries
// Label. Each epic waits on its children (they block it), as Create makes
// it.
func Tasks(n int) []taskgraph.Task {
	tasks := make([]taskgraph.Task, n)
	leaves := n - Epics
	for i := range tasks {
		id := taskgraph.ID(i + 1)
		t := taskgraph.Task{ID: id, Subject: fmt.Sprint("task ", id), Status: taskgraph.Pending, Priority: taskgraph.DefaultPriority}
		if i >= Epics {
			epic := 1 + (i-Epics)*Epics/leaves
			t.Parent = taskgraph.ID(epic)
			tasks[epic-1].BlockedBy = append(tasks[epic-1].BlockedBy, id)
			if id%3 == 0 {
				t.Status = taskgraph.Completed
			}
			if id%10 == 0 {
				t.Labels, t.Priority = []string{Label}, taskgraph.P1
			}
		} else {
			t.Subject = fmt.Sprint("epic ", id)
		}
		tasks[i] = t
	}
	return tasks
}

// Case is one way of calling ClaimNext that Measure times: with Limits
// set (every other limit of Label and Unused removed) and Opts.
type Case struct {
	Name   string
	Limits map[string]int
	Opts   []taskgraph.ClaimOption
	// Check says what is wrong with the task claimed, or "".
	Check func(t taskgraph.Task) string
}

// Cases are the cases Measure times, the plain ClaimNext first: a limit
// on a label no task carries; a limit on Label, reached (see Setup), which
// holds back the most urgent tenth of the ready tasks; WithUnder the last
// epic.
var Cases = []Case{
	{Name: "plain"},
	{Name: "limit-unused", Limits: map[string]int{Unused: 1}},
	{Name: "limit-held", Limits: map[string]int{Label: 1}, Check: func(t taskgraph.Task) string {
		if slices.Contains(t.Labels, Label) {
			return fmt.Sprintf("task %d carries %q, whose limit is reached", t.ID, Label)
		}
		return ""
	}},
	{Name: "under-last-epic", Opts: []taskgraph.ClaimOption{taskgraph.WithUnder(Epics)}, Check: func(t taskgraph.Task) string {
		if t.Parent != Epics {
			return fmt.Sprintf("task %d is not under task %d", t.ID, Epics)
		}
		return ""
	}},
}

// Setup prepares a store loaded with Tasks for Measure: a task carrying
// Label is claimed (by "holder", without a lease) and stays so, so that
// a limit of 1 on Label is reached.
func Setup(ctx context.Context, s taskgraph.Store) error {
	_, err := s.Claim(ctx, 10*Epics, "holder")
	return err
}

// Sample is one timed ClaimNext: its wall time, and the CPU time the
// process used meanwhile (on a loaded machine the wall time of the same
// work swings with other processes; the CPU time much less, and it leaves
// out the waits for the disk).
type Sample struct {
	Wall, CPU time.Duration
}

// Measure runs each of Cases once, first in the order rotated by round,
// and returns the sample of each ClaimNext by case name. Each claimed task
// is released, untimed, so that every round finds the graph as the last
// left it; the limits are set, untimed, before each case, and an untimed
// ClaimNext of the case precedes the timed one.
func Measure(ctx context.Context, s taskgraph.Store, round int) (map[string]Sample, error) {
	lim, ok := s.(taskgraph.Limiter)
	if !ok {
		return nil, fmt.Errorf("claimbench: %T has no limits", s)
	}
	have, err := lim.Limits(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]Sample{}
	for k := range Cases {
		c := Cases[(k+round)%len(Cases)]
		for _, l := range []string{Label, Unused} {
			if have[l] != c.Limits[l] {
				if err := lim.SetLimit(ctx, l, c.Limits[l]); err != nil {
					return nil, err
				}
				have[l] = c.Limits[l]
			}
		}
		// The first operation after a SetLimit pays for the limit's
		// change (the FileStore rescans its directory, whose meta file
		// changed), not for the claim: an untimed claim comes first, in
		// every case alike.
		if _, err := claim(ctx, s, c); err != nil {
			return nil, err
		}
		d, err := claim(ctx, s, c)
		if err != nil {
			return nil, err
		}
		out[c.Name] = d
	}
	return out, nil
}

// claim times a ClaimNext of case c on s, checks the task it claims and
// releases it.
func claim(ctx context.Context, s taskgraph.Store, c Case) (Sample, error) {
	start, cpu := time.Now(), cputime.Now()
	t, err := s.ClaimNext(ctx, "bench", c.Opts...)
	d := Sample{Wall: time.Since(start), CPU: cputime.Now() - cpu}
	if err != nil {
		return d, fmt.Errorf("claimbench: %s: %w", c.Name, err)
	}
	if c.Check != nil {
		if what := c.Check(t); what != "" {
			return d, fmt.Errorf("claimbench: %s: %s", c.Name, what)
		}
	}
	if _, err := s.Release(ctx, t.ID, "bench"); err != nil {
		return d, err
	}
	return d, nil
}

// Bench runs Measure on s once to warm it, then once per iteration of b,
// and reports each case's median wall time (name-ms), its ratio to the
// plain ClaimNext's (name/plain), and the same ratio of the medians of
// CPU time (name/plain-cpu).
func Bench(b *testing.B, s taskgraph.Store) {
	ctx := b.Context()
	if _, err := Measure(ctx, s, 0); err != nil {
		b.Fatal(err)
	}
	wall, cpu := map[string][]time.Duration{}, map[string][]time.Duration{}
	for round := 0; b.Loop(); round++ {
		m, err := Measure(ctx, s, round)
		if err != nil {
			b.Fatal(err)
		}
		for c, d := range m {
			wall[c], cpu[c] = append(wall[c], d.Wall), append(cpu[c], d.CPU)
		}
	}
	plain, plainCPU := Median(wall["plain"]), Median(cpu["plain"])
	for _, c := range Cases {
		m := Median(wall[c.Name])
		b.ReportMetric(float64(m)/float64(time.Millisecond), c.Name+"-ms")
		if c.Name != "plain" {
			b.ReportMetric(float64(m)/float64(plain), c.Name+"/plain")
			b.ReportMetric(float64(Median(cpu[c.Name]))/float64(plainCPU), c.Name+"/plain-cpu")
		}
	}
}

// Median returns the median of ds, which it sorts.
func Median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

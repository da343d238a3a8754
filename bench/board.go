// The board's rows (issue 39, item 5): what taskgraph serve does per
// change to the graph — its state made from the one before by the store
// watch's event — against making the state anew from the store, as it
// did before, at 1,000, 10,000 and 100,000 tasks.

package main

import (
	"fmt"
	"log"
	"runtime"
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/boardbench"
)

// benchBoard returns, for each size of ns, the time and the memory
// allocated of one change to the board server, by its event and made
// anew, each measured in every one of rounds rounds (the order swapped
// each round). What is measured is boardbench's, as the board's own
// BenchmarkChange measures it: CPU work in this process, so no floor.
func benchBoard(ns []int, rounds int) []Result {
	var out []Result
	for _, n := range ns {
		c, err := boardbench.New(n)
		if err != nil {
			log.Fatal(err)
		}
		kinds := []struct {
			name   string
			change func() (int, error)
			most   int // changes a round, at most
		}{
			{"by its event", func() (int, error) { return c.ByEvent(ctx) }, 200},
			{"made anew", func() (int, error) { return c.Anew(ctx) }, 20},
		}
		times := make([][]time.Duration, len(kinds))
		allocs := make([][]float64, len(kinds)) // bytes a change, by round
		size := 0                               // of the Change event
		for round := range rounds {
			for i := range kinds {
				k := (i + round) % len(kinds)
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				done, start := 0, time.Now()
				for done < kinds[k].most && (done < 5 || time.Since(start) < time.Second) {
					t := time.Now()
					m, err := kinds[k].change()
					if err != nil {
						log.Fatalf("board bench: %v", err)
					}
					times[k] = append(times[k], time.Since(t))
					size = max(size, m)
					done++
				}
				runtime.ReadMemStats(&after)
				allocs[k] = append(allocs[k], float64(after.TotalAlloc-before.TotalAlloc)/float64(done))
			}
		}
		c.Close()
		event, anew := median(times[0]), median(times[1])
		out = append(out,
			Result{Shape: "project", N: n, Op: "serve: a change, by event", Median: event, P90: pct(times[0], 90), Samples: len(times[0]),
				Note: fmt.Sprintf("%s a change (rounds %s); a Change event of %d bytes to every page, made once", fmtBytes(medianOf(allocs[0])), fmtBytesRange(allocs[0]), size)},
			Result{Shape: "project", N: n, Op: "serve: a change, anew", Median: anew, P90: pct(times[1], 90), Samples: len(times[1]),
				Note: fmt.Sprintf("%s a change (rounds %s): the state made anew from the store, as before: %.0f× the time, %.0f× the memory of one by its event",
					fmtBytes(medianOf(allocs[1])), fmtBytesRange(allocs[1]), anew/event, medianOf(allocs[1])/medianOf(allocs[0]))})
	}
	return out
}

// fmtBytes formats an amount of memory allocated, in KB or MB.
func fmtBytes(b float64) string {
	if b >= 1e6 {
		return fmt.Sprintf("%.1f MB", b/1e6)
	}
	return fmt.Sprintf("%.0f KB", b/1e3)
}

// fmtBytesRange formats amounts of memory as a range, "a–b".
func fmtBytesRange(bs []float64) string {
	lo, hi := bs[0], bs[0]
	for _, b := range bs {
		lo, hi = min(lo, b), max(hi, b)
	}
	return fmtBytes(lo) + "–" + fmtBytes(hi)
}

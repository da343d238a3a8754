// The bench's rows of ClaimNext under limits and WithUnder at scale
// against a plain ClaimNext (issue 39, item 3), for the file store and
// pgstore.

package main

import (
	"fmt"
	"log"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/claimbench"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// claimsAtScale times ClaimNext on claimbench's fixture of n tasks in a
// durable store in dir (see measureClaims).
func claimsAtScale(dir string, n, rounds int, floor func() float64) []Result {
	s, err := taskgraph.Open(dir, taskgraph.WithoutSync())
	if err == nil {
		if err = s.Load(ctx, claimbench.Tasks(n)); err == nil {
			err = claimbench.Setup(ctx, s)
		}
		s.Close()
	}
	if err != nil {
		log.Fatal(err)
	}
	if s, err = taskgraph.Open(dir); err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	return measureClaims(s, "claims", n, rounds, floor)
}

// pgClaimsAtScale times ClaimNext on claimbench's fixture of n tasks in
// pgstore, in the graph named graph of pool (see measureClaims).
func pgClaimsAtScale(pool *pgxpool.Pool, graph string, n, rounds int, floor func() float64) []Result {
	s, err := pgstore.Open(ctx, pool, graph)
	if err == nil {
		if err = s.Load(ctx, claimbench.Tasks(n)); err == nil {
			err = claimbench.Setup(ctx, s)
		}
	}
	if err != nil {
		log.Fatal(err)
	}
	return measureClaims(s, "pg-claims", n, rounds, floor)
}

// measureClaims times each case of claimbench.Cases on s, loaded with
// claimbench's fixture of n tasks, five times a round, every round
// between two floors; the note gives each case's median against the
// plain ClaimNext's.
func measureClaims(s taskgraph.Store, shape string, n, rounds int, floor func() float64) []Result {
	if _, err := claimbench.Measure(ctx, s, 0); err != nil { // warm the cache
		log.Fatal(err)
	}
	times := map[string][]time.Duration{}
	floors := interleave(floor, rounds, []int{0}, func(round, _ int) {
		for k := range 5 {
			m, err := claimbench.Measure(ctx, s, round*5+k)
			if err != nil {
				log.Fatal(err)
			}
			for c, d := range m {
				times[c] = append(times[c], d.Wall)
			}
		}
	})
	plain := median(times["plain"])
	var out []Result
	for _, c := range claimbench.Cases {
		ds := times[c.Name]
		m := median(ds)
		out = append(out, Result{Shape: shape, N: n, Op: "ClaimNext " + c.Name, Median: m, P90: pct(ds, 90), Samples: len(ds),
			Ratio: m / medianOf(floors[0]), Note: fmt.Sprintf("%.2f× plain ClaimNext (goal ≤ 2×)", m/plain)})
	}
	return out
}

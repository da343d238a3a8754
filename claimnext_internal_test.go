package taskgraph

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// scanClaim is what ClaimNext takes, by its definition: of every ready
// task that carries labels, is under under (0: any) and is not deferred
// at now, sorted in claim order, the first that the limits let into
// in_progress (Rules.Limited with the tasks holding each label). It is
// the rule nextClaim implements with indexes.
func scanClaim(g *graph, labels []string, under ID, now time.Time) (ID, bool) {
	var ready []*Task
	for id, t := range g.tasks {
		if g.readyTask(t) && !t.Deferred(now) && hasLabels(t.Labels, labels) && (under == 0 || g.under(id, under)) {
			ready = append(ready, t)
		}
	}
	slices.SortFunc(ready, Rules.ClaimOrder)
	for _, t := range ready {
		if Rules.Limited(t, g.limits, g.heldWith(t.ID, now)) == nil {
			return t.ID, true
		}
	}
	return 0, false
}

// nextClaim (and so ClaimNext in every store built on the graph) takes
// the task scanClaim does, through any sequence of writes: tasks of
// every status with labels, priorities and ties in claim order, leases
// that lapse, deferrals that come due, parents (loops of them too),
// blockers, removals, and limits set, reached, freed by a holder that
// finishes or lapses, and removed while ready tasks are held back.
func TestNextClaimMatchesScan(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 39))
			g := newGraph()
			base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			labelSets := [][]string{nil, nil, {"a"}, {"b"}, {"a", "b"}, {"c"}, {"a", "c"}}
			const ids = 120
			for step := range 4000 {
				id := ID(1 + r.IntN(ids))
				switch k := r.IntN(20); {
				case k == 0:
					g.remove(id)
				case k == 1:
					limits := map[string]int{}
					for _, l := range []string{"a", "b", "c", "d"} {
						if r.IntN(2) == 0 {
							limits[l] = 1 + r.IntN(3)
						}
					}
					g.limits = limits
				default:
					task := &Task{ID: id, Status: Pending, Priority: Priority(r.IntN(3) - 1), Labels: labelSets[r.IntN(len(labelSets))]}
					task.CreatedAt = base.Add(time.Duration(r.IntN(3)) * time.Second) // ties, broken by id
					switch r.IntN(6) {
					case 0, 1:
						task.Status = InProgress
						if r.IntN(2) == 0 {
							task.LeaseExpiresAt = base.Add(time.Duration(r.IntN(20)) * time.Minute)
						}
					case 2:
						task.Status = Completed
					case 3:
						if r.IntN(2) == 0 {
							task.NotBefore = base.Add(time.Duration(r.IntN(20)) * time.Minute)
						}
					}
					if r.IntN(2) == 0 {
						task.Parent = ID(1 + r.IntN(ids))
					}
					if r.IntN(4) == 0 {
						task.BlockedBy = []ID{ID(1 + r.IntN(ids))}
					}
					g.put(task)
				}
				for range 3 {
					now := base.Add(time.Duration(r.IntN(25)) * time.Minute)
					var labels []string
					if r.IntN(4) == 0 {
						labels = labelSets[2+r.IntN(len(labelSets)-2)]
					}
					var under ID
					if r.IntN(3) == 0 {
						under = ID(1 + r.IntN(ids))
						if g.tasks[under] == nil {
							under = 0
						}
					}
					want, wantOK := scanClaim(g, labels, under, now)
					got, ok := g.nextClaim(labels, under, now)
					if got != want || ok != wantOK {
						t.Fatalf("step %d, labels %q, under %d, limits %v: nextClaim takes %d (%v), the scan %d (%v)", step, labels, under, g.limits, got, ok, want, wantOK)
					}
					if ok {
						if _, err := g.planClaim(got, "w", 0, now); err != nil {
							t.Fatalf("step %d: the claim of task %d, chosen, fails: %v", step, got, err)
						}
					}
				}
			}
		})
	}
}

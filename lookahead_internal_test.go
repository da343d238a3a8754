package taskgraph

import (
	"container/heap"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLookAheadAsOnGraph checks lookAhead, which reads the tasks in place,
// against lookAheadOnGraph, the same walk on the graph graphOf builds
// (blockers deduplicated, the last task of an id kept), on random task
// lists with every oddity the resolver accepts: blockers listed twice,
// missing, failed, cancelled or completed, ids given twice, a task that
// blocks itself, and cycles.
func TestLookAheadAsOnGraph(t *testing.T) {
	statuses := []Status{Pending, Pending, Pending, InProgress, Completed, Failed, Cancelled}
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 9))
		n := 1 + rng.IntN(40)
		var tasks []Task
		for range n {
			task := Task{ID: ID(rng.IntN(n+n/4) - n/8), Status: statuses[rng.IntN(len(statuses))]} // ids 0 and below too
			for range rng.IntN(4) {
				b := ID(1 + rng.IntN(n+2))
				if seed%3 != 0 && b >= task.ID { // mostly acyclic
					continue
				}
				task.BlockedBy = append(task.BlockedBy, b)
			}
			if rng.IntN(10) == 0 && len(task.BlockedBy) > 0 {
				task.BlockedBy = append(task.BlockedBy, task.BlockedBy[0]) // twice
			}
			tasks = append(tasks, task)
		}
		before := slices.Clone(tasks)
		for i := range before {
			before[i].BlockedBy = slices.Clone(before[i].BlockedBy) // a deep copy: an edit in place shows
		}
		depth, order, err := lookAhead(tasks)
		wantDepth, wantOrder, wantErr := lookAheadOnGraph(tasks)
		require.Equal(t, before, tasks, "seed %d: lookAhead changed its input", seed)
		if wantErr != nil {
			var ce *CycleError
			require.True(t, errors.As(err, &ce), "seed %d: %v", seed, err)
			require.Equal(t, wantErr, err, "seed %d", seed)
			continue
		}
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, wantOrder, order, "seed %d", seed)
		require.Equal(t, wantDepth, depth, "seed %d", seed)
	}
}

// lookAheadOnGraph is lookAhead as it was written on graphOf's graph: the
// oracle of TestLookAheadAsOnGraph.
func lookAheadOnGraph(tasks []Task) (map[ID]step, []ID, error) {
	g := graphOf(tasks)
	unfinished := func(id ID) bool {
		t := g.tasks[id]
		return t != nil && (t.Status == Pending || t.Status == InProgress)
	}
	// What each task waits on: a blocker completed out of order stands
	// for its own blockers that are not completed (Rules.OutOfOrder).
	waits := map[ID][]ID{}
	dependents := map[ID][]ID{}
	for _, id := range g.ids {
		for _, b := range g.tasks[id].BlockedBy {
			on := []ID{b}
			if g.early[b] {
				on = Rules.OutOfOrder(g.tasks[b], g.status)
			}
			for _, w := range on {
				waits[id] = append(waits[id], w)
				dependents[w] = append(dependents[w], id)
			}
		}
	}
	indeg := map[ID]int{}
	stuck := map[ID]bool{}
	var avail idHeap
	total := 0
	for _, id := range g.ids {
		if !unfinished(id) {
			continue
		}
		total++
		for _, b := range waits[id] {
			switch {
			case g.tasks[b] == nil, g.tasks[b].Status.ended():
				stuck[id] = true
			case unfinished(b):
				indeg[id]++
			}
		}
		if indeg[id] == 0 {
			avail = append(avail, id)
		}
	}
	heap.Init(&avail)
	depth := map[ID]step{}
	var order []ID
	visited := 0
	for avail.Len() > 0 {
		id := heap.Pop(&avail).(ID)
		visited++
		if !stuck[id] {
			s := step{n: 1}
			for _, b := range slices.Sorted(slices.Values(waits[id])) {
				if bs, ok := depth[b]; ok && bs.n+1 > s.n {
					s = step{n: bs.n + 1, prev: b}
				}
			}
			depth[id] = s
			order = append(order, id)
		}
		for _, d := range dependents[id] {
			if !unfinished(d) {
				continue
			}
			if stuck[id] {
				stuck[d] = true
			}
			if indeg[d]--; indeg[d] == 0 {
				heap.Push(&avail, d)
			}
		}
	}
	if visited < total {
		return nil, nil, &CycleError{Path: g.findCycle()}
	}
	return depth, order, nil
}

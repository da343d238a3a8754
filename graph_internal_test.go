package taskgraph

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The graph's nodes mirror its maps through any sequence of puts and
// removes, in any order of ids, with edges to missing tasks, to
// themselves and named twice, and with holes in the ids.
func TestGraphNodesMirrorMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := newGraph()
	for step := range 5000 {
		id := ID(1 + r.IntN(300))
		if step < 300 {
			id = ID(1 + step) // in order first, as ids are drawn
		}
		if step > 300 && r.IntN(4) == 0 {
			g.remove(id)
		} else {
			task := &Task{ID: id, Status: Pending}
			if r.IntN(3) == 0 {
				task.Status = Completed
			}
			for range r.IntN(4) {
				task.BlockedBy = append(task.BlockedBy, ID(1+r.IntN(310)))
			}
			g.put(task)
		}
		if step == 299 && len(g.nodes) != len(g.ids) {
			t.Fatal("puts in id order dropped the nodes")
		}
		if step%50 != 0 && r.IntN(10) != 0 {
			continue // a walk now and then, so that the nodes are kept current or dropped in between
		}
		nodes := g.walk()
		if len(nodes) != len(g.ids) || len(g.ids) != len(g.tasks) {
			t.Fatalf("step %d: %d nodes, %d ids, %d tasks", step, len(nodes), len(g.ids), len(g.tasks))
		}
		for i, id := range g.ids {
			n := nodes[i]
			if n.t != g.tasks[id] {
				t.Fatalf("step %d: node %d holds task %d, not %d", step, i, n.t.ID, id)
			}
			if !slices.Equal(n.dependents, g.dependents[id]) {
				t.Fatalf("step %d: node of %d has dependents %v, the map %v", step, id, n.dependents, g.dependents[id])
			}
			if j, ok := g.search(id); !ok || j != i {
				t.Fatalf("step %d: search(%d) = %d, %v; want %d", step, id, j, ok, i)
			}
			for _, b := range n.t.BlockedBy {
				if g.near(b, i) != g.tasks[b] {
					t.Fatalf("step %d: near(%d, %d) is not task %d", step, b, i, b)
				}
			}
		}
	}
}

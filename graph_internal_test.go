package taskgraph

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
			task := &Task{ID: id, Status: Pending, Priority: Priority(r.IntN(5) - 2)}
			if r.IntN(20) == 0 {
				task.Priority = 1000 // not one of the five: as a hand-edited file might say, before it is read
			}
			if r.IntN(3) == 0 {
				task.Status = Completed
			}
			if r.IntN(3) == 0 {
				task.Labels = []string{"x"}
			}
			for range r.IntN(4) {
				task.BlockedBy = append(task.BlockedBy, ID(1+r.IntN(310)))
			}
			if r.IntN(3) == 0 {
				task.Parent = ID(1 + r.IntN(310))
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
		edges, labels := 0, 0
		for _, task := range g.tasks {
			edges, labels = edges+len(task.BlockedBy), labels+len(task.Labels)
		}
		if edges != g.edges || labels != g.labels {
			t.Fatalf("step %d: %d edges and %d labels counted, %d and %d kept", step, edges, labels, g.edges, g.labels)
		}
		if len(nodes) != len(g.ids) || len(g.ids) != len(g.tasks) {
			t.Fatalf("step %d: %d nodes, %d ids, %d tasks", step, len(nodes), len(g.ids), len(g.tasks))
		}
		for i, id := range g.ids {
			n := nodes[i]
			if n.t != g.tasks[id] {
				t.Fatalf("step %d: node %d holds task %d, not %d", step, i, n.t.ID, id)
			}
			if n.st != n.t.Status {
				t.Fatalf("step %d: node of %d says %s, its task %s", step, id, n.st, n.t.Status)
			}
			if n.exact && Priority(n.pri) != n.t.Priority || !n.exact && n.t.Priority >= -128 && n.t.Priority <= 127 {
				t.Fatalf("step %d: node of %d says priority %d (exact %v), its task %d", step, id, n.pri, n.exact, n.t.Priority)
			}
			if n.parent != (len(g.children[id]) > 0) {
				t.Fatalf("step %d: node of %d says parent %v, the children index %v", step, id, n.parent, g.children[id])
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

// A graph loaded at once is the graph the puts of its tasks build, index
// by index, and stays so through the puts and removes that follow: with
// edges to missing tasks, to themselves, named twice and backward, keys
// shared, leases, schedules and every status.
func TestGraphLoadIsPuts(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	now := time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)
	statuses := []Status{Pending, Pending, Pending, InProgress, Completed, Completed, Failed, Cancelled}
	task := func(id ID) *Task {
		t := &Task{ID: id, Status: statuses[r.IntN(len(statuses))], Priority: Priority(r.IntN(5)), CreatedAt: now.Add(time.Duration(r.IntN(100)) * time.Second)}
		for range r.IntN(4) {
			t.BlockedBy = append(t.BlockedBy, ID(1+r.IntN(int(id)+20)))
		}
		if r.IntN(5) == 0 {
			t.Key = fmt.Sprint("k", r.IntN(10))
		}
		if t.Status == InProgress && r.IntN(2) == 0 {
			t.LeaseExpiresAt = now.Add(time.Hour)
		}
		if t.Status == Pending && r.IntN(5) == 0 {
			t.NotBefore = now.Add(time.Duration(r.IntN(3)-1) * time.Hour)
		}
		return t
	}
	for round := range 50 {
		var tasks []*Task
		for id := ID(1); id <= 200; id++ {
			if r.IntN(6) != 0 { // holes in the ids
				tasks = append(tasks, task(id))
			}
		}
		if round%10 == 9 {
			tasks = nil
		}
		puts, loaded := newGraph(), newGraph()
		if round%5 == 4 {
			// Empty again, with what a graph keeps of its past: broken
			// ids, the high-water mark, stale heap entries.
			for _, g := range []*graph{puts, loaded} {
				g.put(&Task{ID: 7, Status: Pending})
				g.put(&Task{ID: 250, Status: Pending, BlockedBy: []ID{7}})
				g.remove(250)
				g.remove(7)
				g.markBroken(3, ErrCorrupt)
				g.markBroken(240, ErrCorrupt)
			}
		}
		for _, task := range tasks {
			puts.put(task)
		}
		loaded.load(tasks)
		requireSameGraph(t, puts, loaded, now)
		for range 100 {
			id := ID(1 + r.IntN(230))
			if r.IntN(3) == 0 {
				puts.remove(id)
				loaded.remove(id)
			} else {
				task := task(id)
				puts.put(task)
				loaded.put(task)
			}
		}
		requireSameGraph(t, puts, loaded, now)
	}
	// Out of order, or into a graph that holds tasks, it is the puts.
	puts, loaded := newGraph(), newGraph()
	tasks := []*Task{task(5), task(3), task(9)}
	for _, task := range tasks {
		puts.put(task)
	}
	loaded.load(tasks)
	requireSameGraph(t, puts, loaded, now)
	more := []*Task{task(1), task(7)}
	for _, task := range more {
		puts.put(task)
	}
	loaded.load(more)
	requireSameGraph(t, puts, loaded, now)
}

// requireSameGraph fails unless a and b hold the same indexes, the ready
// heap compared by the order ClaimNext takes its live entries in.
func requireSameGraph(t *testing.T, a, b *graph, now time.Time) {
	t.Helper()
	require.Equal(t, a.ids, b.ids)
	require.Equal(t, a.walk(), b.walk())
	require.Equal(t, a.tasks, b.tasks)
	require.Equal(t, a.dependents, b.dependents)
	require.Equal(t, a.maxID, b.maxID)
	require.Equal(t, a.leased, b.leased)
	require.Equal(t, a.deferred, b.deferred)
	require.Equal(t, a.running, b.running)
	require.Equal(t, a.broken, b.broken)
	require.Equal(t, a.keys, b.keys)
	require.Equal(t, a.ended, b.ended)
	require.Equal(t, a.backward, b.backward)
	// Every ready task has a live entry in the heap, whatever its layout.
	live := func(g *graph) []readyEntry {
		var out, want []readyEntry
		for _, e := range g.ready {
			if g.live(e) && g.queued[e.id] == e {
				out = append(out, e)
			}
		}
		slices.SortFunc(out, readyEntry.compare)
		for _, id := range g.ids {
			if g.isReady(id) {
				want = append(want, entryOf(g.tasks[id]))
			}
		}
		slices.SortFunc(want, readyEntry.compare)
		out = slices.Compact(out)
		require.Equal(t, want, out)
		return out
	}
	require.Equal(t, live(a), live(b))
	ida, oka := a.nextReady(now)
	idb, okb := b.nextReady(now)
	require.Equal(t, oka, okb)
	require.Equal(t, ida, idb)
}

// Tasks that arrive together (a Load, a cold open) are stored side by
// side in one slab (graph.go, "slabs"), and no later write reaches into
// it: a put replaces a task's pointer, leaving the old version and its
// neighbours as they were, and a new task is allocated apart.
func TestSlabs(t *testing.T) {
	ctx := context.Background()
	size := reflect.TypeFor[Task]().Size()
	check := func(t *testing.T, g *graph, write func()) {
		t.Helper()
		addr := func(id ID) uintptr { return reflect.ValueOf(g.tasks[id]).Pointer() }
		for id := ID(2); id <= 3; id++ {
			require.Equal(t, addr(id-1)+size, addr(id), "task %d beside task %d", id, id-1)
		}
		start := addr(1)
		was := map[ID]*Task{}
		copies := map[ID]Task{}
		for id := ID(1); id <= 3; id++ {
			was[id], copies[id] = g.tasks[id], g.tasks[id].clone()
		}
		write()
		require.NotSame(t, was[2], g.tasks[2], "the update replaces the pointer")
		for id := ID(1); id <= 3; id++ {
			require.Equal(t, copies[id], *was[id], "task %d as it was in the slab", id)
		}
		if a := addr(4); start <= a && a < start+3*size {
			t.Fatal("a created task was put in the slab")
		}
	}
	tasks := []Task{{ID: 1, Subject: "a", Status: Pending}, {ID: 2, Subject: "b", Status: Pending, BlockedBy: []ID{1}, Labels: []string{"x"}}, {ID: 3, Subject: "c", Status: Pending, BlockedBy: []ID{2}}}
	write := func(s Store) func() {
		return func() {
			subject, labels := "b2", []string{"y"}
			_, err := s.Update(ctx, 2, Patch{Subject: &subject, Labels: &labels})
			require.NoError(t, err)
			_, err = s.Create(ctx, NewTask{Subject: "d"})
			require.NoError(t, err)
		}
	}
	t.Run("Load", func(t *testing.T) {
		m := NewMemStore()
		require.NoError(t, m.Load(ctx, tasks))
		check(t, m.g, write(m))
	})
	t.Run("cold open", func(t *testing.T) {
		dir := t.TempDir()
		s, err := Open(dir, WithoutSync())
		require.NoError(t, err)
		require.NoError(t, s.Load(ctx, tasks))
		require.NoError(t, s.Close())
		s, err = Open(dir, WithoutSync())
		require.NoError(t, err)
		defer s.Close()
		_, err = s.Board(ctx) // reads the directory
		require.NoError(t, err)
		check(t, s.g, write(s))
	})
}

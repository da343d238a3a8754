// This file holds the resolver: the pure functions over a slice of tasks
// that say what can happen next (Resolve), in what order the work can run
// (TopoOrder, Waves, CriticalPath) and where it cannot (FindCycle). Each
// indexes the tasks in a graph (graph.go) and answers from it. Nothing
// here does I/O.

package taskgraph

import (
	"container/heap"
	"maps"
	"slices"
	"time"
)

// State is where a task stands, derived from its status and its
// blockers: the Board list it is in. A pending task is ready, blocked or
// stranded; any other task's state is its status. Explain reports it, and
// the CLI's graph and the web board print it; the values are the words
// they print.
type State string

// The states, in the order of the board's columns.
const (
	// StateReady is a pending task whose blockers all exist and are
	// completed: ClaimNext may take it (Board.Ready).
	StateReady State = "ready"
	// StateAwaitingApproval is a pending task that waits for a person's
	// approval (Board.AwaitingApproval, Approver), whatever its blockers.
	StateAwaitingApproval State = "awaiting_approval"
	// StateDeferred is a pending task whose blockers are all completed
	// but whose NotBefore is still to come: deferred by its creator, or a
	// retry waiting out its backoff (Board.Deferred).
	StateDeferred State = "deferred"
	// StateLimited is a pending task that would be ready but for a
	// concurrency limit on one of its labels (Board.Limited, Limiter).
	StateLimited State = "limited"
	// StateBlocked is a pending task that waits on an unfinished or
	// missing blocker, and is not stranded (Board.Blocked, Board.Missing).
	StateBlocked State = "blocked"
	// StateStranded is a pending task that cannot become ready as things
	// stand: a blocker is failed or cancelled, or is a stranded pending
	// task (Board.Stranded, Board.StrandedBy).
	StateStranded State = "stranded"
	// StateInProgress is a claimed task, status InProgress
	// (Board.InProgress).
	StateInProgress State = State(InProgress)
	// StateCompleted is a task with status Completed (Board.Completed).
	StateCompleted State = State(Completed)
	// StateFailed is a task with status Failed (Board.Failed).
	StateFailed State = State(Failed)
	// StateCancelled is a task with status Cancelled (Board.Cancelled).
	StateCancelled State = State(Cancelled)
)

// StateList is one list of a Board with the state of its tasks.
type StateList struct {
	State State
	Tasks []Task
}

// Lists returns every list of b with its state, in the order of the
// board's columns: ready, awaiting approval, deferred, blocked, stranded, in progress,
// completed, failed, cancelled (with limited after deferred). Code that walks a whole board walks this.
func (b Board) Lists() []StateList {
	return []StateList{{StateReady, b.Ready}, {StateAwaitingApproval, b.AwaitingApproval}, {StateDeferred, b.Deferred}, {StateLimited, b.Limited}, {StateBlocked, b.Blocked}, {StateStranded, b.Stranded},
		{StateInProgress, b.InProgress}, {StateCompleted, b.Completed}, {StateFailed, b.Failed}, {StateCancelled, b.Cancelled}}
}

// Resolve partitions tasks by what can happen next. A pending task is ready
// when every id in its BlockedBy names a completed task; stranded when a
// blocker is failed or cancelled, or is a pending task that is itself
// stranded (Board.StrandedBy names the cause); and blocked otherwise.
// Blockers that name no task are listed in Board.Missing. Each list is
// sorted by id, and each task's Blocks is filled in.
//
// filters select the tasks each list shows, as for Store.Board; readiness
// is judged on all of tasks. A filter that Store.Board would refuse (an
// unknown status, a malformed label) selects nothing. Linear in the size
// of the graph.
func Resolve(tasks []Task, filters ...Filter) Board {
	sel, err := Rules.Filters(filters)
	if err != nil {
		return Board{}
	}
	if sel.Now.IsZero() {
		sel.Now = time.Now()
	}
	return graphOf(tasks).board(sel)
}

// graphOf indexes tasks, each blocker once however often a task lists it.
func graphOf(tasks []Task) *graph {
	g := newGraph()
	slab := slices.Clone(tasks) // side by side (graph.go, "slabs")
	for i := range slab {
		t := &slab[i]
		t.BlockedBy = addIDs(nil, t.BlockedBy)
		g.put(t)
	}
	return g
}

// FindCycle returns one dependency cycle among tasks in execution order with
// its first id repeated last (e.g. [3 5 3]: 3 blocks 5, 5 blocks 3), or nil
// if the graph is acyclic. Edges to ids that are not in tasks are ignored.
func FindCycle(tasks []Task) []ID {
	return graphOf(tasks).findCycle()
}

// TopoOrder returns the ids of tasks in an order where every task comes after
// all of its blockers, choosing the lowest id whenever several are possible.
// Blockers that name no task are ignored. If the graph has a cycle it returns
// a *CycleError.
func TopoOrder(tasks []Task) ([]ID, error) {
	g := graphOf(tasks) // a blocker listed twice is one edge
	indeg := make(map[ID]int, len(g.tasks))
	var avail idHeap
	for _, id := range g.ids {
		for _, b := range g.tasks[id].BlockedBy {
			if _, ok := g.tasks[b]; ok {
				indeg[id]++
			}
		}
		if indeg[id] == 0 {
			avail = append(avail, id)
		}
	}
	heap.Init(&avail)
	order := make([]ID, 0, len(g.ids))
	for avail.Len() > 0 {
		id := heap.Pop(&avail).(ID)
		order = append(order, id)
		for _, d := range g.dependents[id] {
			if _, ok := g.tasks[d]; !ok {
				continue
			}
			if indeg[d]--; indeg[d] == 0 {
				heap.Push(&avail, d)
			}
		}
	}
	if len(order) < len(g.ids) {
		return nil, &CycleError{Path: g.findCycle()}
	}
	return order, nil
}

// Waves groups the unfinished tasks (pending or in progress) by when they
// could run, with as many agents as there are tasks: wave 0 is what is in
// progress or ready now, wave k what becomes ready once the waves before
// it are done. The number of waves is the fewest rounds the remaining work
// needs; the widest wave, the most agents that can be busy at once. A task
// that waits on a missing blocker, or on such a task, is in no wave: it
// cannot start until that task exists (Resolve lists it in Board.Missing).
// Nor is a task that waits on a failed or cancelled one, or on such a
// task: it is stranded (Board.Stranded) until its cause is reopened.
// Each wave is sorted by id. A cycle among unfinished tasks is a
// *CycleError. Linear in the size of the graph.
func Waves(tasks []Task) ([][]ID, error) {
	depth, _, err := lookAhead(tasks)
	if err != nil {
		return nil, err
	}
	var waves [][]ID
	for _, id := range slices.Sorted(maps.Keys(depth)) {
		d := depth[id].n - 1
		for len(waves) <= d {
			waves = append(waves, nil)
		}
		waves[d] = append(waves[d], id)
	}
	return waves, nil
}

// CriticalPath returns the longest chain of unfinished tasks, each blocked
// by the one before it: however many agents work, the remaining work takes
// at least this many steps one after another. Among chains of equal length
// it picks the one that ends at the lowest id and, at each step back, the
// lowest blocker. Tasks that cannot start (see Waves) are left out; nil if
// nothing is unfinished. A cycle among unfinished tasks is a *CycleError.
func CriticalPath(tasks []Task) ([]ID, error) {
	depth, order, err := lookAhead(tasks)
	if err != nil {
		return nil, err
	}
	var end ID
	for _, id := range order {
		if end == 0 || depth[id].n > depth[end].n || depth[id].n == depth[end].n && id < end {
			end = id
		}
	}
	var path []ID
	for id := end; id != 0; id = depth[id].prev {
		path = append(path, id)
	}
	slices.Reverse(path)
	return path, nil
}

// step is a task's place in the remaining work: n is the length of the
// longest chain of unfinished tasks that ends with it, prev its blocker on
// that chain (0 for none).
type step struct {
	n    int
	prev ID
}

// lookAhead computes the step of every unfinished task that can start, in
// topological order (lowest id first among the available).
//
// It reads tasks in place, through an index of its own, instead of the
// graph graphOf builds, which copies every task (a third of `taskgraph
// graph --json`'s time at 100,000 tasks, which calls it twice). A blocker
// listed twice counts twice as a blocker and twice as a dependent, which
// cancel out.
func lookAhead(tasks []Task) (map[ID]step, []ID, error) {
	g := lookAheadIndex{tasks: make(map[ID]*Task, len(tasks)), dependents: make(map[ID][]ID)}
	for i := range tasks {
		if _, dup := g.tasks[tasks[i].ID]; !dup {
			g.ids = append(g.ids, tasks[i].ID)
		}
		g.tasks[tasks[i].ID] = &tasks[i] // the last of an id, as graphOf keeps it
	}
	slices.Sort(g.ids)
	for _, id := range g.ids {
		for _, b := range g.tasks[id].BlockedBy {
			g.dependents[b] = append(g.dependents[b], id)
		}
	}
	unfinished := func(id ID) bool {
		t := g.tasks[id]
		return t != nil && (t.Status == Pending || t.Status == InProgress)
	}
	// What a task waits on: its blockers, and in place of one completed
	// out of order (Rules.OutOfOrder), that one's own blockers that are
	// not completed, which it counts as unfinished until (through).
	var waits, through []ID
	waitsOn := func(t *Task) []ID {
		waits, through = waits[:0], through[:0]
		for _, b := range t.BlockedBy {
			if bt := g.tasks[b]; bt != nil && bt.Status == Completed {
				for _, bb := range bt.BlockedBy {
					if bbt := g.tasks[bb]; bbt == nil || bbt.Status != Completed {
						through = append(through, bb)
					}
				}
				continue
			}
			waits = append(waits, b)
		}
		return append(waits, through...)
	}
	// A task can start once its blockers exist and every unfinished one
	// can start: count the unfinished blockers, and mark as stuck what
	// waits on a missing task, or on a failed or cancelled one.
	indeg := map[ID]int{}
	stuck := map[ID]bool{}
	var avail idHeap
	total := 0
	for _, id := range g.ids {
		if !unfinished(id) {
			continue
		}
		total++
		for i, b := range waitsOn(g.tasks[id]) {
			switch {
			case g.tasks[b] == nil, g.tasks[b].Status.ended():
				stuck[id] = true
			case unfinished(b):
				indeg[id]++
				if i >= len(waits) { // not its blocker: a dependent of it all the same
					g.dependents[b] = append(g.dependents[b], id)
				}
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
			for _, b := range slices.Sorted(slices.Values(waitsOn(g.tasks[id]))) {
				if bs, ok := depth[b]; ok && bs.n+1 > s.n {
					s = step{n: bs.n + 1, prev: b}
				}
			}
			depth[id] = s
			order = append(order, id)
		}
		for _, d := range g.dependents[id] {
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
		return nil, nil, &CycleError{Path: graphOf(tasks).findCycle()}
	}
	return depth, order, nil
}

// lookAheadIndex is what lookAhead reads tasks by: each id's task (the
// caller's), the ids in order, and each blocker's dependents.
type lookAheadIndex struct {
	tasks      map[ID]*Task
	ids        []ID
	dependents map[ID][]ID
}

// lessHeap is a container/heap of values that order themselves: the
// resolver's ids, and the graph index's ready queue.
type lessHeap[T interface{ less(T) bool }] []T

type idHeap = lessHeap[ID]

//lint:ignore U1000 used through lessHeap's constraint, which staticcheck does not follow
func (a ID) less(b ID) bool { return a < b }

func (h lessHeap[T]) Len() int           { return len(h) }
func (h lessHeap[T]) Less(i, j int) bool { return h[i].less(h[j]) }
func (h lessHeap[T]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *lessHeap[T]) Push(x any)        { *h = append(*h, x.(T)) }
func (h *lessHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

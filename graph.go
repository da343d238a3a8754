// This file holds the graph index: the in-memory task graph that both
// stores keep and the resolver builds, with its reverse edges, key index,
// ClaimNext heap and stranded tasks, and the check that refuses a write
// whose new edges would close a cycle. Nothing here does I/O.

package taskgraph

import (
	"cmp"
	"container/heap"
	"maps"
	"slices"
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/graphpath"
	"github.com/taskgraph-dev/taskgraph/internal/jsonvalue"
)

// graph is an indexed, in-memory task graph: the state of a MemStore and the
// cache of a FileStore. Tasks are stored as written (Blocks is not kept);
// dependents is the reverse index that Blocks and completions are derived
// from, and ready is a lazily cleaned min-heap of ids that may be ready.
type graph struct {
	tasks      map[ID]*Task
	ids        []ID              // sorted ids of tasks
	nodes      []node            // nodes[i] is task ids[i], or nil after a put or remove amid the ids (see walk)
	dependents map[ID][]ID       // blocker -> sorted ids whose BlockedBy names it (even if the blocker is missing)
	maxID      ID                // highest id ever seen, including the high-water mark of deleted ids
	ready      readyHeap         // candidates for ClaimNext, by (priority, id); validated on use
	queued     map[ID]readyEntry // the newest entry of each id in ready
	// alloc, if set, gives the first of n new ids (FileStore.allocator);
	// else they follow the highest id ever seen.
	alloc    func(g *graph, n int) (ID, error)
	leased   map[ID]bool                // in_progress tasks with a lease
	deferred map[ID]bool                // pending tasks with a NotBefore, past or to come
	running  map[ID]bool                // in_progress tasks
	limits   map[string]int             // the concurrency limits by label (Limiter); nil: none
	liveness map[string]LivenessDefault // the liveness defaults by label (LivenessDefaulter); nil: none
	approval ApprovalPolicy             // which new tasks need approval (ApprovalPolicer)
	byLimit  *limitQueues               // the ready tasks split by the limited labels they carry; nil until a ClaimNext needs it
	broken   map[ID]error               // ids whose file exists but is corrupt (FileStore only)
	keys     map[string][]ID            // key -> sorted ids of the tasks with it (more than one only if hand-edited)
	children map[ID][]ID                // parent -> sorted ids of the tasks that name it (Task.Parent), even if it is missing
	// early holds the completed tasks out of order (Rules.OutOfOrder):
	// they do not count as completed for their dependents. Empty but
	// after a merge or a hand edit, so readiness checks it only then.
	early map[ID]bool
	ended int // failed or cancelled tasks: while there are none, nothing is stranded
	// backward counts edges whose blocker has the higher id. While it is
	// zero, ids are a topological order, and a new edge from a lower to a
	// higher id cannot close a cycle: the common case needs no search.
	backward int
	// edges and labels count the BlockedBy ids and the labels of the
	// tasks: what a board of them all copies into its arena.
	edges, labels int
}

// Slabs: tasks that arrive together — a Load (Rules.Load), a snapshot
// (decodeSnapshot), a cold scan, graphOf — are allocated side by side in
// one []Task, so that copying a board of them (viewInto) reads memory in
// order instead of gathering tasks of ~450 bytes from all over the heap.
// A stored task is never written in place (a put replaces the pointer),
// so no write reaches a slab's other tasks. The cost is memory: a slab
// lives while any one of its tasks is stored, and with it the old
// versions of the others, and what they point to. The worst case, every
// task of a batch but one rewritten or deleted, holds the batch a second
// time: at most what the batch took when it arrived, for the few bulk
// arrivals of a store's life; writes allocate each task alone.

// node is a task as the graph holds it, beside its id in graph.ids, with
// its dependents (as in graph.dependents): Board and List copy a hundred
// thousand tasks, and walking a slice in order costs them a fraction of a
// map lookup or two per task.
type node struct {
	t          *Task
	dependents []ID
	st         Status // t.Status, beside the pointer: a board's first pass reads no task it does not classify further
	parent     bool   // some task names it as its parent (graph.children): a walk down a tree looks its children up only then
	// pri is t.Priority when exact (a stored priority is one of five):
	// a walk down a tree passes over the less urgent tasks without
	// reading them (nextUnder).
	pri   int8
	exact bool
}

// set makes t the node's task.
func (n *node) set(t *Task) {
	n.t, n.st = t, t.Status
	n.pri = int8(t.Priority)
	n.exact = Priority(n.pri) == t.Priority
}

func newGraph() *graph {
	return &graph{
		tasks:      make(map[ID]*Task),
		dependents: make(map[ID][]ID),
		queued:     make(map[ID]readyEntry),
		leased:     make(map[ID]bool),
		deferred:   make(map[ID]bool),
		running:    make(map[ID]bool),
		broken:     make(map[ID]error),
		keys:       make(map[string][]ID),
		children:   make(map[ID][]ID),
		early:      make(map[ID]bool),
	}
}

// put inserts or replaces a task, keeping every index current.
func (g *graph) put(t *Task) {
	old := g.tasks[t.ID]
	fresh := len(g.nodes) == len(g.ids)
	i, _ := g.search(t.ID)
	if old != nil {
		g.backward -= countBackward(old)
		g.edges, g.labels = g.edges-len(old.BlockedBy), g.labels-len(old.Labels)
		for _, b := range old.BlockedBy {
			g.setDependents(b, removeSorted(g.dependents[b], t.ID))
		}
		g.unkey(old)
		g.unparent(old)
		if old.Status.ended() {
			g.ended--
		}
	} else {
		g.ids = slices.Insert(g.ids, i, t.ID)
		switch {
		case !fresh:
		case i == len(g.ids)-1:
			g.nodes = append(g.nodes, node{dependents: g.dependents[t.ID], parent: len(g.children[t.ID]) > 0})
		default:
			fresh, g.nodes = false, nil
		}
	}
	if fresh {
		g.nodes[i].set(t)
	}
	for _, b := range t.BlockedBy {
		g.setDependents(b, insertSorted(g.dependents[b], t.ID))
	}
	g.index(t)
	g.touch(t.ID)
	g.settle(t.ID)
	if old == nil || (old.Status == Completed) != (t.Status == Completed) {
		for _, d := range g.dependents[t.ID] {
			g.touch(d)
			g.settle(d)
		}
	}
}

// settle records whether task id is completed out of order
// (Rules.OutOfOrder), and queues its dependents for ClaimNext when that
// changed: they are ready only while it is not. A task is out of order
// only when a blocker of its own is unfinished or missing, so a put of
// the task, or of a blocker that completes, starts, exists or goes,
// settles it.
func (g *graph) settle(id ID) {
	t := g.tasks[id]
	early := t != nil && t.Status == Completed && len(Rules.OutOfOrder(t, g.status)) > 0
	if early == g.early[id] {
		return
	}
	if early {
		g.early[id] = true
	} else {
		delete(g.early, id)
	}
	for _, d := range g.dependents[id] {
		g.touch(d)
	}
}

// done reports whether task id, which the graph holds with status st,
// counts as completed for the tasks it blocks: completed, and not out of
// order.
func (g *graph) done(id ID, st Status) bool {
	return st == Completed && (len(g.early) == 0 || !g.early[id])
}

// isEarly is the Rulebook's question "is this completed task out of
// order?" (Rules.Blocked).
func (g *graph) isEarly(id ID) bool { return g.early[id] }

// inProgress reports whether task id is in progress.
func (g *graph) inProgress(id ID) bool {
	t := g.tasks[id]
	return t != nil && t.Status == InProgress
}

// index enters t in the indexes of one task each — all but the ids, the
// nodes, the dependents and the ready heap, which put and load keep each
// their own way. An older version of t must be out of them already.
func (g *graph) index(t *Task) {
	delete(g.broken, t.ID)
	g.backward += countBackward(t)
	g.edges, g.labels = g.edges+len(t.BlockedBy), g.labels+len(t.Labels)
	g.tasks[t.ID] = t
	if t.Status.ended() {
		g.ended++
	}
	if t.Key != "" {
		g.keys[t.Key] = insertSorted(g.keys[t.Key], t.ID)
	}
	if t.Parent != 0 {
		g.children[t.Parent] = insertSorted(g.children[t.Parent], t.ID)
		g.markParent(t.Parent)
	}
	g.maxID = max(g.maxID, t.ID)
	if t.Status == InProgress && !t.LapsesAt().IsZero() {
		g.leased[t.ID] = true
	} else {
		delete(g.leased, t.ID)
	}
	if t.Status == Pending && !t.NotBefore.IsZero() {
		g.deferred[t.ID] = true
	} else {
		delete(g.deferred, t.ID)
	}
	if t.Status == InProgress {
		g.running[t.ID] = true
	} else {
		delete(g.running, t.ID)
	}
}

// load puts tasks, in increasing id order, into a graph that holds none:
// the graph a put of each would build, built at once (the ids, nodes and
// dependents lists sized once, the ready heap built once) rather than
// grown a hundred thousand times. Tasks in another order, or a graph that
// holds some, take the puts.
func (g *graph) load(tasks []*Task) {
	inOrder := len(g.tasks) == 0 && len(tasks) > 0
	for i := 1; inOrder && i < len(tasks); i++ {
		inOrder = tasks[i-1].ID < tasks[i].ID
	}
	if !inOrder {
		for _, t := range tasks {
			g.put(t)
		}
		return
	}
	n := len(tasks)
	g.ids, g.nodes = make([]ID, n), make([]node, n)
	for i, t := range tasks {
		g.ids[i] = t.ID
	}
	// The dependents lists, sorted and without repeats as insertSorted
	// keeps them, are cut from one slab: each blocker's edges are
	// counted (by its node, or by the map for a blocker that is not
	// among the tasks), then each dependent appended in id order.
	count := make([]int, n)
	missing := make(map[ID]int)
	edges := 0
	for _, t := range tasks {
		edges += len(t.BlockedBy)
		for _, b := range t.BlockedBy {
			if j, ok := g.search(b); ok {
				count[j]++
			} else {
				missing[b]++
			}
		}
	}
	slab := make([]ID, 0, edges)
	cut := func(c int) []ID {
		l := slab[:0:c]
		slab = slab[c:c]
		return l
	}
	for j, c := range count {
		g.nodes[j].dependents = cut(c)
	}
	others := make(map[ID][]ID, len(missing))
	for b, c := range missing {
		others[b] = cut(c)
	}
	add := func(list []ID, id ID) []ID {
		if len(list) > 0 && list[len(list)-1] == id {
			return list // named twice
		}
		return append(list, id)
	}
	for _, t := range tasks {
		for _, b := range t.BlockedBy {
			if j, ok := g.search(b); ok {
				g.nodes[j].dependents = add(g.nodes[j].dependents, t.ID)
			} else {
				others[b] = add(others[b], t.ID)
			}
		}
	}
	g.dependents = make(map[ID][]ID, n)
	for j := range g.nodes {
		ds := &g.nodes[j].dependents
		if len(*ds) == 0 {
			*ds = nil
		} else {
			*ds = slices.Clip(*ds) // an append by a later put copies
			g.dependents[g.ids[j]] = *ds
		}
	}
	for b, ds := range others {
		g.dependents[b] = slices.Clip(ds)
	}
	g.tasks = make(map[ID]*Task, n)
	for i, t := range tasks {
		g.nodes[i].set(t)
		g.index(t)
	}
	for _, t := range tasks { // once every blocker is in
		if t.Status == Completed && len(Rules.OutOfOrder(t, g.status)) > 0 {
			g.early[t.ID] = true
		}
	}
	g.requeue()
}

// remove deletes a task from every index.
func (g *graph) remove(id ID) {
	delete(g.broken, id)
	t := g.tasks[id]
	if t == nil {
		return
	}
	g.backward -= countBackward(t)
	g.edges, g.labels = g.edges-len(t.BlockedBy), g.labels-len(t.Labels)
	for _, b := range t.BlockedBy {
		g.setDependents(b, removeSorted(g.dependents[b], id))
	}
	g.unkey(t)
	g.unparent(t)
	if t.Status.ended() {
		g.ended--
	}
	delete(g.tasks, id)
	delete(g.leased, id)
	delete(g.deferred, id)
	delete(g.running, id)
	delete(g.early, id)
	i, _ := g.search(id)
	g.ids = slices.Delete(g.ids, i, i+1)
	if i == len(g.ids) && len(g.nodes) == i+1 {
		g.nodes = slices.Delete(g.nodes, i, i+1)
	} else {
		g.nodes = nil
	}
	for _, d := range g.dependents[id] { // they lost a blocker
		g.settle(d)
	}
}

// walk returns the nodes of the tasks in id order, building them again if
// a put or remove amid the ids dropped them. Keeping them current there
// would shift them at each such put: a load out of id order would be
// quadratic in the nodes, where building them again costs one walk.
func (g *graph) walk() []node {
	if len(g.nodes) != len(g.ids) {
		g.nodes = make([]node, len(g.ids))
		for i, id := range g.ids {
			g.nodes[i] = node{dependents: g.dependents[id], parent: len(g.children[id]) > 0}
			g.nodes[i].set(g.tasks[id])
		}
	}
	return g.nodes
}

// search returns where id is, or would be inserted, in g.ids, and whether
// it is there.
func (g *graph) search(id ID) (int, bool) { return searchIDs(g.ids, id) }

// searchIDs returns where id is, or would be inserted, in the sorted ids,
// and whether it is there. Ids are drawn in sequence, so a new one mostly
// comes last and the rest are mostly dense: it tries both before a binary
// search.
func searchIDs(ids []ID, id ID) (int, bool) {
	n := len(ids)
	if n == 0 || ids[n-1] < id {
		return n, false
	}
	if i := id - ids[0]; 0 <= i && i < ID(n) && ids[i] == id {
		return int(i), true
	}
	return slices.BinarySearch(ids, id)
}

// setDependents makes ds the dependents of b, in the map and in b's node.
func (g *graph) setDependents(b ID, ds []ID) {
	if len(ds) == 0 {
		delete(g.dependents, b)
		ds = nil
	} else {
		g.dependents[b] = ds
	}
	if len(g.nodes) != len(g.ids) {
		return // dropped: walk builds them from the map
	}
	if i, ok := g.search(b); ok {
		g.nodes[i].dependents = ds
	}
}

// unkey drops t from the key index.
func (g *graph) unkey(t *Task) {
	if t.Key == "" {
		return
	}
	if ids := removeSorted(g.keys[t.Key], t.ID); len(ids) > 0 {
		g.keys[t.Key] = ids
	} else {
		delete(g.keys, t.Key)
	}
}

// unparent drops t from the children index.
func (g *graph) unparent(t *Task) {
	if t.Parent == 0 {
		return
	}
	if ids := removeSorted(g.children[t.Parent], t.ID); len(ids) > 0 {
		g.children[t.Parent] = ids
	} else {
		delete(g.children, t.Parent)
	}
	g.markParent(t.Parent)
}

// markParent makes p's node say whether p has children, as the children
// index does.
func (g *graph) markParent(p ID) {
	if len(g.nodes) != len(g.ids) {
		return // dropped: walk builds them from the map
	}
	if i, ok := g.search(p); ok {
		g.nodes[i].parent = len(g.children[p]) > 0
	}
}

// keyed is the Rulebook's question "which task has this key?".
func (g *graph) keyed(key string) (ID, bool) {
	if ids := g.keys[key]; len(ids) > 0 {
		return ids[0], true
	}
	return 0, false
}

// markBroken records that id has a file that cannot be used.
func (g *graph) markBroken(id ID, err error) {
	g.remove(id)
	g.broken[id] = err
	g.maxID = max(g.maxID, id)
}

// firstID returns the first of n ids for new tasks.
func (g *graph) firstID(n int) (ID, error) {
	if g.alloc != nil {
		return g.alloc(g, n)
	}
	return g.maxID + 1, nil
}

// touch queues id for ClaimNext if it is ready now. An entry records the
// claim order's key it was queued with: a task whose priority changed is
// queued again, and its old entry is discarded when it comes up.
func (g *graph) touch(id ID) {
	if !g.isReady(id) {
		return
	}
	t := g.tasks[id]
	e := entryOf(t)
	if g.byLimit != nil {
		if g.byLimit.add(t, e); g.byLimit.size > 2*len(g.tasks)+1024 {
			g.byLimit = nil // stale entries outnumber the tasks: built afresh when next needed
		}
	}
	if q, ok := g.queued[id]; ok && q == e {
		return
	}
	g.queued[id] = e
	heap.Push(&g.ready, e)
	if len(g.ready) > 2*len(g.tasks)+1024 {
		g.requeue() // stale entries outnumber the tasks: start afresh
	}
}

// requeue rebuilds the ready heap from the tasks.
func (g *graph) requeue() {
	g.ready, g.queued = g.ready[:0], make(map[ID]readyEntry)
	g.byLimit = nil
	for _, id := range g.ids {
		if g.isReady(id) {
			e := entryOf(g.tasks[id])
			g.queued[id] = e
			g.ready = append(g.ready, e)
		}
	}
	heap.Init(&g.ready)
}

// live reports whether a heap entry stands for a ready task with the key
// it was queued with.
func (g *graph) live(e readyEntry) bool {
	t := g.tasks[e.id]
	return t != nil && entryOf(t) == e && g.isReady(e.id)
}

// nextReady returns the first ready task in claim order that is not
// deferred at now, discarding stale heap entries: O(log n), and O(log n)
// more for each deferred task ahead of it, which it puts back.
func (g *graph) nextReady(now time.Time) (ID, bool) {
	var deferred []readyEntry
	defer func() {
		for _, e := range deferred {
			heap.Push(&g.ready, e)
		}
	}()
	for g.ready.Len() > 0 {
		e := g.ready[0]
		if g.live(e) {
			if !g.tasks[e.id].Deferred(now) {
				return e.id, true
			}
			deferred = append(deferred, heap.Pop(&g.ready).(readyEntry))
			continue
		}
		heap.Pop(&g.ready)
		if q, ok := g.queued[e.id]; ok && q == e {
			delete(g.queued, e.id)
		}
	}
	return 0, false
}

// nextReadyWith is nextReady for the tasks that carry every label of the
// sorted set labels and none of full (see nextClaim). It scans the ready
// tasks: O(ready).
func (g *graph) nextReadyWith(labels []string, full map[string]bool, now time.Time) (ID, bool) {
	var best readyEntry
	found := false
	for _, e := range g.ready {
		if !found || e.less(best) {
			if t := g.tasks[e.id]; g.live(e) && hasLabels(t.Labels, labels) && !t.Deferred(now) && !heldBack(t, full) {
				best, found = e, true
			}
		}
	}
	return best.id, found
}

func (g *graph) isReady(id ID) bool { return g.readyTask(g.tasks[id]) }

// blockersOf reports whether every blocker of the task at g.nodes[i] (in
// a walk) exists and is completed, and whether it names one that does not
// exist: one look at each.
func (g *graph) blockersOf(i int) (done, gone bool) {
	done = true
	for _, b := range g.nodes[i].t.BlockedBy {
		if j := i - int(g.ids[i]-b); 0 <= j && j < len(g.ids) && g.ids[j] == b {
			done = done && g.done(b, g.nodes[j].st) // near, as near looks
			continue
		}
		bt := g.tasks[b]
		if bt == nil {
			return false, true
		}
		done = done && g.done(b, bt.Status)
	}
	return done, false
}

// near returns task id, or nil, for a walk at g.nodes[i]. Ids are mostly
// dense, and a task mostly names blockers near it: it looks first where a
// dense run from i would put id, which spares the map's cache misses.
func (g *graph) near(id ID, i int) *Task {
	if j := i - int(g.ids[i]-id); 0 <= j && j < len(g.ids) && g.ids[j] == id {
		return g.nodes[j].t
	}
	return g.tasks[id]
}

// readyTask reports whether t, which the graph holds (or nil), is ready:
// pending, not awaiting approval, every blocker done.
func (g *graph) readyTask(t *Task) bool {
	if t == nil || t.Status != Pending || t.AwaitingApproval() {
		return false
	}
	for _, b := range t.BlockedBy {
		if bt := g.tasks[b]; bt == nil || !g.done(b, bt.Status) {
			return false
		}
	}
	return true
}

// timedTasks returns a copy of every claim with a lease and every
// pending task with a NotBefore, for a watch to start tracking from.
func (g *graph) timedTasks() []Task {
	var out []Task
	for _, set := range []map[ID]bool{g.leased, g.deferred} {
		for id := range set {
			out = append(out, g.view(id))
		}
	}
	return out
}

// view returns a copy of task id with Blocks derived from the reverse index.
func (g *graph) view(id ID) Task {
	var v Task
	var a arena
	viewInto(&v, node{t: g.tasks[id], dependents: g.dependents[id]}, &a)
	return v
}

// arena hands out id and label slices from one allocation each, so that
// copying a whole board costs a few allocations instead of three per
// task. Each slice it hands out has its capacity cut to its length: an
// append by the caller copies instead of writing over the next one.
type arena struct {
	ids  []ID
	strs []string
}

func (a *arena) copyIDs(ids []ID) []ID {
	if len(ids) == 0 {
		return nil
	}
	return carve(&a.ids, ids)
}

func (a *arena) copyStrings(s []string) []string {
	if len(s) == 0 {
		return slices.Clone(s) // nil stays nil, empty stays empty: no allocation
	}
	return carve(&a.strs, s)
}

// carve appends s to *pool (a new one if it has no room) and returns the
// copy.
func carve[T any](pool *[]T, s []T) []T {
	if cap(*pool)-len(*pool) < len(s) {
		*pool = make([]T, 0, max(len(s), 256))
	}
	start := len(*pool)
	*pool = append(*pool, s...)
	return (*pool)[start:len(*pool):len(*pool)]
}

// viewInto makes *v a copy of n's task that shares nothing mutable with
// the graph, with Blocks from its dependents. (In place: a board copies a
// hundred thousand tasks, each a few hundred bytes.)
func viewInto(v *Task, n node, a *arena) {
	*v = *n.t
	v.BlockedBy = a.copyIDs(v.BlockedBy)
	v.Metadata = jsonvalue.Clone(v.Metadata)
	v.Labels = a.copyStrings(v.Labels)
	v.Notes = slices.Clone(v.Notes)
	v.History = slices.Clone(v.History)
	// Every id in dependents is a task that exists: remove drops its edges.
	v.Blocks = a.copyIDs(n.dependents)
	if x := v.Extra; x != nil && x.keys != nil {
		// Write keys are the store's, not the task's.
		y := *x
		y.keys = nil
		v.Extra = &y
		v.tidy()
	}
}

// list returns the tasks that sel selects, by id.
func (g *graph) list(sel Selection) []Task {
	all := g.walk()
	nodes := all
	var heldBack map[ID]bool
	if sel.ReadyOnly {
		heldBack = g.limitedAt(sel)
	}
	if !sel.Empty() {
		nodes = nil
		for _, n := range all {
			t := n.t
			if sel.Match(t, sel.ReadyOnly && g.readyTask(t) && !t.Deferred(sel.Now) && !heldBack[t.ID]) &&
				(sel.Under == 0 || g.under(t.ID, sel.Under)) {
				nodes = append(nodes, n)
				if len(nodes) == sel.Limit {
					break
				}
			}
		}
	}
	// One arena for the copies' slices, big enough for them all.
	var nIDs, nStrs int
	for _, n := range nodes {
		nIDs += len(n.t.BlockedBy) + len(n.dependents)
		nStrs += len(n.t.Labels)
	}
	a := arena{ids: make([]ID, 0, nIDs), strs: make([]string, 0, nStrs)}
	out := make([]Task, len(nodes))
	for i, n := range nodes {
		viewInto(&out[i], n, &a)
	}
	return out
}

// strandedBy maps each stranded task — pending, with a failed or
// cancelled blocker or a stranded pending one — to the lowest failed or
// cancelled task it waits on. A completed task out of order passes it on
// (it waits on its blockers again), without being stranded itself.
// Causes are taken by increasing id, and the tasks each reaches are
// marked once, so it is linear in the graph.
func (g *graph) strandedBy() map[ID]ID {
	if g.ended == 0 {
		return nil
	}
	var out map[ID]ID
	var passed map[ID]bool // the completed tasks out of order reached
	var stack []ID
	nodes := g.walk()
	for i, id := range g.ids {
		if !nodes[i].t.Status.ended() {
			continue
		}
		stack = append(stack[:0], id)
		for len(stack) > 0 {
			n := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, d := range g.dependents[n] {
				if g.early[d] && !passed[d] {
					if passed == nil {
						passed = make(map[ID]bool)
					}
					passed[d] = true
					stack = append(stack, d)
					continue
				}
				if dt := g.tasks[d]; dt == nil || dt.Status != Pending || out[d] != 0 {
					continue // marked already: by a lower cause, and so is all it reaches
				}
				if out == nil {
					out = make(map[ID]ID)
				}
				out[d] = id
				stack = append(stack, d)
			}
		}
	}
	return out
}

// The lists of a Board, in the order of its fields.
const (
	listReady = iota
	listAwaiting
	listDeferred
	listLimited
	listBlocked
	listStranded
	listInProgress
	listCompleted
	listFailed
	listCancelled
	listCount
	listNone = listCount // not selected
)

// sorting is the graph's tasks sorted into a Board's lists, before any is
// copied out.
type sorting struct {
	list       []uint8 // by node: its list, or listNone
	counts     [listCount]int
	nIDs, nStr int       // what the copies need, for the arena
	namesGone  []int     // the blocked tasks (by node) that name a blocker that does not exist
	strandedBy map[ID]ID // by task: the failed or cancelled task that strands it
}

// board partitions the graph, keeping in each list the tasks that sel
// selects.
func (g *graph) board(sel Selection) Board {
	nodes := g.walk()
	s := g.sort(nodes, sel)
	if sel.Limit > 0 && s.counts[listReady] > sel.Limit {
		s.keepFirstReady(nodes, sel.Limit)
	}
	if sel.Empty() {
		s.nIDs, s.nStr = 2*g.edges, g.labels
	}
	lists, missing, by := g.copyLists(nodes, &s)
	slices.SortFunc(lists[listReady], func(a, b Task) int { return Rules.ClaimOrder(&a, &b) })
	slices.SortFunc(lists[listLimited], func(a, b Task) int { return Rules.ClaimOrder(&a, &b) })
	slices.SortFunc(lists[listDeferred], func(a, b Task) int {
		if c := a.NotBefore.Compare(b.NotBefore); c != 0 {
			return c
		}
		return Rules.ClaimOrder(&a, &b)
	})
	return Board{
		Ready: lists[listReady], AwaitingApproval: lists[listAwaiting], Deferred: lists[listDeferred], Limited: lists[listLimited],
		Blocked: lists[listBlocked], Stranded: lists[listStranded], InProgress: lists[listInProgress],
		Completed: lists[listCompleted], Failed: lists[listFailed], Cancelled: lists[listCancelled],
		StrandedBy: by, Missing: missing,
	}
}

// sort decides the list of each node, and whether sel selects it.
func (g *graph) sort(nodes []node, sel Selection) sorting {
	s := sorting{list: make([]uint8, len(nodes)), strandedBy: g.strandedBy()}
	heldBack := g.limitedAt(sel)
	every := sel.Empty() // spares a call of Match per task
	for i, n := range nodes {
		t, id := n.t, g.ids[i]
		k := uint8(listReady)
		switch n.st {
		case InProgress:
			k = listInProgress
		case Completed:
			k = listCompleted
		case Failed:
			k = listFailed
		case Cancelled:
			k = listCancelled
		default:
			done, gone := g.blockersOf(i)
			switch {
			case t.AwaitingApproval():
				k = listAwaiting
			case done && t.Deferred(sel.Now):
				k = listDeferred
			case done && heldBack[id]:
				k = listLimited
			case done:
			case s.strandedBy[id] != 0:
				k = listStranded
			default:
				k = listBlocked
				if gone {
					s.namesGone = append(s.namesGone, i)
				}
			}
		}
		if !every && (!sel.Match(t, k == listReady) || sel.Under != 0 && !g.under(id, sel.Under) || sel.Limit > 0 && k != listReady && s.counts[k] == sel.Limit) {
			k = listNone
		} else {
			s.counts[k]++
			if !every {
				s.nIDs += len(t.BlockedBy) + len(n.dependents)
				s.nStr += len(t.Labels)
			}
		}
		s.list[i] = k
	}
	return s
}

// keepFirstReady keeps the limit ready tasks ClaimNext would take first.
func (s *sorting) keepFirstReady(nodes []node, limit int) {
	var rs []int
	for i, k := range s.list {
		if k == listReady {
			rs = append(rs, i)
		}
	}
	slices.SortStableFunc(rs, func(a, b int) int {
		return cmp.Compare(nodes[a].t.Priority, nodes[b].t.Priority)
	})
	for _, i := range rs[limit:] {
		s.list[i] = listNone
	}
	s.counts[listReady] = limit
}

// copyLists copies the selected tasks into their lists, cut from one
// backing array, and returns them with the blockers that do not exist of
// the blocked ones and the cause of each stranded one.
func (g *graph) copyLists(nodes []node, s *sorting) (lists [listCount][]Task, missing map[ID][]ID, by map[ID]ID) {
	total := 0
	for _, n := range s.counts {
		total += n
	}
	all := make([]Task, 0, total)
	for k := range lists {
		lists[k] = all[len(all) : len(all) : len(all)+s.counts[k]]
		all = all[:len(all)+s.counts[k]]
	}
	a := arena{ids: make([]ID, 0, s.nIDs), strs: make([]string, 0, s.nStr)}
	namesGone := s.namesGone
	for i, n := range nodes {
		k := s.list[i]
		if k == listNone {
			continue
		}
		id := n.t.ID
		lists[k] = lists[k][:len(lists[k])+1]
		t := &lists[k][len(lists[k])-1]
		viewInto(t, n, &a)
		switch k {
		case listBlocked:
			if len(namesGone) == 0 || namesGone[0] != i {
				continue
			}
			namesGone = namesGone[1:]
			if _, m, _ := unfinished(t, g.status); len(m) > 0 {
				if missing == nil {
					missing = make(map[ID][]ID)
				}
				missing[id] = m
			}
		case listStranded:
			if by == nil {
				by = make(map[ID]ID)
			}
			by[id] = s.strandedBy[id]
		}
	}
	return lists, missing, by
}

// findCycle returns one cycle of the whole graph in execution order, or nil.
func (g *graph) findCycle() []ID {
	const (
		unseen = iota
		active
		done
	)
	state := make(map[ID]int, len(g.tasks))
	type frame struct {
		id   ID
		next int
	}
	for _, root := range g.ids {
		if state[root] != unseen {
			continue
		}
		// Walk blockedBy edges depth-first; an edge to an active node
		// closes a cycle.
		stack := []frame{{id: root}}
		state[root] = active
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			bs := g.tasks[f.id].BlockedBy
			if f.next == len(bs) {
				state[f.id] = done
				stack = stack[:len(stack)-1]
				continue
			}
			b := bs[f.next]
			f.next++
			if g.tasks[b] == nil {
				continue
			}
			switch state[b] {
			case unseen:
				state[b] = active
				stack = append(stack, frame{id: b})
			case active:
				// stack from b to top is b <- ... <- top (each blocked by
				// the next); in execution order that is b -> ... reversed.
				i := len(stack) - 1
				for stack[i].id != b {
					i--
				}
				var path []ID
				for j := len(stack) - 1; j >= i; j-- {
					path = append(path, stack[j].id)
				}
				// Start at the lowest id, so a cycle reads the same
				// however it was found.
				k := slices.Index(path, slices.Min(path))
				path = append(path[k:], path[:k]...)
				return append(path, path[0])
			}
		}
	}
	return nil
}

// readyEntry is a task queued for ClaimNext, with its key in the claim
// order (Rules.ClaimOrder) as it was queued.
type readyEntry struct {
	pri     Priority
	created int64 // CreatedAt as createdKey orders it
	id      ID
}

func entryOf(t *Task) readyEntry {
	return readyEntry{pri: t.Priority, created: createdKey(t.CreatedAt), id: t.ID}
}

func (e readyEntry) less(o readyEntry) bool { return e.compare(o) < 0 }

// compare is the claim order (Rules.ClaimOrder) on the entries' keys.
func (e readyEntry) compare(o readyEntry) int {
	return cmp.Or(cmp.Compare(e.pri, o.pri), cmp.Compare(e.created, o.created), cmp.Compare(e.id, o.id))
}

type readyHeap = lessHeap[readyEntry]

func countBackward(t *Task) int {
	n := 0
	for _, b := range t.BlockedBy {
		if b > t.ID {
			n++
		}
	}
	return n
}

func insertSorted(s []ID, id ID) []ID {
	// Ids mostly arrive in increasing order: appending is the common case.
	if n := len(s); n == 0 || s[n-1] < id {
		return append(s, id)
	}
	i, found := slices.BinarySearch(s, id)
	if found {
		return s
	}
	return slices.Insert(s, i, id)
}

func removeSorted(s []ID, id ID) []ID {
	i, found := slices.BinarySearch(s, id)
	if !found {
		return s
	}
	return slices.Delete(s, i, i+1)
}

// overlay is a proposed set of changes over a graph, used to validate a
// mutation before anything is written: tasks maps an id to its new version
// (nil for a deletion).
type overlay struct {
	g     *graph
	tasks map[ID]*Task
	// added and removed dependents edges implied by the changed tasks
	addDeps map[ID][]ID
	rmDeps  map[ID]map[ID]bool
}

func newOverlay(g *graph, changed []*Task, deleted []ID) *overlay {
	o := &overlay{g: g, tasks: make(map[ID]*Task), addDeps: make(map[ID][]ID), rmDeps: make(map[ID]map[ID]bool)}
	edit := func(id ID, old, new []ID) {
		inOld, inNew := idSet(old), idSet(new)
		for _, b := range old {
			if !inNew(b) {
				if o.rmDeps[b] == nil {
					o.rmDeps[b] = make(map[ID]bool)
				}
				o.rmDeps[b][id] = true
			}
		}
		for _, b := range new {
			if !inOld(b) {
				o.addDeps[b] = append(o.addDeps[b], id)
			}
		}
	}
	for _, t := range changed {
		var old []ID
		if ot := g.tasks[t.ID]; ot != nil {
			old = ot.BlockedBy
		}
		edit(t.ID, old, t.BlockedBy)
		o.tasks[t.ID] = t
	}
	for _, id := range deleted {
		if ot := g.tasks[id]; ot != nil {
			edit(id, ot.BlockedBy, nil)
		}
		o.tasks[id] = nil
	}
	return o
}

func (o *overlay) task(id ID) *Task {
	if t, ok := o.tasks[id]; ok {
		return t
	}
	return o.g.tasks[id]
}

func (o *overlay) blockers(id ID) []ID {
	if t := o.task(id); t != nil {
		return t.BlockedBy
	}
	return nil
}

func (o *overlay) dependents(id ID) []ID {
	base := o.g.dependents[id]
	rm, add := o.rmDeps[id], o.addDeps[id]
	if len(rm) == 0 && len(add) == 0 {
		return base
	}
	out := make([]ID, 0, len(base)+len(add))
	for _, d := range base {
		if !rm[d] {
			out = append(out, d)
		}
	}
	return append(out, add...)
}

// checkNewEdges refuses the overlay if one of its new edges closes a cycle.
// Only cycles through a new edge are reported: a cycle a human wrote into
// the files by hand does not block unrelated writes.
func (o *overlay) checkNewEdges() error {
	if o.g.backward == 0 {
		fast := true
		for b, ds := range o.addDeps {
			for _, d := range ds {
				fast = fast && b < d
			}
		}
		if fast {
			return nil
		}
	}
	// In a fixed order, so that every store reports the same cycle.
	for _, b := range slices.Sorted(maps.Keys(o.addDeps)) {
		for _, d := range slices.Sorted(slices.Values(o.addDeps[b])) {
			if o.task(d) == nil || o.task(b) == nil {
				continue
			}
			if path := o.pathBetween(d, b); path != nil {
				return &CycleError{Path: append(path, d)}
			}
		}
	}
	return nil
}

// pathBetween returns an execution-order path from -> ... -> to, or nil.
// It searches forward from "from" along dependents and backward from "to"
// along blockers at once, always growing the smaller frontier, so adding an
// edge near either end of a long chain stays cheap.
func (o *overlay) pathBetween(from, to ID) []ID {
	if from == to {
		return []ID{from}
	}
	fwd := map[ID]ID{from: from} // node -> predecessor on the path from "from"
	bwd := map[ID]ID{to: to}     // node -> successor on the path to "to"
	ff, bf := []ID{from}, []ID{to}
	for len(ff) > 0 && len(bf) > 0 {
		var meet ID
		var met bool
		if len(ff) <= len(bf) {
			ff, meet, met = o.expand(ff, fwd, bwd, o.dependents)
		} else {
			bf, meet, met = o.expand(bf, bwd, fwd, o.blockers)
		}
		if met {
			return graphpath.Join(fwd, bwd, from, to, meet)
		}
	}
	return nil
}

// expand grows one side of pathBetween's search by a step along next,
// recording in seen where each new node came from; it stops at the first
// node the other side has seen.
func (o *overlay) expand(frontier []ID, seen, other map[ID]ID, next func(ID) []ID) ([]ID, ID, bool) {
	var grown []ID
	for _, n := range frontier {
		for _, d := range next(n) {
			if _, ok := seen[d]; ok || o.task(d) == nil {
				continue
			}
			seen[d] = n
			if _, ok := other[d]; ok {
				return nil, d, true
			}
			grown = append(grown, d)
		}
	}
	return grown, 0, false
}

// idSet returns a membership test for ids: a scan for a short list, a map
// for a long one, so that comparing two long lists stays linear.
func idSet(ids []ID) func(ID) bool {
	if len(ids) <= 32 {
		return func(id ID) bool { return slices.Contains(ids, id) }
	}
	m := make(map[ID]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return func(id ID) bool { return m[id] }
}

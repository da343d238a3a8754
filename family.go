// Parents and children: a task may name a parent, which is finished only
// when every child is. A child blocks its parent: the parent's BlockedBy
// holds it, so that readiness, stranding, cycles, the merge rules and the
// reference's own readers all treat the parent as waiting on its
// children, with no rule of their own; what only a tree has — the
// rollup, "under" — is derived on read from Task.Parent.

package taskgraph

import (
	"fmt"
	"slices"
	"time"
)

// Family returns nts with their parents made edges: a task that names a
// parent (NewTask.Parent, or NewTask.Under by id) blocks it (Blocks), and
// a task whose Under is the key of another task of the plan is added to
// that one's After. A parent named by the key of a task outside the
// plan is refused: name it by id. Create and Plan run it first.
func (Rulebook) Family(nts []NewTask) ([]NewTask, error) {
	out := slices.Clone(nts)
	index := map[string]int{}
	for i, nt := range out {
		if nt.Key != "" {
			index[nt.Key] = i
		}
	}
	for i, nt := range out {
		parent := nt.Parent
		if id, ok := parseIDRef(nt.Under); ok && nt.Under != "" {
			parent = id
		}
		if parent > 0 {
			out[i].Blocks = append(slices.Clip(nt.Blocks), parent)
			continue
		}
		if nt.Under == "" {
			continue
		}
		j, ok := index[nt.Under]
		if !ok || nt.Key == "" {
			return nil, prefixed(fmt.Sprintf("tasks[%d].", i), &InvalidError{Field: "under", Reason: fmt.Sprintf("%.80q is not the key of a task of this plan: name an existing parent by its id, \"#12\"", nt.Under)})
		}
		out[j].After = append(slices.Clip(out[j].After), nt.Key)
	}
	return out, nil
}

// underArgs validates NewTask's Parent and Under, before anything is read.
func underArgs(nt NewTask) error {
	if nt.Parent != 0 && nt.Under != "" {
		return &InvalidError{Field: "under", Reason: "give the parent once: Parent (an id) or Under (a reference)"}
	}
	if nt.Parent != 0 {
		return Rules.ID("parent", nt.Parent)
	}
	if nt.Under != "" {
		return afterRef("under", nt.Under)
	}
	return nil
}

// parentOf resolves the parent of nt, the new task self: its Parent, or
// what Under names (an id, or the key of a task of the same plan), which
// must exist and not be self.
func parentOf(self ID, nt NewTask, exists func(ID) error, key func(string) (ID, bool)) (ID, error) {
	parent, byKey := nt.Parent, false
	if nt.Under != "" {
		if id, ok := parseIDRef(nt.Under); ok {
			parent = id
		} else if id, ok := key(nt.Under); ok {
			parent, byKey = id, true // a task of the plan, or one that exists
		} else {
			return 0, &InvalidError{Field: "under", Reason: fmt.Sprintf("%.80q names no task: a parent is the key of a task of this plan, or an existing id as \"#12\"", nt.Under)}
		}
	}
	switch {
	case parent == 0:
		return 0, nil
	case parent == self:
		return 0, &InvalidError{Field: "parent", Reason: fmt.Sprintf("task %d cannot be its own parent", self)}
	case byKey:
		return parent, nil
	}
	return parent, exists(parent)
}

// Rollup is what the children of a task have come to, derived on read
// (never stored, so it cannot drift from them).
type Rollup struct {
	Total     int // children
	Done      int // completed
	Failed    int // failed
	Cancelled int // cancelled
	Stranded  int // pending, and unable to start (see Board.Stranded)
}

// RollupOf returns the rollup of task id's children among tasks, and the
// children by id. Pure; linear in the size of the graph.
func RollupOf(tasks []Task, id ID) (Rollup, []ID) {
	var r Rollup
	var children []ID
	stranded := graphOf(tasks).strandedBy()
	for _, t := range tasks {
		if t.Parent != id || id == 0 || t.ID == id {
			continue
		}
		children = append(children, t.ID)
		r.Total++
		switch {
		case t.Status == Completed:
			r.Done++
		case t.Status == Failed:
			r.Failed++
		case t.Status == Cancelled:
			r.Cancelled++
		case stranded[t.ID] != 0:
			r.Stranded++
		}
	}
	slices.Sort(children)
	return r, children
}

// String writes a rollup as "3 of 5 done, 1 failed, 1 stranded".
func (r Rollup) String() string {
	s := fmt.Sprintf("%d of %d done", r.Done, r.Total)
	for _, p := range []struct {
		n    int
		what string
	}{{r.Failed, "failed"}, {r.Cancelled, "cancelled"}, {r.Stranded, "stranded"}} {
		if p.n > 0 {
			s += fmt.Sprintf(", %d %s", p.n, p.what)
		}
	}
	return s
}

// under returns whether task id is a descendant of root in g (a child, a
// child's child, ...), following Parent links; a loop of links ends the
// walk.
func (g *graph) under(id, root ID) bool {
	for steps := 0; steps <= len(g.tasks); steps++ {
		t := g.tasks[id]
		if t == nil || t.Parent == 0 {
			return false
		}
		if t.Parent == root {
			return true
		}
		id = t.Parent
	}
	return false
}

// nextUnder returns the first ready task in claim order under root (see
// under) that carries labels, is not deferred at now and carries no label
// of full (see nextClaim): it walks the tasks under root by the children
// index, O(tasks under root), each task found by its node (children have
// mostly dense ids, side by side in the nodes: no lookup in a map for
// each but the parents). Each task has one parent, so a walk down from root meets a
// task twice only through a loop of parent links through root itself:
// root is then under itself, and its children are not walked again.
func (g *graph) nextUnder(root ID, labels []string, full map[string]bool, now time.Time) (ID, bool) {
	var best readyEntry
	found := false
	nodes := g.walk()
	walk := slices.Clone(g.children[root])
	for k := 0; k < len(walk); k++ { // in id order, mostly: the first found is mostly the best
		id := walk[k]
		i, ok := g.search(id)
		if !ok {
			continue
		}
		if nodes[i].parent && id != root {
			walk = append(walk, g.children[id]...)
		}
		if nodes[i].st != Pending || found && nodes[i].exact && Priority(nodes[i].pri) > best.pri {
			continue
		}
		t := nodes[i].t
		if e := entryOf(t); (!found || e.less(best)) && hasLabels(t.Labels, labels) && !t.Deferred(now) && !heldBack(t, full) && g.readyTask(t) {
			best, found = e, true
		}
	}
	return best.id, found
}

// Concurrency limits per label: at most N tasks carrying a label in
// progress at once, enforced on every way into in_progress, in every
// store, also when agents race.

package taskgraph

import (
	"container/heap"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// MaxLimit is the highest concurrency limit a label may be given.
const MaxLimit = 1_000_000

// Limiter is implemented by stores that cap how many tasks carrying a
// label may be in progress at once (all of this module's stores). It is
// an interface of its own so that Store implementations written before
// limits existed still compile.
//
// No way into in_progress — Claim, ClaimNext, Update, Load — leaves more
// than a label's limit of tasks carrying it in progress; a task whose
// lease has lapsed does not count. A ready task held back by a limit is
// in Board.Limited, and ClaimNext passes over it.
type Limiter interface {
	// SetLimit caps at n the tasks carrying label that may be in
	// progress at once; n = 0 removes the cap. Tasks already in
	// progress stay so.
	SetLimit(ctx context.Context, label string, n int) error
	// Limits returns every cap, by label (an empty map if none).
	Limits(ctx context.Context) (map[string]int, error)
}

// LimitArgs validates a limit: a label (see Labels) and n from 0 (no
// limit) to MaxLimit.
func (Rulebook) LimitArgs(label string, n int) error {
	if _, err := Rules.Labels("label", []string{label}); err != nil {
		return err
	}
	if n < 0 || n > MaxLimit {
		return &InvalidError{Field: "limit", Reason: fmt.Sprintf("%d is not between 0 (no limit) and %d", n, MaxLimit)}
	}
	return nil
}

// Limited returns a *LimitError if task t, entering in_progress, would
// leave more tasks carrying one of its labels in progress than the
// label's limit allows. held(label) counts the other tasks in progress
// that carry label and whose lease has not lapsed. Stores call it on
// every task a write moves into in_progress, after the rule that moves
// it, while no other write can move a task carrying a limited label
// into in_progress.
func (Rulebook) Limited(t *Task, limits map[string]int, held func(label string) int) error {
	for _, l := range t.Labels {
		if n, ok := limits[l]; ok {
			if h := held(l); h >= n {
				return &LimitError{ID: t.ID, Label: l, Limit: n, Held: h}
			}
		}
	}
	return nil
}

// Holds reports whether t, at now, counts against its labels' limits: it
// is in progress, and its claim has not lapsed (see Lapse).
func (t *Task) Holds(now time.Time) bool {
	return t.Status == InProgress && !t.Lapsed(now)
}

// WithLimits makes Board (and Resolve) hold back the ready tasks whose
// labels are at their limit (Board.Limited), by the limits given: for
// Store implementations that keep limits elsewhere (pgstore reads them
// from its table). It selects nothing by itself.
func WithLimits(limits map[string]int) Filter {
	return func(c *filterConfig) { c.limits = limits }
}

// limited returns the ready tasks of ready (in claim order) that limits
// hold back at now, given the tasks in progress: each is held back if a
// label of it has as many holders as its limit, counting the tasks of
// ready before it that are not held back as holders (ClaimNext would
// take them first).
func limitedOf(ready []*Task, running []*Task, limits map[string]int, now time.Time) map[ID]bool {
	if len(limits) == 0 {
		return nil
	}
	held := map[string]int{}
	for _, t := range running {
		if t.Holds(now) {
			for _, l := range t.Labels {
				held[l]++
			}
		}
	}
	out := map[ID]bool{}
	for _, t := range ready {
		if Rules.Limited(t, limits, func(l string) int { return held[l] }) != nil {
			out[t.ID] = true
			continue
		}
		for _, l := range t.Labels {
			held[l]++
		}
	}
	return out
}

// heldWith counts, for Rules.Limited, the tasks of g in progress at now
// carrying label, but the task self.
func (g *graph) heldWith(self ID, now time.Time) func(label string) int {
	return func(label string) int {
		n := 0
		for id := range g.running {
			if t := g.tasks[id]; id != self && t.Holds(now) && slices.Contains(t.Labels, label) {
				n++
			}
		}
		return n
	}
}

// copyLimits returns a copy of limits, never nil.
func copyLimits(limits map[string]int) map[string]int {
	out := make(map[string]int, len(limits))
	maps.Copy(out, limits)
	return out
}

// limitedAt returns the ready tasks that the limits hold back at sel.Now
// (sel.Limits, else the graph's own), by id; nil when there are no limits.
// The ready tasks counted as taken first are those of sel's labels and
// under sel.Under, as a ClaimNext with the same WithLabels and WithUnder
// counts them: a task it would claim is never shown held back by ready
// tasks it would not take (the tasks in progress count wherever they are).
func (g *graph) limitedAt(sel Selection) map[ID]bool {
	limits := sel.Limits
	if limits == nil {
		limits = g.limits
	}
	if len(limits) == 0 {
		return nil
	}
	var ready, running []*Task
	for i, n := range g.walk() {
		t := n.t
		switch {
		case t.Status == InProgress:
			running = append(running, t)
		case t.Status == Pending && !t.waiting(sel.Now) && hasLabels(t.Labels, sel.Labels) && (sel.Under == 0 || g.under(t.ID, sel.Under)):
			if done, _ := g.blockersOf(i); done {
				ready = append(ready, t)
			}
		}
	}
	slices.SortFunc(ready, Rules.ClaimOrder)
	return limitedOf(ready, running, limits, sel.Now)
}

// nextClaim returns the task ClaimNext takes among the ready ones: the
// first in claim order that carries labels, is under under (0: any), is
// not deferred at now, and that no limit holds back — Rules.Limited,
// with the tasks holding each label at now — so that planClaim, asked of
// it, passes the limits. A limit not reached costs nothing: without one,
// this is the plain ClaimNext. Held-back tasks are passed over without a
// claim tried on each: by the ready tasks split by the limited labels
// they carry (limitQueues), O(splits · log ready), or within the scan
// that labels (O(ready)) or under (O(tasks under it)) make anyway.
func (g *graph) nextClaim(labels []string, under ID, now time.Time) (ID, bool) {
	full := g.reached(now)
	switch {
	case under != 0:
		return g.nextUnder(under, labels, full, now)
	case len(labels) > 0:
		return g.nextReadyWith(labels, full, now)
	case len(full) > 0:
		return g.limitQueuesFor(full).next(g, full, now)
	}
	return g.nextReady(now)
}

// reached returns the limited labels whose limit the tasks holding them at
// now have reached: a ready task carrying one is held back
// (Rules.Limited). Nil when none is: O(tasks in progress).
func (g *graph) reached(now time.Time) map[string]bool {
	if len(g.limits) == 0 {
		return nil
	}
	held := map[string]int{}
	for id := range g.running {
		if t := g.tasks[id]; t.Holds(now) {
			for _, l := range t.Labels {
				if _, ok := g.limits[l]; ok {
					held[l]++
				}
			}
		}
	}
	var full map[string]bool
	for l, h := range held {
		if h >= g.limits[l] {
			if full == nil {
				full = map[string]bool{}
			}
			full[l] = true
		}
	}
	return full
}

// heldBack reports whether t carries a label of full (see reached).
func heldBack(t *Task, full map[string]bool) bool {
	for _, l := range t.Labels {
		if full[l] {
			return true
		}
	}
	return false
}

// limitQueues holds the ready tasks split by the limited labels each
// carries (its split: those of its labels that are in labels), each
// split a heap in claim order: the first ready task no reached limit
// holds back is the first of a split that carries none of the reached
// labels. The graph keeps it current from its first use (touch), and
// builds it anew only when a reached label is not one it splits by.
type limitQueues struct {
	labels map[string]bool        // the labels it splits by: a superset of the reached ones
	splits map[string]*limitSplit // by the split's labels, joined by newlines
	queued map[ID]limitEntry      // the newest entry of each id, with its split
	size   int                    // entries in the heaps, stale ones included
}

// limitSplit is the heap of the ready tasks carrying, among the labels a
// limitQueues splits by, exactly labels.
type limitSplit struct {
	labels []string
	heap   readyHeap
}

// limitEntry is an entry of a limitQueues, with the key of its split.
type limitEntry struct {
	split string
	e     readyEntry
}

// limitQueuesFor returns g's limitQueues, built anew (O(tasks)) if it
// does not split by every label of full.
func (g *graph) limitQueuesFor(full map[string]bool) *limitQueues {
	if q := g.byLimit; q != nil {
		ok := true
		for l := range full {
			ok = ok && q.labels[l]
		}
		if ok {
			return q
		}
	}
	q := &limitQueues{labels: map[string]bool{}, splits: map[string]*limitSplit{}, queued: map[ID]limitEntry{}}
	for l := range g.limits {
		q.labels[l] = true
	}
	for l := range full {
		q.labels[l] = true
	}
	for _, id := range g.ids {
		if t := g.tasks[id]; g.readyTask(t) {
			q.add(t, entryOf(t))
		}
	}
	g.byLimit = q
	return q
}

// add queues t, ready, with its entry e in its split, unless it is there
// with e already.
func (q *limitQueues) add(t *Task, e readyEntry) {
	var in []string
	for _, l := range t.Labels {
		if q.labels[l] {
			in = append(in, l)
		}
	}
	key := strings.Join(in, "\n")
	le := limitEntry{key, e}
	if q.queued[t.ID] == le {
		return
	}
	q.queued[t.ID] = le
	sp := q.splits[key]
	if sp == nil {
		sp = &limitSplit{labels: in}
		q.splits[key] = sp
	}
	heap.Push(&sp.heap, e)
	q.size++
}

// next returns the first ready task in claim order that is not deferred
// at now and carries no label of full, discarding stale entries and
// putting back deferred ones, as nextReady does.
func (q *limitQueues) next(g *graph, full map[string]bool, now time.Time) (ID, bool) {
	var best readyEntry
	found := false
	for key, sp := range q.splits {
		if slices.ContainsFunc(sp.labels, func(l string) bool { return full[l] }) {
			continue
		}
		if e, ok := q.first(g, key, sp, now); ok && (!found || e.less(best)) {
			best, found = e, true
		}
	}
	return best.id, found
}

// first returns the first entry of sp (split key) that stands for a ready
// task not deferred at now.
func (q *limitQueues) first(g *graph, key string, sp *limitSplit, now time.Time) (readyEntry, bool) {
	var deferred []readyEntry
	defer func() {
		for _, e := range deferred {
			heap.Push(&sp.heap, e)
		}
	}()
	for sp.heap.Len() > 0 {
		e := sp.heap[0]
		le := limitEntry{key, e}
		if g.live(e) && q.queued[e.id] == le {
			if !g.tasks[e.id].Deferred(now) {
				return e, true
			}
			deferred = append(deferred, heap.Pop(&sp.heap).(readyEntry))
			continue
		}
		heap.Pop(&sp.heap)
		q.size--
		if q.queued[e.id] == le {
			delete(q.queued, e.id)
		}
	}
	return readyEntry{}, false
}

// limitText says which limit holds back t, a ready task of g.
func limitText(g *graph, t *Task, sel Selection) string {
	for _, l := range t.Labels {
		if n, ok := sel.Limits[l]; ok {
			if h := g.heldWith(t.ID, sel.Now)(l); h >= n {
				return fmt.Sprintf("task %d is held back by a limit: %d tasks labelled %q are in progress, its limit of %d; it can start when one finishes", t.ID, h, l, n)
			}
		}
	}
	return fmt.Sprintf("task %d is held back by a limit: more urgent ready tasks take what its labels' limits allow; it can start when a task with its labels finishes", t.ID)
}

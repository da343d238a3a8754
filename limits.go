// Concurrency limits per label: at most N tasks carrying a label in
// progress at once, enforced on every way into in_progress, in every
// store, also when agents race.

package taskgraph

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
		case t.Status == Pending && !t.Deferred(sel.Now) && hasLabels(t.Labels, sel.Labels) && (sel.Under == 0 || g.under(t.ID, sel.Under)):
			if done, _ := g.blockersOf(i); done {
				ready = append(ready, t)
			}
		}
	}
	slices.SortFunc(ready, Rules.ClaimOrder)
	return limitedOf(ready, running, limits, sel.Now)
}

// readyInOrder returns the ready tasks that carry labels and are not
// deferred at now, in claim order: ClaimNext's candidates when limits may
// hold some back. O(ready log ready).
func (g *graph) readyInOrder(labels []string, now time.Time) []ID {
	var es []readyEntry
	for _, e := range g.ready {
		if g.live(e) && hasLabels(g.tasks[e.id].Labels, labels) && !g.tasks[e.id].Deferred(now) {
			es = append(es, e)
		}
	}
	slices.SortFunc(es, readyEntry.compare)
	out := make([]ID, len(es))
	for i, e := range es {
		out[i] = e.id
	}
	return out
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

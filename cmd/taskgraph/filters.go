// The selection of list and ready: --status, --state, --owned-by, --label,
// --ready and --limit, and the tasks they pick.

package main

import (
	"errors"
	"flag"
	"slices"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// listing is the selection of list and ready: filters and a limit.
type listing struct {
	statuses []taskgraph.Status
	states   []taskgraph.State
	ownedBy  *string
	labels   stringList
	ready    bool
	overdue  bool
	under    idList
	limit    int
	// badStatus and badState are the errors for a --status that names
	// no status and a --state that names no state, reported by check as
	// usage errors; stateAsStatus is a state given as a --status
	// ("stranded"), which check points at --state, and statusAsState a
	// status given as a --state ("pending"), which it points at --status.
	badStatus, badState          error
	stateAsStatus, statusAsState string
}

// listFlags adds the selection flags to fs; all adds those that only make
// sense on a list of every task (status, owner, ready).
func listFlags(fs *flag.FlagSet, all bool) *listing {
	l := &listing{}
	fs.Var(&l.labels, "label", "only tasks with this `LABEL` (repeat or comma-separate: all of them)")
	first := "the most urgent (P0 first, then the first created)"
	if all {
		first = "the lowest ids"
	}
	fs.Var(&l.under, "under", "only tasks under the task `ID`: its children, their children, ...")
	fs.IntVar(&l.limit, "limit", 0, "print at most `N` tasks, "+first+", and say how many more there are (default: all)")
	if all {
		fs.Func("status", "only tasks with this `STATUS`: pending, in_progress, completed, failed or cancelled (repeat or comma-separate: any of them)", func(v string) error {
			addNames(v, parseStatus, taskgraph.ParseState, &l.statuses, &l.badStatus, &l.stateAsStatus)
			return nil
		})
		fs.Func("state", "only tasks in this `STATE`: ready, deferred, limited, blocked, stranded, in_progress, completed, failed or cancelled (repeat or comma-separate: any of them)", func(v string) error {
			addNames(v, taskgraph.ParseState, parseStatus, &l.states, &l.badState, &l.statusAsState)
			return nil
		})
		fs.Func("owned-by", "only tasks held or finished by `NAME` (\"\" for tasks without an owner)", func(v string) error {
			l.ownedBy = &v
			return nil
		})
		fs.BoolVar(&l.ready, "ready", false, "only tasks that can start now (as the ready command)")
		fs.BoolVar(&l.overdue, "overdue", false, "only unfinished tasks whose due time has passed, the most overdue first")
	}
	return l
}

func (l *listing) check() error {
	if l.badStatus != nil && l.stateAsStatus != "" {
		return usagef("--status %v; %s is a state, derived from the graph: use --state %[2]s", reasonOf(l.badStatus), l.stateAsStatus)
	}
	if l.badStatus != nil {
		return usagef("--status %v", reasonOf(l.badStatus))
	}
	if l.badState != nil && l.statusAsState != "" {
		return usagef("--state %v; %s is a status: use --status %[2]s (a pending task is ready, blocked or stranded)", reasonOf(l.badState), l.statusAsState)
	}
	if l.badState != nil {
		return usagef("--state %v", reasonOf(l.badState))
	}
	if len(l.under) > 1 {
		return usagef("--under takes one task ID")
	}
	if l.limit < 0 {
		return usagef("--limit %d: want a positive number (0 for all)", l.limit)
	}
	for _, lb := range l.labels {
		// A label no task can carry would match nothing, silently.
		if _, err := taskgraph.Rules.Labels("label", []string{lb}); err != nil {
			var inv *taskgraph.InvalidError
			if errors.As(err, &inv) {
				return usagef("--label %s", inv.Reason)
			}
			return err
		}
	}
	return nil
}

// withListing checks l's flags and runs f on the store, for list and
// ready, which take no arguments.
func (e *env) withListing(l *listing, f func(s store) error) error {
	if err := l.check(); err != nil {
		return err
	}
	return e.withNoArgs(f)
}

// pick returns the tasks of ts that the listing selects, in the order of
// ts (by id for list, claim order for ready), at most limit of them, and
// how many more it selects.
func (l *listing) pick(ts []*taskgraph.Task, v view) ([]*taskgraph.Task, int) {
	out := ts // no filter: every task, uncopied
	if len(l.statuses) > 0 || len(l.states) > 0 || l.ownedBy != nil || len(l.labels) > 0 || l.ready || l.overdue || len(l.under) > 0 {
		out = make([]*taskgraph.Task, 0, len(ts))
		for _, t := range ts {
			// ready's view has no parents: its board was selected by Under.
			if l.selects(t, v) && (len(l.under) == 0 || v.parent == nil || v.under(t.ID, l.under[0])) {
				out = append(out, t)
			}
		}
	}
	if l.overdue {
		slices.SortStableFunc(out, func(a, b *taskgraph.Task) int { return a.Due.Compare(b.Due) })
	}
	if l.limit > 0 && len(out) > l.limit {
		return out[:l.limit], len(out) - l.limit
	}
	return out, 0
}

// parent is the task of --under, 0 without it.
func (l *listing) parent() taskgraph.ID {
	if len(l.under) == 0 {
		return 0
	}
	return l.under[0]
}

// selects reports whether t passes every filter of the listing.
func (l *listing) selects(t *taskgraph.Task, v view) bool {
	return (len(l.statuses) == 0 || slices.Contains(l.statuses, t.Status)) &&
		(len(l.states) == 0 || slices.Contains(l.states, v.state[t.ID])) &&
		(l.ownedBy == nil || t.Owner == *l.ownedBy) &&
		hasAll(t.Labels, l.labels) &&
		(!l.ready || v.state[t.ID] == taskgraph.StateReady) &&
		(!l.overdue || t.Overdue(time.Now()))
}

func hasAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// parseStatus is taskgraph.ParseStatus of any status.
func parseStatus(s string) (taskgraph.Status, error) { return taskgraph.ParseStatus(s) }

// addNames adds to *into the names of v (repeated or comma-separated) as
// parse reads them. A name parse refuses is kept in *bad, the error told
// after all flags are read; if other reads it, it is the other flag's word
// (a state given as --status, say), kept in *misplaced for that error to
// say so.
func addNames[T, U any](v string, parse func(string) (T, error), other func(string) (U, error), into *[]T, bad *error, misplaced *string) {
	var names stringList
	_ = names.Set(v)
	for _, n := range names {
		x, err := parse(n)
		if err != nil {
			*bad = err
			if _, oerr := other(n); oerr == nil {
				*misplaced = n
			}
		}
		*into = append(*into, x)
	}
}

// This file holds Explain: where one task stands and why, as fields and
// as one line of text for a person or a model.

package taskgraph

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Explanation says where a task stands and, if it is not ready, why: what
// Explain returns.
type Explanation struct {
	Task Task
	// State is StateReady, StateBlocked or StateStranded for a pending
	// task (see Board), and the task's status as a State otherwise
	// (StateInProgress, StateCompleted, StateFailed, StateCancelled).
	State State
	// Waiting lists the blockers of a pending task that are not completed,
	// or completed out of order (Rules.OutOfOrder), by id; Missing the
	// blockers it names that do not exist.
	Waiting []Blocker
	Missing []ID
	// StrandedBy is the failed or cancelled task that strands a stranded
	// task (the lowest id if several do); 0 otherwise.
	StrandedBy ID
	// Text is the explanation in one line, for a person or a model.
	Text string
}

// Blocker is an unfinished blocker of a task, as Explain reports it.
type Blocker struct {
	ID      ID
	Subject string
	Status  Status
	Owner   string
	// LeaseLeft is how long the owner's lease has to run: 0 for a claim
	// without a lease, negative once the lease has lapsed.
	LeaseLeft time.Duration
	// Before is, for a blocker completed out of order
	// (Rules.OutOfOrder), its own blockers that are not completed: it
	// counts as unfinished until they are.
	Before []ID
}

// Explain says where task id of tasks stands and why, as of now: for a
// pending task that is not ready, which blockers it waits on (their
// status, owner and lease), which it names that do not exist, and the
// failed or cancelled task that strands it. It returns a *NotFoundError if
// id is not among tasks. Pure and linear in the size of the graph. With
// WithLimits (its one filter that means anything here), a ready task that
// a concurrency limit holds back is StateLimited, and the text names the
// label.
func Explain(tasks []Task, id ID, now time.Time, filters ...Filter) (Explanation, error) {
	g := graphOf(tasks)
	sel, err := Rules.Filters(filters)
	if err != nil {
		return Explanation{}, err
	}
	sel.Now = now
	t := g.tasks[id]
	if t == nil {
		return Explanation{}, Rules.Missing(id)
	}
	e := Explanation{Task: g.view(id), State: State(t.Status)}
	if t.Status == Pending {
		e.State = StateReady
		for _, b := range t.BlockedBy {
			bt := g.tasks[b]
			switch {
			case bt == nil:
				e.Missing = append(e.Missing, b)
			case !g.done(b, bt.Status):
				w := Blocker{ID: b, Subject: bt.Subject, Status: bt.Status, Owner: bt.Owner}
				if at := bt.LapsesAt(); bt.Status == InProgress && !at.IsZero() {
					w.LeaseLeft = at.Sub(now)
				}
				if bt.Status == Completed {
					w.Before = Rules.OutOfOrder(bt, g.status)
				}
				e.Waiting = append(e.Waiting, w)
			}
		}
	}
	var strandedBy map[ID]ID
	if len(e.Waiting)+len(e.Missing) > 0 {
		e.State = StateBlocked
		strandedBy = g.strandedBy()
		if cause := strandedBy[id]; cause != 0 {
			e.State, e.StrandedBy = StateStranded, cause
		}
	}
	if e.State == StateReady && t.Deferred(now) {
		e.State = StateDeferred
	}
	if t.AwaitingApproval() { // whatever its blockers, as the board lists it
		e.State = StateAwaitingApproval
		e.Text = fmt.Sprintf("task %d awaits approval: no one can claim it until a person approves it (taskgraph approve %d), or rejects it (taskgraph reject %d REASON), which cancels it", t.ID, t.ID, t.ID)
		if len(e.Waiting)+len(e.Missing) > 0 {
			e.Text += "; " + string(AppendWhyNotReady(nil, t, func(id ID) *Task { return g.tasks[id] }, func(id ID) ID { return strandedBy[id] }, now))
		}
		return e, nil
	}
	// Held back as the whole graph's ClaimNext would hold it: the task
	// is judged whatever labels or Under the filters name.
	whole := sel
	whole.Labels, whole.Under = nil, 0
	if e.State == StateReady && g.limitedAt(whole)[id] {
		e.State = StateLimited
		e.Text = limitText(g, t, sel)
		return e, nil
	}
	e.Text = explainText(g, &e, strandedBy, now)
	return e, nil
}

// explainText renders an explanation in one line.
func explainText(g *graph, e *Explanation, strandedBy map[ID]ID, now time.Time) string {
	t := &e.Task
	switch e.State {
	case StateReady:
		return fmt.Sprintf("task %d is ready: nothing it waits on is unfinished; claim it", t.ID)
	case StateDeferred:
		when := t.NotBefore.UTC().Format(time.RFC3339)
		left := t.NotBefore.Sub(now).Round(time.Second)
		if t.Attempts > 0 {
			return fmt.Sprintf("task %d is waiting to retry: attempt %d of %d failed; it can start from %s (in %v)", t.ID, t.Attempts, t.MaxAttempts, when, left)
		}
		return fmt.Sprintf("task %d is deferred: it can start from %s (in %v)", t.ID, when, left)
	case StateBlocked, StateStranded:
		lookup := func(id ID) *Task { return g.tasks[id] }
		return string(AppendWhyNotReady(nil, t, lookup, func(id ID) ID { return strandedBy[id] }, now))
	case StateInProgress:
		if _, c := t.Lapse(); c != ClockLease { // say which clock runs
			return fmt.Sprintf("task %d is in progress, held by %s; its %s", t.ID, t.Owner, t.ClockText(now))
		}
		return fmt.Sprintf("task %d is %s", t.ID, holding(InProgress, t.Owner, leaseLeft(t, now)))
	case StateCompleted:
		s := fmt.Sprintf("task %d is completed", t.ID)
		if t.Owner != "" {
			s += " by " + t.Owner
		}
		if t.Result != "" {
			s += fmt.Sprintf(": %q", short(t.Result))
		}
		return s
	case StateFailed:
		s := fmt.Sprintf("task %d failed", t.ID)
		if t.Owner != "" {
			s += " (" + t.Owner + ")"
		}
		return s + fmt.Sprintf(": %q; reopen it to try again", short(t.Reason))
	case StateCancelled:
		return fmt.Sprintf("task %d was cancelled: %q; reopen it to do it after all", t.ID, short(t.Reason))
	default: // a status no store writes, in a slice made by hand
		return fmt.Sprintf("task %d has the status %q, which is not %s: correct it", t.ID, e.State, statusList)
	}
}

// AppendWhyNotReady appends to b Explain's text for t, a pending task
// that is not ready — blocked, or stranded — looking tasks up in the
// caller's own index: task returns a task by id (nil if there is none),
// strandedBy the failed or cancelled task that strands a task (0 if none,
// as Board.StrandedBy does). Explain writes its text with it; a caller
// that keeps a large graph indexed (the web board) explains its tasks
// with it without Explain's copy of the whole graph for each.
func AppendWhyNotReady(b []byte, t *Task, task func(ID) *Task, strandedBy func(ID) ID, now time.Time) []byte {
	b = append(b, "task "...)
	b = strconv.AppendInt(b, int64(t.ID), 10)
	if cause := strandedBy(t.ID); cause != 0 {
		b = append(b, " is stranded: "...)
		if slices.Contains(t.BlockedBy, cause) {
			b = append(b, "its blocker "...)
		} else {
			// The first unfinished blocker the same cause strands, else
			// the first completed out of order (strandedBy passes
			// through it, without naming it).
			var via ID
			early := false
			for _, w := range t.BlockedBy {
				if bt := task(w); bt != nil && bt.Status != Completed && strandedBy(w) == cause {
					via, early = w, false
					break
				} else if bt != nil && via == 0 && len(outOfOrder(bt, task)) > 0 {
					via, early = w, true
				}
			}
			b = append(b, "it waits on "...)
			b = strconv.AppendInt(b, int64(via), 10)
			if early {
				b = append(b, ", completed before its own blockers, which cannot be done because "...)
			} else {
				b = append(b, ", which cannot start because "...)
			}
		}
		b = strconv.AppendInt(b, int64(cause), 10)
		c := task(cause)
		if c.Status == Cancelled {
			b = append(b, " was cancelled"...)
		} else {
			b = append(append(b, ' '), c.Status...)
		}
		if c.Reason != "" {
			b = append(b, " ("...)
			b = strconv.AppendQuote(b, short(c.Reason))
			b = append(b, ')')
		}
		b = append(b, "; reopen "...)
		b = strconv.AppendInt(b, int64(cause), 10)
		return append(b, " or remove the edge"...)
	}
	b = append(b, " is blocked"...)
	var missing []ID
	sep := ", waiting on "
	for _, w := range t.BlockedBy {
		bt := task(w)
		switch {
		case bt == nil:
			missing = append(missing, w)
			continue
		case bt.Status == Completed:
			before := outOfOrder(bt, task)
			if len(before) == 0 {
				continue
			}
			b = append(b, sep...)
			sep = ", "
			b = strconv.AppendInt(b, int64(w), 10)
			b = fmt.Appendf(b, " (completed before its blockers %v were: it counts as done once they are completed, or once it is reopened and done again)", before)
			continue
		}
		b = append(b, sep...)
		sep = ", "
		b = strconv.AppendInt(b, int64(w), 10)
		b = append(b, " ("...)
		b = append(b, holding(bt.Status, bt.Owner, leaseLeft(bt, now))...)
		b = append(b, ')')
	}
	if len(missing) > 0 {
		b = append(b, "; it names tasks that do not exist: "...)
		b = fmt.Append(b, missing)
		b = append(b, " (create them or remove those edges)"...)
	}
	return b
}

// outOfOrder is Rules.OutOfOrder of t, its blockers looked up by task.
func outOfOrder(t *Task, task func(ID) *Task) []ID {
	if t.Status != Completed {
		return nil
	}
	return Rules.OutOfOrder(t, func(id ID) (Status, bool) {
		if bt := task(id); bt != nil {
			return bt.Status, true
		}
		return "", false
	})
}

// holding renders the state of a blocker: its status, and for one in
// progress, who holds it and for how long.
func holding(st Status, owner string, left time.Duration) string {
	if st != InProgress {
		return string(st)
	}
	s := "in progress"
	if owner != "" {
		s += ", held by " + owner
	}
	switch {
	case left > 0:
		s += fmt.Sprintf(", lease %v left", left.Round(time.Second))
	case left < 0:
		s += fmt.Sprintf(", lease lapsed %v ago: anyone may claim it", (-left).Round(time.Second))
	}
	return s
}

func leaseLeft(t *Task, now time.Time) time.Duration {
	at := t.LapsesAt()
	if at.IsZero() {
		return 0
	}
	return at.Sub(now)
}

// short cuts s to 120 characters for a one-line text.
func short(s string) string {
	if r := []rune(s); len(r) > 120 {
		return string(r[:119]) + "…"
	}
	return s
}

// Stop or wait: what task_claim_next says when it claims nothing — the
// graph is finished, or what it waits on — and task_wait, which blocks
// until a task is ready for the agent or the graph is finished.

package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// DefaultWait is how long task_wait waits at most, unless WithWait says
// otherwise: under the minute after which MCP clients commonly give up on
// a call.
const DefaultWait = 50 * time.Second

// WithWait sets how long one task_wait call waits at most (default
// DefaultWait). A client that gives up on a call sooner needs a shorter
// one; tests use a few milliseconds.
func WithWait(d time.Duration) Option { return func(c *config) { c.wait = d } }

// labelsFor returns the labels a claim or wait of the agent asks for: its
// role's (WithLabels), then the model's, checked and sorted as a task's.
func (h handlers) labelsFor(model []string) ([]string, error) {
	all := append(slices.Clone(h.cfg.labels), model...)
	if len(all) == 0 {
		return nil, nil
	}
	return taskgraph.Rules.Labels("labels", all)
}

// decodeWhere decodes the input of task_claim_next and task_wait: the
// model's labels, and the task whose descendants alone count (under; 0:
// any; the store refuses one that does not exist).
func (h handlers) decodeWhere(raw json.RawMessage) (labels []string, under taskgraph.ID, err error) {
	var u *int64
	if err := decode(raw, field{"labels", &labels}, field{"under", &u}); err != nil {
		return nil, 0, err
	}
	if u != nil {
		under = taskgraph.ID(*u)
		if err := taskgraph.Rules.ID("under", under); err != nil {
			return nil, 0, err
		}
	}
	return labels, under, nil
}

// wait waits until a task for the agent can be claimed, the graph (or
// what is under the task the model names) is finished, or the bound of
// WithWait passes, and says which.
func (h handlers) wait(ctx context.Context, raw json.RawMessage) (reply, error) {
	model, under, err := h.decodeWhere(raw)
	if err != nil {
		return reply{}, err
	}
	labels, err := h.labelsFor(model)
	if err != nil {
		return reply{}, err
	}
	bound := h.cfg.wait
	if bound <= 0 {
		bound = DefaultWait
	}
	wctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	start := time.Now()
	b, err := taskgraph.Await(wctx, h.store, taskgraph.WorkLabels(labels...), taskgraph.WorkUnder(under))
	timedOut := false
	switch {
	case err == nil:
	case ctx.Err() == nil && wctx.Err() != nil:
		// The bound passed, perhaps before Await looked at all (a short
		// bound on a slow machine): look now, and answer from that.
		if b, err = h.store.Board(ctx, taskgraph.Under(under)); err != nil {
			return reply{}, err
		}
		timedOut = true
	default:
		return reply{}, err
	}
	if b.Finished() {
		return finished(b, under), nil
	}
	now := time.Now()
	forMe := taskgraph.Selection{Labels: labels} // labels sorted, as Rules.Labels returns them
	for _, t := range b.Ready {
		if forMe.Match(&t, true) {
			return ready(t, fmt.Sprintf("Ready: #%d %s. Claim it with task_claim_next.", t.ID, t.Subject)), nil
		}
	}
	if timedOut { // the board, not Await, said what is ready: a lapse is Await's to judge
		return waiting(fmt.Sprintf("Still nothing ready%s after %s: %s Call task_wait again to go on waiting.", underText(under), roundDuration(time.Since(start)), h.standing(b, labels, now))), nil
	}
	for _, t := range b.InProgress {
		if forMe.Match(&t, false) && t.Lapsed(now) {
			what := "the lease"
			if _, c := t.Lapse(); c != taskgraph.ClockLease {
				what = "the claim" // its max runtime or no-progress window ran out
			}
			return ready(t, fmt.Sprintf("Ready: #%d %s (%s of %q lapsed). Claim it with task_claim_next.", t.ID, t.Subject, what, t.Owner)), nil
		}
	}
	// Await saw something claimable that is gone by now: taken by another.
	return waiting(fmt.Sprintf("Nothing ready%s now: %s Call task_wait again.", underText(under), h.standing(b, labels, now))), nil
}

// nothingReady is task_claim_next's answer when ClaimNext found no task:
// the graph (or what is under the task under, if not 0) is finished (and
// how), or what the agent waits on.
func (h handlers) nothingReady(ctx context.Context, labels []string, under taskgraph.ID) (reply, error) {
	b, err := h.store.Board(ctx, taskgraph.Under(under))
	if err != nil {
		return reply{}, err
	}
	if b.Finished() {
		return finished(b, under), nil
	}
	return waiting("Nothing ready" + underText(under) + " now: " + h.standing(b, labels, time.Now())), nil
}

// waiting is the reply that there is nothing for the agent now: text says
// what it waits on.
func waiting(text string) reply { return reply{text, nextOutput{Outcome: outcomeWait}} }

// ready is task_wait's reply that t can be claimed now.
func ready(t taskgraph.Task, text string) reply {
	v := viewOf(t, taskgraph.StateReady, true)
	return reply{text, nextOutput{Outcome: outcomeReady, Task: &v}}
}

// underText is " under #5" for a claim or wait under task 5, "" for one
// anywhere (under 0).
func underText(under taskgraph.ID) string {
	if under == 0 {
		return ""
	}
	return fmt.Sprintf(" under #%d", under)
}

// finished describes a finished graph (Board.Finished), or what is under
// the task under if not 0: all done, or stalled on failed and stranded
// tasks.
func finished(b taskgraph.Board, under taskgraph.ID) reply {
	var s *taskgraph.StalledError
	if !errors.As(b.Stall(), &s) {
		return reply{"Finished" + underText(under) + ": nothing left to do.", nextOutput{Outcome: outcomeFinished}}
	}
	n := len(s.Failed) + len(s.Stranded)
	var parts []string
	if len(s.Failed) > 0 {
		parts = append(parts, "failed "+FormatIDs(s.Failed))
	}
	if len(s.Stranded) > 0 {
		parts = append(parts, "stranded "+FormatIDs(s.Stranded))
	}
	verb := "tasks failed or are"
	if n == 1 {
		verb = "task failed or is"
	}
	return reply{fmt.Sprintf("Finished%s, but %d %s stranded: %s.", underText(under), n, verb, strings.Join(parts, "; ")),
		nextOutput{Outcome: outcomeStalled, Failed: s.Failed, Stranded: s.Stranded}}
}

// standing says what keeps a graph that is not finished from having a
// task for the agent: who holds what, what is blocked, and when the first
// lease held by another lapses. It ends with a full stop.
func (h handlers) standing(b taskgraph.Board, labels []string, now time.Time) string {
	me := h.cfg.owner
	var others, mine int
	var next time.Time
	for _, t := range b.InProgress {
		if t.Owner == me {
			mine++
			continue
		}
		others++
		if e := t.LapsesAt(); e.After(now) && (next.IsZero() || e.Before(next)) {
			next = e
		}
	}
	var parts []string
	if others > 0 {
		parts = append(parts, fmt.Sprintf("%d in progress by others", others))
	}
	if mine > 0 {
		parts = append(parts, fmt.Sprintf("%d held by you", mine))
	}
	if len(b.Blocked) > 0 {
		parts = append(parts, fmt.Sprintf("%d blocked", len(b.Blocked)))
	}
	if len(b.Limited) > 0 {
		parts = append(parts, fmt.Sprintf("%d held back by a label's limit", len(b.Limited)))
	}
	if len(b.AwaitingApproval) > 0 {
		parts = append(parts, fmt.Sprintf("%d awaiting a person's approval", len(b.AwaitingApproval)))
	}
	if len(b.Deferred) > 0 { // by NotBefore: the first can start first
		parts = append(parts, fmt.Sprintf("%d deferred (the first can start in %s)", len(b.Deferred), roundDuration(b.Deferred[0].NotBefore.Sub(now))))
	}
	if len(labels) > 0 && len(b.Ready) > 0 {
		parts = append(parts, fmt.Sprintf("%d ready without labels %s", len(b.Ready), strings.Join(labels, ", ")))
	}
	out := strings.Join(parts, ", ")
	if out == "" {
		return "what was ready was taken meanwhile." // a race with another agent
	}
	if !next.IsZero() {
		out += "; the next lease lapses in " + roundDuration(next.Sub(now))
	}
	return out + "."
}

// roundDuration writes d to the second, and at least 1s.
func roundDuration(d time.Duration) string {
	return max(d.Round(time.Second), time.Second).String()
}

// Progress-aware liveness: a lease protects a team from an agent that
// dies; MaxRuntime and the no-progress window protect it from one that
// hangs while something keeps renewing its lease. Every clock is derived
// from what the task stores (its lease, ClaimedAt, its newest note), so
// every store decides a lapse alike, pgstore in SQL (lapsesSQL).

package taskgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
)

// MaxLiveness is the longest MaxRuntime or ProgressWindow a task may be
// given: a week, far past any attempt, and far from overflowing a time.
const MaxLiveness = 7 * 24 * time.Hour

// Extra holds the fields that few tasks set, behind one pointer
// (Task.Extra) so that a task without any of them costs one word: a
// board of a hundred thousand tasks copies every task.
type Extra struct {
	// MaxRuntime caps how long one attempt may run: a claim held longer
	// than MaxRuntime past its ClaimedAt lapses as an expired lease does
	// (its next claim records the lapse, with the reason, and counts the
	// attempt), however often its lease is renewed. 0: no cap.
	MaxRuntime time.Duration `json:",omitempty"`
	// ProgressWindow is how long a claim may go without progress before
	// it lapses, whatever renews its lease. Progress is the claim itself
	// and a note (Noter), the way an agent reports what it did: the
	// progress clock (Task.Progress) is the later of ClaimedAt and the
	// newest note. 0: no window.
	ProgressWindow time.Duration `json:",omitempty"`
	// NeedsApproval, on a pending task, holds it back until a person
	// approves it (Approver); a rejection cancels it and leaves it set.
	NeedsApproval bool `json:",omitempty"`
	// CreatedVia says how the task was created (ViaCLI, ViaTools,
	// ViaMCP); "" when its creator did not say.
	CreatedVia string `json:",omitempty"`
	// Links are the commits, pull requests, files and URLs the task
	// carries, a set, in the order they were added (Patch.AddLinks).
	Links []Link `json:",omitempty"`
	// Check names the check that must pass before the task completes: a
	// command defined in the graph's checks file (see LoadChecks), never
	// in the task. "": none. See WithEvidence.
	Check string `json:",omitempty"`
	// Acceptance lists, in words, what the task must achieve: for the
	// agent that does it and the person who reviews it; nothing runs it.
	Acceptance []string `json:",omitempty"`

	// keys holds the write keys of the task's last writes (writekeys.go):
	// in its file, never in what a store returns (viewInto drops them)
	// nor in what git commits (CleanTaskFile).
	keys *taskKeys

	// unknown holds the JSON fields of the task file that taskgraph does
	// not know, so that rewriting the file keeps them.
	unknown map[string]json.RawMessage
}

// Clock names what ends a claim: see Task.Lapse.
type Clock string

// The clocks of a claim.
const (
	// ClockLease is the lease (WithLease), which renewals extend.
	ClockLease Clock = "lease"
	// ClockRuntime is the attempt's MaxRuntime, counted from ClaimedAt.
	ClockRuntime Clock = "runtime"
	// ClockProgress is the no-progress window, counted from the last
	// progress (Task.Progress).
	ClockProgress Clock = "progress"
)

// extra returns t's Extra, or the zero one.
func (t *Task) extra() Extra {
	if t.Extra == nil {
		return Extra{}
	}
	return *t.Extra
}

// editExtra returns t's Extra for an edit, creating it if need be; tidy
// drops it again once nothing is set.
func (t *Task) editExtra() *Extra {
	if t.Extra == nil {
		t.Extra = &Extra{}
	}
	return t.Extra
}

// tidy leaves t.Extra nil when it holds nothing: a task that set a limit
// and cleared it again is stored, and compares, as one that never had it.
func (t *Task) tidy() {
	if x := t.Extra; x != nil && x.MaxRuntime == 0 && x.ProgressWindow == 0 && x.keys == nil && !x.NeedsApproval && x.CreatedVia == "" && len(x.Links) == 0 && x.Check == "" && len(x.Acceptance) == 0 && len(x.unknown) == 0 {
		t.Extra = nil
	}
}

// unknownFields returns the fields of t's file that taskgraph does not
// know; nil if none.
func (t *Task) unknownFields() map[string]json.RawMessage { return t.extra().unknown }

// Progress returns when the current claim of t last made progress: the
// latest of ClaimedAt, the time of its newest note and that of its newest
// link (Extra.Links). Zero when none is known.
func (t *Task) Progress() time.Time {
	p := t.ClaimedAt
	if n := len(t.Notes); n > 0 && t.Notes[n-1].At.After(p) {
		p = t.Notes[n-1].At
	}
	if l := t.lastLink(); l.After(p) {
		p = l
	}
	return p
}

// Lapse returns when the claim of t, a task in progress, lapses, and the
// clock that ends it: the earliest of its lease's expiry
// (LeaseExpiresAt), ClaimedAt plus MaxRuntime, and its last progress
// (Progress) plus ProgressWindow; a clock with nothing to count from
// (no lease, a limit of 0, a claim of unknown time) does not run. The
// zero time: the claim never lapses. On a tie the lease is named, then
// the runtime. Past that time anyone may claim the task, as when a lease
// expires, and the claim that takes it over records why in its history.
func (t *Task) Lapse() (time.Time, Clock) {
	at, clock := t.LeaseExpiresAt, ClockLease
	if t.Extra == nil {
		return at, clock
	}
	earlier := func(when time.Time, c Clock) {
		if !when.IsZero() && (at.IsZero() || when.Before(at)) {
			at, clock = when, c
		}
	}
	if d := t.Extra.MaxRuntime; d > 0 && !t.ClaimedAt.IsZero() {
		earlier(t.ClaimedAt.Add(d), ClockRuntime)
	}
	if d := t.Extra.ProgressWindow; d > 0 {
		if p := t.Progress(); !p.IsZero() {
			earlier(p.Add(d), ClockProgress)
		}
	}
	return at, clock
}

// LapsesAt is the time of Lapse alone; zero: never.
func (t *Task) LapsesAt() time.Time {
	at, _ := t.Lapse()
	return at
}

// Lapsed reports whether t is in progress and its claim has lapsed at
// now (see Lapse).
func (t *Task) Lapsed(now time.Time) bool {
	if t.Status != InProgress {
		return false
	}
	at := t.LapsesAt()
	return !at.IsZero() && !now.Before(at)
}

// lapseReason says, for the history, why the claim of t lapsed: "" for
// an expired lease (as before these clocks existed), else the limit.
func lapseReason(t *Task) string {
	switch _, c := t.Lapse(); c {
	case ClockRuntime:
		return fmt.Sprintf("ran past its max runtime of %v", t.Extra.MaxRuntime)
	case ClockProgress:
		return fmt.Sprintf("no progress for %v", t.Extra.ProgressWindow)
	}
	return ""
}

// ClockText says, for people, which clock of t's claim runs out first
// and when, relative to now: "lease ends in 4m", "no progress for 30m
// ends the claim in 12m", "ran past its max runtime 3m ago"; "" when t is
// not in progress or its claim never lapses.
func (t *Task) ClockText(now time.Time) string {
	at, c := t.Lapse()
	if t.Status != InProgress || at.IsZero() {
		return ""
	}
	left := at.Sub(now).Round(time.Second)
	var what string
	switch c {
	case ClockRuntime:
		what = fmt.Sprintf("max runtime (%v)", t.Extra.MaxRuntime)
	case ClockProgress:
		what = fmt.Sprintf("no-progress window (%v since the last claim or note)", t.Extra.ProgressWindow)
	default:
		what = "lease"
	}
	if left <= 0 {
		return fmt.Sprintf("%s ran out %v ago: anyone may claim it", what, -left)
	}
	return fmt.Sprintf("%s runs out in %v, at %s", what, left, at.UTC().Format(time.RFC3339))
}

// Liveness validates a task's liveness limits, in field: each from 0
// (none) to MaxLiveness.
func (Rulebook) Liveness(field string, maxRuntime, window time.Duration) error {
	if maxRuntime < 0 || maxRuntime > MaxLiveness {
		return &InvalidError{Field: field + "maxRuntime", Reason: fmt.Sprintf("%v is not between 0 (none) and %v", maxRuntime, MaxLiveness)}
	}
	if window < 0 || window > MaxLiveness {
		return &InvalidError{Field: field + "progressWindow", Reason: fmt.Sprintf("%v is not between 0 (none) and %v", window, MaxLiveness)}
	}
	return nil
}

// setLiveness sets t's limits. The write rules (Create, Patch) pass
// them in whole microseconds, as PostgreSQL keeps them, so that every
// store stores the same.
func setLiveness(t *Task, maxRuntime, window time.Duration) {
	x := t.editExtra()
	x.MaxRuntime, x.ProgressWindow = maxRuntime, window
	t.tidy()
}

// LivenessDefault is the liveness a label gives the tasks created with
// it that set none of their own (see LivenessDefaulter).
type LivenessDefault struct {
	MaxRuntime     time.Duration
	ProgressWindow time.Duration
}

// LivenessDefaulter is implemented by stores that keep a default
// MaxRuntime and ProgressWindow per label (all of this module's stores),
// where they keep the label's concurrency limit (Limiter): the meta file
// of a FileStore, which git commits with the graph, pgstore's table. It
// is an interface of its own so that Store implementations written
// before it still compile.
//
// A default applies when a task is created (Create, CreatePlan) with the
// label and without a value of its own; of several labels, the shortest
// default wins. A change of a default leaves the tasks that exist as they
// are.
type LivenessDefaulter interface {
	// SetLivenessDefault sets label's default; the zero value removes it.
	SetLivenessDefault(ctx context.Context, label string, d LivenessDefault) error
	// LivenessDefaults returns every label's default (an empty map if
	// none).
	LivenessDefaults(ctx context.Context) (map[string]LivenessDefault, error)
}

// LivenessDefaultArgs validates a label's default: a label (see Labels),
// and limits as Liveness allows them.
func (Rulebook) LivenessDefaultArgs(label string, d LivenessDefault) error {
	if _, err := Rules.Labels("label", []string{label}); err != nil {
		return err
	}
	return Rules.Liveness("", d.MaxRuntime, d.ProgressWindow)
}

// DefaultLiveness returns nts with the label defaults applied: each task
// that sets no MaxRuntime (ProgressWindow) gets the shortest one among
// its labels' defaults. Stores run it on what Create and CreatePlan are
// given, before the rule that creates the tasks.
func (Rulebook) DefaultLiveness(nts []NewTask, defaults map[string]LivenessDefault) []NewTask {
	if len(defaults) == 0 {
		return nts
	}
	out := slices.Clone(nts)
	for i := range out {
		nt := &out[i]
		for _, l := range nt.Labels {
			d, ok := defaults[l]
			if !ok {
				continue
			}
			if nts[i].MaxRuntime == 0 && d.MaxRuntime > 0 && (nt.MaxRuntime == 0 || d.MaxRuntime < nt.MaxRuntime) {
				nt.MaxRuntime = d.MaxRuntime
			}
			if nts[i].ProgressWindow == 0 && d.ProgressWindow > 0 && (nt.ProgressWindow == 0 || d.ProgressWindow < nt.ProgressWindow) {
				nt.ProgressWindow = d.ProgressWindow
			}
		}
	}
	return out
}

// withDefault returns a copy of m with label's default set to d (removed
// if d is zero); nil when none is left.
func withDefault(m map[string]LivenessDefault, label string, d LivenessDefault) map[string]LivenessDefault {
	out := copyLiveness(m)
	if d == (LivenessDefault{}) {
		delete(out, label)
	} else {
		out[label] = d
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// copyLiveness returns a copy of m, never nil.
func copyLiveness(m map[string]LivenessDefault) map[string]LivenessDefault {
	out := make(map[string]LivenessDefault, len(m))
	maps.Copy(out, m)
	return out
}

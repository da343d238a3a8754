// Verified completion: a task may name a check, a command defined in the
// graph's checks file (checks.go), and list acceptance items in words. A
// task never carries a command; the store never runs one. The worker runs
// the check and reports its Evidence to Complete, which refuses a task
// with a check and no passing evidence (ErrUnverified) unless a person
// skips the check (SkipCheck), which the history records.

package taskgraph

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Bounds of a task's acceptance items and of the evidence a check's run
// reports.
const (
	// MaxAcceptance is the most acceptance items a task lists.
	MaxAcceptance = 20
	// MaxAcceptanceItem is the longest acceptance item, in bytes.
	MaxAcceptanceItem = 500
	// MaxEvidenceTail is the longest tail of a check's output that
	// Evidence keeps, in bytes: the history entry holds it whole.
	MaxEvidenceTail = 200
)

// The history entries of a verified completion.
const (
	// HistoryVerified records the passing Evidence a completion
	// reported: the check, its exit status, duration, output digest and
	// tail, and the git commit it ran at.
	HistoryVerified HistoryEvent = "verified"
	// HistorySkipped records a completion of a task with a check that a
	// person made without running it (SkipCheck).
	HistorySkipped HistoryEvent = "check-skipped"
)

// ErrUnverified is matched by the error of a Complete of a task that
// names a check, given no passing evidence of it (WithEvidence) and not
// told to skip it (SkipCheck). See UnverifiedError.
var ErrUnverified = errors.New("the task's check has not passed")

// UnverifiedError says why task ID, whose check is Check, was not
// completed. It matches ErrUnverified.
type UnverifiedError struct {
	ID     ID
	Check  string
	Reason string
}

func (e *UnverifiedError) Error() string {
	return fmt.Sprintf("task %d was not completed: %s; run it with `taskgraph done %d` (which runs check %q), or skip it as a person with --no-verify", e.ID, e.Reason, e.ID, e.Check)
}

// Is reports whether target is ErrUnverified.
func (e *UnverifiedError) Is(target error) bool { return target == ErrUnverified }

// Evidence is what a run of a check reported: the worker that ran it
// says so (RunCheck), the store records it as it is given. It proves no
// more than the worker's honesty.
type Evidence struct {
	Check    string        // the check's name
	Exit     int           // its exit status; -1 when it did not exit by itself
	TimedOut bool          // killed at its timeout
	Duration time.Duration // how long it ran
	Digest   string        // "sha256:" and the hex digest of its whole output
	Tail     string        // the end of its output, at most MaxEvidenceTail bytes
	Commit   string        // the git commit it ran at; "" outside git
}

// Passed reports whether the check exited 0 within its timeout.
func (e Evidence) Passed() bool { return e.Exit == 0 && !e.TimedOut && e.Check != "" }

// String renders e in one line, as the history records it.
func (e Evidence) String() string {
	var b strings.Builder
	verdict := "passed"
	if !e.Passed() {
		verdict = "failed"
	}
	fmt.Fprintf(&b, "check %s %s: ", e.Check, verdict)
	if e.TimedOut {
		fmt.Fprintf(&b, "killed at its timeout after %v", e.Duration.Round(time.Millisecond))
	} else {
		fmt.Fprintf(&b, "exit %d after %v", e.Exit, e.Duration.Round(time.Millisecond))
	}
	if e.Commit != "" {
		fmt.Fprintf(&b, " at commit %s", e.Commit)
	}
	if e.Digest != "" {
		fmt.Fprintf(&b, "; output %s", e.Digest)
	}
	if t := strings.TrimSpace(e.Tail); t != "" {
		fmt.Fprintf(&b, "; tail: %s", strings.Join(strings.Fields(t), " "))
	}
	return b.String()
}

// WithEvidence reports to Complete the run of the task's check that the
// caller made (see RunCheck). A task that names a check is completed
// only with evidence of that check that passed.
func WithEvidence(ev Evidence) CompleteOption {
	return func(c *completeConfig) { c.evidence = &ev }
}

// SkipCheck completes a task that names a check without evidence: for a
// person (taskgraph done --no-verify), never for an agent. The history
// records the skip, and the task's dependents become ready as after any
// completion.
func SkipCheck() CompleteOption {
	return func(c *completeConfig) { c.skip = true }
}

// CheckArgs validates a task's check and acceptance items, in field: the
// check "" (none) or named as a label is (see Labels), at most
// MaxAcceptance items of 1 to MaxAcceptanceItem bytes of text.
func (Rulebook) CheckArgs(field, check string, acceptance []string) error {
	if check != "" {
		if err := checkName(field+"check", check); err != nil {
			return err
		}
	}
	if len(acceptance) > MaxAcceptance {
		return &InvalidError{Field: field + "acceptance", Reason: fmt.Sprintf("%d items, over %d (MaxAcceptance): keep the list short", len(acceptance), MaxAcceptance)}
	}
	for i, a := range acceptance {
		f := fmt.Sprintf("%sacceptance[%d]", field, i)
		if a == "" || len(a) > MaxAcceptanceItem {
			return &InvalidError{Field: f, Reason: fmt.Sprintf("is %d bytes: an item is 1 to %d bytes (MaxAcceptanceItem)", len(a), MaxAcceptanceItem)}
		}
		if err := Rules.Text(f, a); err != nil {
			return err
		}
	}
	return nil
}

// checkName validates the name of a check: the form of a label.
func checkName(field, name string) error {
	if label(field, name) != nil {
		return &InvalidError{Field: field, Reason: fmt.Sprintf("%.80q is not a check name: use 1 to %d lower-case letters, digits and -_.:/ (e.g. \"test\")", name, MaxLabel)}
	}
	return nil
}

// evidenceArgs validates evidence given to Complete, before any task is
// read.
func evidenceArgs(ev *Evidence, skip bool) error {
	if ev == nil {
		return nil
	}
	switch {
	case skip:
		return &InvalidError{Field: "evidence", Reason: "given with SkipCheck: report the run of the check, or skip it, not both"}
	case ev.Duration < 0:
		return &InvalidError{Field: "evidence.duration", Reason: fmt.Sprintf("%v is negative", ev.Duration)}
	case len(ev.Tail) > MaxEvidenceTail:
		return &InvalidError{Field: "evidence.tail", Reason: fmt.Sprintf("is %d bytes, over %d (MaxEvidenceTail)", len(ev.Tail), MaxEvidenceTail)}
	case len(ev.Digest) > 80 || len(ev.Commit) > 80:
		return &InvalidError{Field: "evidence", Reason: "a digest or commit over 80 bytes: give a sha256 digest and a git commit id"}
	}
	if err := checkName("evidence.check", ev.Check); err != nil {
		return err
	}
	return texts("evidence.tail", ev.Tail, "evidence.digest", ev.Digest, "evidence.commit", ev.Commit)
}

// verify decides whether the completion of t, just moved to Completed
// by owner, is verified, and records how: t's check needs passing
// evidence of it, or SkipCheck.
func verify(t *Task, by string, ev *Evidence, skip bool, now time.Time) error {
	check := t.extra().Check
	switch {
	case ev != nil && check != "" && ev.Check != check:
		return &UnverifiedError{ID: t.ID, Check: check, Reason: fmt.Sprintf("the evidence is of check %q, not of the task's check %q", ev.Check, check)}
	case ev != nil && !ev.Passed():
		return &UnverifiedError{ID: t.ID, Check: check, Reason: "the evidence reports a failure (" + ev.String() + ")"}
	case ev != nil:
		record(t, now, HistoryVerified, by, ev.String())
	case check == "":
	case skip:
		record(t, now, HistorySkipped, by, fmt.Sprintf("check %s not run: completed with --no-verify", check))
	default:
		return &UnverifiedError{ID: t.ID, Check: check, Reason: fmt.Sprintf("its check %q has not passed (no evidence given)", check)}
	}
	return nil
}

// setCheck sets t's check and acceptance items (Extra).
func setCheck(t *Task, check string, acceptance []string) {
	x := t.editExtra()
	x.Check = check
	x.Acceptance = nil
	if len(acceptance) > 0 {
		x.Acceptance = append([]string(nil), acceptance...)
	}
	t.tidy()
}

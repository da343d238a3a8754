// Attempts and time: retries with backoff, deferred tasks, due dates.
// Every store decides them by the rules here, by its own clock (pgstore
// by the database's).

package taskgraph

import (
	"fmt"
	"time"
)

// Bounds of a task's schedule.
const (
	// MaxAttemptsLimit is the most attempts a task may be given, and
	// the most it counts (see Rules.Bounded).
	MaxAttemptsLimit = 1000
	// MaxBackoff caps the wait before a retry, however many attempts
	// doubled it.
	MaxBackoff = 24 * time.Hour
)

// Schedule validates the schedule fields a write would store: attempts
// from 0 to MaxAttemptsLimit, a backoff from 0 to MaxBackoff.
func (Rulebook) Schedule(field string, maxAttempts int, backoff time.Duration) error {
	if maxAttempts < 0 || maxAttempts > MaxAttemptsLimit {
		return &InvalidError{Field: field + "maxAttempts", Reason: fmt.Sprintf("%d is not between 0 (no limit) and %d", maxAttempts, MaxAttemptsLimit)}
	}
	if backoff < 0 || backoff > MaxBackoff {
		return &InvalidError{Field: field + "backoff", Reason: fmt.Sprintf("%v is not between 0 and %v", backoff, MaxBackoff)}
	}
	return nil
}

// RetryDelay is how long a task waits after its attempt-th failed
// attempt (1 for the first) before it is ready again: its backoff,
// doubled for each attempt after the first, at most MaxBackoff. It takes
// constant time for any input (a task read from a file or a row may hold
// anything), and a backoff of 0 or less is no wait.
func RetryDelay(backoff time.Duration, attempt int) time.Duration {
	if backoff <= 0 {
		return 0
	}
	// A day is under 2^47 ns: 47 doublings take even 1ns past
	// MaxBackoff, and a shift that stays under it cannot overflow.
	if n := attempt - 1; n > 0 {
		if n >= 47 || backoff > MaxBackoff>>n {
			return MaxBackoff
		}
		backoff <<= n
	}
	return min(backoff, MaxBackoff)
}

// Deferred reports whether t, a pending task, is not ready yet at now
// because of its NotBefore.
func (t *Task) Deferred(now time.Time) bool { return now.Before(t.NotBefore) }

// Overdue reports whether t has a due time that has passed at now, and
// is not finished.
func (t *Task) Overdue(now time.Time) bool {
	return !t.Due.IsZero() && !now.Before(t.Due) && !t.Status.Terminal()
}

// failAttempt counts a failed attempt of t at now, for reason, and
// reports whether attempts remain: if so, t is pending again, deferred by
// its backoff; if not, t is failed, its reason saying that it gave up.
func failAttempt(t *Task, now time.Time, reason string) (retry bool) {
	countAttempt(t)
	if t.Attempts < t.MaxAttempts {
		t.Status, t.Owner, t.Reason = Pending, "", ""
		t.ClaimedAt, t.LeaseExpiresAt = time.Time{}, time.Time{}
		t.NotBefore = now.Add(RetryDelay(t.Backoff, t.Attempts))
		return true
	}
	giveUp(t, reason)
	return false
}

// lapseAttempt counts the attempt of t whose lease lapsed, for the claim
// that takes t over, and reports whether that claim may go on: if the
// lapse used the last attempt, t is failed instead.
func lapseAttempt(t *Task, why string) (claim bool) {
	countAttempt(t)
	if t.Attempts < t.MaxAttempts {
		return true
	}
	if why == "" {
		giveUp(t, fmt.Sprintf("the lease of %s lapsed", t.Owner))
	} else {
		giveUp(t, fmt.Sprintf("the claim of %s lapsed: %s", t.Owner, why))
	}
	return false
}

// countAttempt counts an attempt of t, up to MaxAttemptsLimit: a task
// has no more attempts than any MaxAttempts allows once it has that many
// (a patch that lowers MaxAttempts, or a failed task patched back to
// pending, counts on from where it was), so the count stays within the
// bound every store reads.
func countAttempt(t *Task) {
	t.Attempts = min(t.Attempts+1, MaxAttemptsLimit)
}

// giveUp fails t for good, its reason saying why its last attempt ended.
func giveUp(t *Task, why string) {
	t.Status = Failed
	t.LeaseExpiresAt = time.Time{}
	t.Reason = fmt.Sprintf("gave up after %d attempts; the last: %s", t.Attempts, why)
}

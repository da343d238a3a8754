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
	// MaxAttemptsLimit is the most attempts a task may be given.
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
// doubled for each attempt after the first, at most MaxBackoff.
func RetryDelay(backoff time.Duration, attempt int) time.Duration {
	d := backoff
	for i := 1; i < attempt && d < MaxBackoff; i++ {
		d *= 2
	}
	return min(d, MaxBackoff)
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
	t.Attempts++
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
func lapseAttempt(t *Task) (claim bool) {
	t.Attempts++
	if t.Attempts < t.MaxAttempts {
		return true
	}
	giveUp(t, fmt.Sprintf("the lease of %s lapsed", t.Owner))
	return false
}

// giveUp fails t for good, its reason saying why its last attempt ended.
func giveUp(t *Task, why string) {
	t.Status = Failed
	t.LeaseExpiresAt = time.Time{}
	t.Reason = fmt.Sprintf("gave up after %d attempts; the last: %s", t.Attempts, why)
}

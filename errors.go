// The errors every Store returns: the sentinels for errors.Is and the
// typed errors that carry the detail.

package taskgraph

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/errs"
)

// Errors. Every error returned by a Store matches at most one of these with
// errors.Is; the typed errors below carry the detail.
var (
	ErrNotFound = errors.New("task not found")
	ErrBlocked  = errors.New("task is blocked")
	ErrClaimed  = errors.New("task is claimed by another owner")
	ErrConflict = errors.New("task was changed concurrently")
	ErrCycle    = errors.New("dependency cycle")
	ErrInvalid  = errs.ErrInvalid // defined apart, so that gitrepo returns it too
	ErrCorrupt  = errors.New("corrupt task file")
	ErrNoReady  = errors.New("no ready task")
	// ErrClosed is returned by a Store after Close.
	ErrClosed = errors.New("store is closed")
	// ErrUnknownOutcome is returned by a write that may or may not have
	// happened: the write became visible (a file renamed into place, a
	// journal written) but its commit point — the sync that makes it
	// durable (see Store) — failed. Every other error from a write means the
	// write did not happen. Like database/sql/driver.ErrBadConn, it tells
	// the caller not to retry blindly: re-read the tasks concerned and
	// decide again (a write with Patch.IfRev is safe to retry as it is).
	// The cause is wrapped.
	ErrUnknownOutcome = errors.New("the write may or may not have happened")
)

// ErrStalled is matched by the error Work returns when the graph is
// finished (nothing ready, blocked or in progress) but not all done: some
// tasks failed, or are stranded behind a failed or cancelled task. It is
// not a Store error: no Store method returns it.
var ErrStalled = errors.New("finished with failed or stranded tasks")

// StalledError names the tasks that keep a finished graph from being all
// done (see Board.Stall). It matches ErrStalled.
type StalledError struct {
	Failed   []ID // failed tasks, by id
	Stranded []ID // pending tasks that cannot start, by id (see Board.Stranded)
}

func (e *StalledError) Error() string {
	return fmt.Sprintf("nothing left can run: %d failed %v, %d stranded %v; reopen a failed task (or remove the edges that strand the others) to go on",
		len(e.Failed), e.Failed, len(e.Stranded), e.Stranded)
}

// Is reports whether target is ErrStalled.
func (e *StalledError) Is(target error) bool { return target == ErrStalled }

// unknownOutcomeError wraps the failure of a write's commit point.
// It matches ErrUnknownOutcome.
type unknownOutcomeError struct{ err error }

func (e *unknownOutcomeError) Error() string {
	return "taskgraph: the write may or may not have happened (re-read before retrying): " + e.err.Error()
}

// Unwrap returns the failure.
func (e *unknownOutcomeError) Unwrap() error { return e.err }

// Is reports whether target is ErrUnknownOutcome.
func (e *unknownOutcomeError) Is(target error) bool { return target == ErrUnknownOutcome }

// NotFoundError names a task that does not exist. It matches ErrNotFound.
type NotFoundError struct{ ID ID }

func (e *NotFoundError) Error() string { return fmt.Sprintf("task %d not found", e.ID) }

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// BlockedError reports the unfinished blockers that keep a task from
// starting or completing. It matches ErrBlocked.
type BlockedError struct {
	ID      ID
	By      []ID // unfinished blockers, including missing ones
	Missing []ID // the subset of By that does not exist
	// Failed is the subset of By that is failed or cancelled: they will
	// not complete unless reopened, so the task is stranded.
	Failed []ID
	// OutOfOrder is the subset of By that is completed but counts as
	// unfinished: completed while a blocker of its own was not
	// (Rulebook.OutOfOrder), as a merge of two branches can leave it.
	OutOfOrder []ID
}

func (e *BlockedError) Error() string {
	s := fmt.Sprintf("task %d is blocked by %v", e.ID, e.By)
	if len(e.Missing) > 0 {
		s += fmt.Sprintf(" (missing: %v)", e.Missing)
	}
	if len(e.Failed) > 0 {
		s += fmt.Sprintf(" (failed or cancelled: %v; reopen them or remove those edges)", e.Failed)
	}
	if len(e.OutOfOrder) > 0 {
		s += fmt.Sprintf(" (completed before their own blockers: %v; they count once those are completed, or when reopened and done again: see taskgraph check)", e.OutOfOrder)
	}
	return s
}

// Is reports whether target is ErrBlocked.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// ClaimedError reports that a task belongs to another owner. It matches
// ErrClaimed.
type ClaimedError struct {
	ID    ID
	Owner string
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("task %d is claimed by %q", e.ID, e.Owner)
}

// Is reports whether target is ErrClaimed.
func (e *ClaimedError) Is(target error) bool { return target == ErrClaimed }

// ConflictError reports a failed IfRev precondition. It matches ErrConflict.
type ConflictError struct {
	ID        ID
	Want, Got int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("task %d is at rev %d, not %d: reload it and retry", e.ID, e.Got, e.Want)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// CycleError reports a dependency cycle. Path lists it in execution order,
// first id repeated last: Path [3 5 3] means 3 blocks 5 and 5 blocks 3.
// It matches ErrCycle.
type CycleError struct {
	Path []ID
	// Keys names by their keys the tasks of Path that a plan was creating
	// (CreatePlan): their ids were never given out. Nil otherwise.
	Keys map[ID]string
}

func (e *CycleError) Error() string {
	return "dependency cycle " + strings.Join(e.Names(), " -> ")
}

// Names returns Path as the error shows it: an id, or the quoted key of a
// task a plan was creating.
func (e *CycleError) Names() []string {
	out := make([]string, len(e.Path))
	for i, id := range e.Path {
		if k, ok := e.Keys[id]; ok {
			out[i] = strconv.Quote(k)
		} else {
			out[i] = strconv.FormatInt(int64(id), 10)
		}
	}
	return out
}

// Is reports whether target is ErrCycle.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

// InvalidError reports an argument or transition that is not allowed; Field
// names what was wrong. It matches ErrInvalid.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// CorruptError reports a task file (or the directory's meta or journal file)
// that cannot be used. The file is left exactly as it is. It matches
// ErrCorrupt.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	what := "task file"
	if !strings.HasPrefix(filepath.Base(e.Path), taskFilePrefix) {
		what = "file"
	}
	return fmt.Sprintf("corrupt %s %s: %v (fix or remove the file; taskgraph never rewrites it)", what, e.Path, e.Err)
}

// Unwrap returns the underlying problem.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// dirNotFoundError reports that the task directory given to Open with
// WithoutCreate does not exist. It matches ErrNotFound.
type dirNotFoundError struct {
	dir string
	err error
}

func (e *dirNotFoundError) Error() string {
	return fmt.Sprintf("taskgraph: open %s: the task directory does not exist (nothing was ever written there; it is not created when opening WithoutCreate)", e.dir)
}

// Unwrap returns the failure of the stat, which matches fs.ErrNotExist.
func (e *dirNotFoundError) Unwrap() error { return e.err }

// Is reports whether target is ErrNotFound.
func (e *dirNotFoundError) Is(target error) bool { return target == ErrNotFound }

// ErrDeferred is matched by the error of a claim of a task whose
// NotBefore is still to come (a deferred task, or a retry waiting out its
// backoff): see DeferredError.
var ErrDeferred = errors.New("task is deferred")

// DeferredError says that a task cannot start before Until. It matches
// ErrDeferred.
type DeferredError struct {
	ID    ID
	Until time.Time
}

func (e *DeferredError) Error() string {
	return fmt.Sprintf("task %d is deferred: it cannot start before %s", e.ID, e.Until.UTC().Format(time.RFC3339))
}

// Is reports whether target is ErrDeferred.
func (e *DeferredError) Is(target error) bool { return target == ErrDeferred }

// ErrGaveUp is matched by the error of a Claim of a task whose lease
// lapsed on its last attempt (Task.MaxAttempts): the claim is not
// granted, and the task is failed instead. This is the one error after
// which a write happened — the failure, which is durable — not the claim
// that was asked for. See GaveUpError.
var ErrGaveUp = errors.New("task gave up: its last attempt lapsed")

// GaveUpError names a task failed by the claim that would have been one
// attempt too many. It matches ErrGaveUp.
type GaveUpError struct {
	ID       ID
	Attempts int
	Reason   string // the task's reason, as stored
}

func (e *GaveUpError) Error() string {
	return fmt.Sprintf("task %d was not claimed: it is failed now, %s (reopen it for more attempts)", e.ID, e.Reason)
}

// Is reports whether target is ErrGaveUp.
func (e *GaveUpError) Is(target error) bool { return target == ErrGaveUp }

// ErrLimited is matched by the error of a claim, or an update to
// in_progress, refused because a label of the task is at its concurrency
// limit (Limiter): see LimitError.
var ErrLimited = errors.New("label at its concurrency limit")

// LimitError says that task ID cannot start now: Held tasks carrying
// Label are in progress, Label's limit. It matches ErrLimited.
type LimitError struct {
	ID    ID
	Label string
	Limit int
	Held  int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("task %d cannot start now: %d tasks labelled %q are in progress, its limit of %d; wait for one to finish", e.ID, e.Held, e.Label, e.Limit)
}

// Is reports whether target is ErrLimited.
func (e *LimitError) Is(target error) bool { return target == ErrLimited }

// ErrLapsed is matched by the error of a Renew of a claim that its
// MaxRuntime or its no-progress window has ended (Task.Lapse): no renewal
// brings it back, and anyone may claim the task. See LapsedError.
var ErrLapsed = errors.New("the claim lapsed")

// LapsedError says that Owner's claim of task ID ended At, by Clock
// (ClockRuntime or ClockProgress), for Reason. It matches ErrLapsed.
type LapsedError struct {
	ID     ID
	Owner  string
	Clock  Clock
	At     time.Time
	Reason string
}

func (e *LapsedError) Error() string {
	return fmt.Sprintf("task %d: the claim of %s lapsed at %s (%s): a renewal does not bring it back; claim the task again for a new attempt", e.ID, e.Owner, e.At.UTC().Format(time.RFC3339), e.Reason)
}

// Is reports whether target is ErrLapsed.
func (e *LapsedError) Is(target error) bool { return target == ErrLapsed }

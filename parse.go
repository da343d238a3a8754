// The parsers and validators of user-written values (priority, lease,
// id, status, state, options): one parser and one error text per concept, for
// the CLI, the tools and the plan reader alike.

package taskgraph

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The parsers and validators of the values that a person or an agent
// writes — a priority, a lease, task ids, a status, a state — one of
// each, with one error text, so that the taskgraph command, the agent
// tools and the plan reader accept the same spellings and refuse the rest
// alike. Each returns an *InvalidError whose Field names what was wrong
// and whose Reason reads on its own (the command shows it after the flag
// or argument it is about, the tools after the field).

// ParsePriority reads a priority written "P0" to "P4" (or "p0" to "p4")
// or "0" to "4", exactly: no spaces, signs or leading zeros. It returns an
// *InvalidError, with the text of Rules.Priority, for anything else.
func ParsePriority(s string) (Priority, error) {
	d := s
	if len(d) > 0 && (d[0] == 'P' || d[0] == 'p') {
		d = d[1:]
	}
	if len(d) == 1 && '0' <= d[0] && d[0] <= '4' {
		return PriorityLevel(int(d[0] - '0')), nil
	}
	shown := fmt.Sprintf("%.20q", s)
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		shown = s // a number, as a JSON priority is given
	}
	return 0, &InvalidError{Field: "priority", Reason: priorityReason(shown)}
}

// Priority validates a priority that a write would store in field.
func (Rulebook) Priority(field string, p Priority) error {
	if p.Valid() {
		return nil
	}
	return &InvalidError{Field: field, Reason: priorityReason(strconv.Itoa(p.Level()))}
}

func priorityReason(shown string) string {
	return shown + " is not a priority: use 0 (P0, most urgent) to 4 (P4, least); the default is 2"
}

// The reasons of the lease errors, for ParseLease and Rules.Lease.
const (
	leaseNegative = "a lease cannot be negative: give how long it should last, e.g. 30m"
	leaseNotTime  = "not a duration such as 30m"
	leaseRenew    = "a lease must be renewed for a positive duration, e.g. 30m"
)

// ParseLease reads the length of a lease written as a Go duration
// ("30m", "1h30m"). A negative one is refused (however it is written: "-1"
// too) as Rules.Lease refuses it; 0 is no lease. Errors are an
// *InvalidError about field "lease".
func ParseLease(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case strings.HasPrefix(s, "-") && (err != nil || d < 0):
		return 0, &InvalidError{Field: "lease", Reason: leaseNegative}
	case err != nil:
		return 0, &InvalidError{Field: "lease", Reason: leaseNotTime}
	}
	return d, nil
}

// Lease validates the length of a lease given in field: it cannot be
// negative; 0 is no lease. WithLease, the --lease flags and the agent
// tools' lease all run it.
func (Rulebook) Lease(field string, d time.Duration) error {
	if d < 0 {
		return &InvalidError{Field: field, Reason: leaseNegative}
	}
	return nil
}

// maxLeaseSeconds is the longest lease in seconds that a time.Duration
// holds.
const maxLeaseSeconds = int64(1<<63-1) / int64(time.Second)

// LeaseSeconds validates a lease given as a whole number of seconds in
// field, as the agent tools take it, and returns it as a duration: it
// is validated as Lease does, and must fit a time.Duration (290 years).
func (Rulebook) LeaseSeconds(field string, n int64) (time.Duration, error) {
	if n > maxLeaseSeconds {
		return 0, &InvalidError{Field: field, Reason: fmt.Sprintf("%d seconds is too long a lease: give at most %d", n, maxLeaseSeconds)}
	}
	d := time.Duration(n) * time.Second
	return d, Rules.Lease(field, d)
}

// RenewArgs validates the arguments of Renew, before any task is read:
// the lease must be positive.
func (Rulebook) RenewArgs(ttl time.Duration) error {
	return renewLease("ttl", ttl)
}

func renewLease(field string, ttl time.Duration) error {
	if err := Rules.Lease(field, ttl); err != nil {
		return err
	}
	if ttl == 0 {
		return &InvalidError{Field: field, Reason: leaseRenew}
	}
	return nil
}

// ParseID reads a task id written "12" or "#12". It returns an
// *InvalidError about field "id", with the text of Rules.ID, for anything
// else (a number that is not positive included).
func ParseID(s string) (ID, error) { return parseID("id", s) }

func parseID(field, s string) (ID, error) {
	digits := strings.TrimPrefix(s, "#")
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || strings.HasPrefix(digits, "+") {
		return 0, &InvalidError{Field: field, Reason: idReason(fmt.Sprintf("%.24q", s))}
	}
	return ID(n), nil
}

// ParseIDs reads a list of task ids separated by commas, "1,2,#3", each
// as ParseID reads it, with spaces around each allowed. An empty element
// is refused. Errors name the element, as in "ids[1]".
func ParseIDs(s string) ([]ID, error) {
	parts := strings.Split(s, ",")
	out := make([]ID, len(parts))
	for i, p := range parts {
		id, err := parseID(fmt.Sprintf("ids[%d]", i), strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out[i] = id
	}
	return out, nil
}

// ID validates a task id given in field: it must be positive.
func (Rulebook) ID(field string, id ID) error {
	if id <= 0 {
		return &InvalidError{Field: field, Reason: idReason(strconv.FormatInt(int64(id), 10))}
	}
	return nil
}

// IDs validates a list of task ids given in field, each as ID does;
// errors name the element, as in "blockedBy[2]".
func (Rulebook) IDs(field string, ids []ID) error {
	for i, id := range ids {
		if err := Rules.ID(fmt.Sprintf("%s[%d]", field, i), id); err != nil {
			return err
		}
	}
	return nil
}

func idReason(shown string) string {
	return shown + " is not a task id: use a positive integer such as 12"
}

// ParseStatus reads a status by its name: pending, in_progress,
// completed, failed or cancelled; with allowed, only one of those. It
// returns an *InvalidError about field "status", with the text of every
// status error ("\"done\" is not pending, …"), for anything else.
func ParseStatus(s string, allowed ...Status) (Status, error) {
	st := Status(s)
	if len(allowed) == 0 && st.Valid() || slices.Contains(allowed, st) {
		return st, nil
	}
	if len(allowed) == 0 {
		return "", statusError("status", s)
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	list := strings.Join(names, " or ")
	if n := len(names); n > 2 {
		list = strings.Join(names[:n-1], ", ") + " or " + names[n-1]
	}
	return "", &InvalidError{Field: "status", Reason: fmt.Sprintf("%.40q is not %s", s, list)}
}

// statusError is the error for a status name that is none of the five.
func statusError(field string, s string) error {
	return &InvalidError{Field: field, Reason: fmt.Sprintf("%.40q is not %s", s, statusList)}
}

// statusList names the statuses, for errors.
const statusList = "pending, in_progress, completed, failed or cancelled"

// ParseState reads a state by its name, as it prints: ready,
// awaiting_approval, deferred,
// limited, blocked, stranded, in_progress, completed, failed or cancelled. It returns an
// *InvalidError about field "state" for anything else, naming the states.
func ParseState(s string) (State, error) {
	switch st := State(s); st {
	case StateReady, StateAwaitingApproval, StateDeferred, StateLimited, StateBlocked, StateStranded, StateInProgress, StateCompleted, StateFailed, StateCancelled:
		return st, nil
	}
	return "", &InvalidError{Field: "state", Reason: fmt.Sprintf("%.40q is not %s", s, stateList)}
}

// stateList names the states, for errors.
const stateList = "ready, awaiting_approval, deferred, limited, blocked, stranded, in_progress, completed, failed or cancelled"

// ClaimOptions validates what opts ask of Claim or ClaimNext, before
// anything is read, and returns it: the lease (see Lease) and the labels
// (see Labels; they come back sorted). Every store reads its ClaimOptions
// this way only.
func (Rulebook) ClaimOptions(opts []ClaimOption) (ClaimSettings, error) {
	c := applyOptions[claimConfig](opts)
	if err := Rules.Lease("lease", c.lease); err != nil {
		return ClaimSettings{}, err
	}
	labels, err := Rules.Labels("labels", c.labels)
	if err != nil {
		return ClaimSettings{}, err
	}
	if c.under != 0 {
		if err := Rules.ID("under", c.under); err != nil {
			return ClaimSettings{}, err
		}
	}
	return ClaimSettings{Lease: c.lease, Labels: labels, Under: c.under}, nil
}

// CompleteOptions validates what opts ask of Complete, before anything is
// read, and returns it: the result is text (see CompleteArgs).
func (Rulebook) CompleteOptions(opts []CompleteOption) (CompleteSettings, error) {
	c := applyOptions[completeConfig](opts)
	if err := Rules.CompleteArgs(c.result); err != nil {
		return CompleteSettings{}, err
	}
	if err := evidenceArgs(c.evidence, c.skip); err != nil {
		return CompleteSettings{}, err
	}
	return CompleteSettings{Result: c.result, Evidence: c.evidence, SkipCheck: c.skip}, nil
}

// DeleteOptions returns what opts ask of Delete. Every option is valid;
// the error is for the options to come.
func (Rulebook) DeleteOptions(opts []DeleteOption) (DeleteSettings, error) {
	c := applyOptions[deleteConfig](opts)
	return DeleteSettings{Detach: c.detach}, nil
}

// A graph kept in git: how git merges two versions of a task file (the
// merge driver), and what it commits of one (the clean filter), by the
// file format's own rules. `taskgraph init` registers both.

package taskgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"
)

// CleanTaskFile returns what git should store of the task file name
// holding data: the task without what belongs to one machine's live
// session — the lease's expiry and the version number, which every lease
// renewal changes — so that a running agent renewing its lease does not
// keep the working tree dirty. The owner and the claim stay. A file that
// is not a task file, or that cannot be decoded, is returned as it is:
// the filter never loses a byte it does not understand.
//
// Another checkout reads a committed claim as a claim without a lease: it
// holds there until it is completed, released or reassigned (a graph in
// git carries what was done, not live coordination, which the agents of
// one checkout share through its .tasks directory).
func CleanTaskFile(name string, data []byte) []byte {
	id, ok := parseTaskFileName(filepath.Base(name))
	if !ok {
		return data
	}
	t, err := decodeTask(id, data)
	if err != nil {
		return data
	}
	clean(t)
	out, err := encodeTask(t)
	if err != nil {
		return data
	}
	return out
}

// clean drops what CleanTaskFile leaves out.
func clean(t *Task) {
	t.Rev, t.LeaseExpiresAt = 0, time.Time{}
	if t.Extra != nil && t.Extra.keys != nil {
		t.Extra.keys = nil // write keys are the store's, for a retry within minutes
		t.tidy()
	}
}

// MergeTaskFiles merges two versions of a file of a task directory that
// git is merging — ours and theirs, each changed from base (nil or empty
// when both sides added the file) — and returns the merged file, valid
// and clean (see CleanTaskFile). conflicts says, in words, what the rules
// below could not decide; the merged file then holds the choice named
// there, and git is told of a conflict so that a person looks.
//
// The rules, field by field: a field only one side changed takes that
// side's value. Where both changed it differently —
//   - blockedBy and labels merge as sets: an element either side added is
//     in, one either side removed is out;
//   - metadata and fields taskgraph does not know merge key by key, by
//     these same rules;
//   - the task's state (status, owner, the claim, reason and result) is
//     taken whole from the side further along the workflow: pending, then
//     in_progress, then completed, failed or cancelled. Two different
//     ends (completed on one side, failed on the other), or two owners
//     holding it in progress, are conflicts: the later write is kept;
//   - text and every other value take the later write (updatedAt); two
//     writes at the same instant are a conflict, and ours is kept.
//
// Two different tasks under one id (both sides added the file, created at
// different times) cannot be merged: ours is kept and the conflict says
// how to bring theirs back. The meta file (.taskgraph.meta) merges to the
// higher high-water mark. An error means the inputs are not files of a
// task directory that can be merged at all: a version that a store would
// read as corrupt (not JSON, not UTF-8, out of the bounds of
// Rules.Bounded), or a merge too big to be a task file.
func MergeTaskFiles(name string, base, ours, theirs []byte) (merged []byte, conflicts []string, err error) {
	if filepath.Base(name) == metaFileName {
		return mergeMeta(base, ours, theirs)
	}
	id, ok := parseTaskFileName(filepath.Base(name))
	if !ok {
		return nil, nil, fmt.Errorf("taskgraph: merge %s: not a task file (task_<id>.json) or %s", name, metaFileName)
	}
	side := func(which string, data []byte) (*Task, error) {
		t, err := decodeTask(id, data)
		if err != nil {
			return nil, fmt.Errorf("taskgraph: merge %s: %s version: %w", name, which, err)
		}
		clean(t)
		return t, nil
	}
	o, err := side("our", ours)
	if err != nil {
		return nil, nil, err
	}
	th, err := side("their", theirs)
	if err != nil {
		return nil, nil, err
	}
	var b *Task
	if len(bytes.TrimSpace(base)) > 0 {
		if b, err = side("the common", base); err != nil {
			return nil, nil, err
		}
	} else if !o.CreatedAt.Equal(th.CreatedAt) || o.CreatedAt.IsZero() && o.Subject != th.Subject {
		out, _ := encodeTask(o)
		return out, []string{fmt.Sprintf("two different tasks got id %d: %q here (created %s) and %q on the other side (created %s); "+
			"this side's is kept; git keeps the other as stage 3: see it with `git show :3:%s` and add it again as a new task",
			id, o.Subject, createdText(o.CreatedAt), th.Subject, createdText(th.CreatedAt), filepath.ToSlash(name))}, nil
	} else {
		b = &Task{ID: id} // both added the same task: every difference is a change on both sides
	}
	m := merger{base: b, ours: o, theirs: th, later: th.UpdatedAt.After(o.UpdatedAt), tie: th.UpdatedAt.Equal(o.UpdatedAt)}
	out := m.merge()
	data, err := encodeTask(out)
	if err != nil {
		return nil, nil, fmt.Errorf("taskgraph: merge %s: %w", name, err)
	}
	if len(data) > MaxTaskSize { // each side's text, together
		return nil, nil, fmt.Errorf("taskgraph: merge %s: the merged task would be %d bytes, over the %d-byte limit (MaxTaskSize): merge it by hand", name, len(data), MaxTaskSize)
	}
	return data, m.conflicts, nil
}

func createdText(t time.Time) string {
	if t.IsZero() {
		return "at an unknown time"
	}
	return t.UTC().Format(time.RFC3339)
}

// merger merges one task's three versions.
type merger struct {
	base, ours, theirs *Task
	later              bool // theirs was written after ours
	tie                bool // at the same instant
	conflicts          []string
}

func (m *merger) conflict(format string, args ...any) {
	m.conflicts = append(m.conflicts, fmt.Sprintf("task %d: ", m.ours.ID)+fmt.Sprintf(format, args...))
}

// pick is the three-way rule for one value: the side that changed it, or,
// where both did differently, the later write (ours at a tie, reported).
func pick[T any](m *merger, field string, base, ours, theirs T, eq func(a, b T) bool) T {
	switch {
	case eq(ours, theirs), eq(base, theirs):
		return ours
	case eq(base, ours):
		return theirs
	case m.tie:
		m.conflict("both sides changed %s at the same instant; this side's is kept", field)
		return ours
	case m.later:
		return theirs
	}
	return ours
}

func same[T comparable](a, b T) bool { return a == b }

func sameJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}

func (m *merger) merge() *Task {
	b, o, th := m.base, m.ours, m.theirs
	out := o.clone()
	out.Subject = pick(m, "the subject", b.Subject, o.Subject, th.Subject, same)
	out.Description = pick(m, "the description", b.Description, o.Description, th.Description, same)
	out.Key = pick(m, "the key", b.Key, o.Key, th.Key, same)
	out.Priority = pick(m, "the priority", b.Priority, o.Priority, th.Priority, same)
	out.Parent = pick(m, "the parent", b.Parent, o.Parent, th.Parent, same)
	out.NotBefore = pick(m, "notBefore", b.NotBefore, o.NotBefore, th.NotBefore, time.Time.Equal)
	out.Due = pick(m, "the due time", b.Due, o.Due, th.Due, time.Time.Equal)
	out.MaxAttempts = pick(m, "maxAttempts", b.MaxAttempts, o.MaxAttempts, th.MaxAttempts, same)
	out.Backoff = pick(m, "the backoff", b.Backoff, o.Backoff, th.Backoff, same)
	out.BlockedBy = mergeSet(b.BlockedBy, o.BlockedBy, th.BlockedBy)
	out.Labels = mergeSet(b.Labels, o.Labels, th.Labels)
	slices.Sort(out.Labels)
	if len(out.Labels) == 0 {
		out.Labels = nil
	}
	out.Metadata = mergeMap(m, "metadata", b.Metadata, o.Metadata, th.Metadata)
	bx, ox, tx := b.extra(), o.extra(), th.extra()
	setLiveness(&out, pick(m, "maxRuntime", bx.MaxRuntime, ox.MaxRuntime, tx.MaxRuntime, same),
		pick(m, "progressWindow", bx.ProgressWindow, ox.ProgressWindow, tx.ProgressWindow, same))
	m.mergeApproval(&out, bx, ox, tx)
	setCheck(&out, pick(m, "the check", bx.Check, ox.Check, tx.Check, same),
		pick(m, "the acceptance items", bx.Acceptance, ox.Acceptance, tx.Acceptance, slices.Equal[[]string]))
	if u := mergeMap(m, "field", bx.unknown, ox.unknown, tx.unknown); len(u) > 0 {
		out.editExtra().unknown = u
	} else if out.Extra != nil {
		out.Extra.unknown = nil
		out.tidy()
	}
	m.mergeState(&out)
	out.Notes = mergeLog(o.Notes, th.Notes, func(n Note) time.Time { return n.At }, func(n Note) Note { n.At = n.At.UTC(); return n })
	if len(out.Notes) > MaxNotes {
		out.Notes = out.Notes[len(out.Notes)-MaxNotes:]
	}
	out.History = mergeLog(o.History, th.History, func(e Transition) time.Time { return e.At }, func(e Transition) Transition { e.At = e.At.UTC(); return e })
	if len(out.History) > MaxHistory {
		out.History = summarise(out.History, len(out.History)-MaxHistory)
	}
	if out.CreatedAt.IsZero() || !th.CreatedAt.IsZero() && th.CreatedAt.Before(out.CreatedAt) {
		out.CreatedAt = th.CreatedAt
	}
	out.UpdatedAt = o.UpdatedAt
	if th.UpdatedAt.After(out.UpdatedAt) {
		out.UpdatedAt = th.UpdatedAt
	}
	return &out
}

// state is the part of a task that moves with its status.
type state struct {
	Status           Status
	Owner, PrevOwner string
	ClaimedAt        time.Time
	Reason, Result   string
	Attempts         int
}

func stateOf(t *Task) state {
	return state{t.Status, t.Owner, t.PrevOwner, t.ClaimedAt.UTC(), t.Reason, t.Result, t.Attempts}
}

// stage orders statuses along the workflow.
func stage(s Status) int {
	switch s {
	case Pending:
		return 0
	case InProgress:
		return 1
	}
	return 2
}

func (m *merger) mergeState(out *Task) {
	b, o, th := stateOf(m.base), stateOf(m.ours), stateOf(m.theirs)
	from := m.ours // the side whose state is kept, as it wrote it
	switch {
	case o == th, b == th:
	case b == o:
		from = m.theirs
	case stage(o.Status) != stage(th.Status):
		if stage(th.Status) > stage(o.Status) {
			from = m.theirs
		}
	default:
		if m.later {
			from = m.theirs
		}
		s := stateOf(from)
		switch {
		case o.Status != th.Status:
			m.conflict("it is %s here and %s on the other side; the later (%s) is kept", describe(o), describe(th), describe(s))
		case o.Status == InProgress && o.Owner != th.Owner:
			m.conflict("%s holds it here and %s on the other side; the later claim (%s) is kept: tell the other to stop", o.Owner, th.Owner, s.Owner)
		case m.tie:
			m.conflict("both sides changed its %s state differently at the same instant; this side's is kept", o.Status)
		}
	}
	out.Status, out.Owner, out.PrevOwner, out.ClaimedAt, out.Reason, out.Result, out.Attempts = from.Status, from.Owner, from.PrevOwner, from.ClaimedAt, from.Reason, from.Result, from.Attempts
}

func describe(s state) string {
	switch {
	case s.Reason != "":
		return fmt.Sprintf("%s (%q)", s.Status, s.Reason)
	case s.Result != "":
		return fmt.Sprintf("%s (%q)", s.Status, s.Result)
	}
	return string(s.Status)
}

// mergeLog merges two append-only logs (notes, history), each in time
// order, into one in time order: every entry of either side, an entry
// both sides have once. key is an entry with its time in UTC: two reads
// of one time with an offset (+05:00) are the same instant in two
// locations, which == tells apart.
func mergeLog[T comparable](ours, theirs []T, at func(T) time.Time, key func(T) T) []T {
	out := make([]T, 0, len(ours)+len(theirs))
	seen := make(map[T]bool, len(ours))
	for _, e := range ours {
		seen[key(e)] = true
	}
	i := 0
	for _, e := range theirs {
		if seen[key(e)] {
			continue
		}
		for i < len(ours) && !at(ours[i]).After(at(e)) {
			out = append(out, ours[i])
			i++
		}
		out = append(out, e)
	}
	return nilIfEmpty(append(out, ours[i:]...))
}

// mergeSet merges three versions of a set kept as a slice: ours' order,
// then what theirs added.
func mergeSet[T comparable](base, ours, theirs []T) []T {
	out := make([]T, 0, len(ours)+len(theirs))
	for _, e := range ours {
		if slices.Contains(theirs, e) || !slices.Contains(base, e) {
			out = append(out, e)
		}
	}
	for _, e := range theirs {
		if !slices.Contains(base, e) && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// mergeMap merges three versions of a map key by key: a key either side
// removed and the other left alone is gone.
func mergeMap[V any](m *merger, what string, base, ours, theirs map[string]V) map[string]V {
	out := map[string]V{}
	keys := map[string]bool{}
	for _, mp := range []map[string]V{base, ours, theirs} {
		for k := range mp {
			keys[k] = true
		}
	}
	type opt struct {
		v  V
		ok bool
	}
	eq := func(a, b opt) bool { return a.ok == b.ok && (!a.ok || sameJSON(a.v, b.v)) }
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		get := func(mp map[string]V) opt { v, ok := mp[k]; return opt{v, ok} }
		if r := pick(m, fmt.Sprintf("%s %q", what, k), get(base), get(ours), get(theirs), eq); r.ok {
			out[k] = r.v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// mergeMeta merges the meta file: the higher high-water mark; the limits
// label by label, the side that changed one, and where both did, the
// lower limit (the safer), a removal counting as no limit; the liveness
// defaults the same way, the shorter of each clock.
func mergeMeta(base, ours, theirs []byte) ([]byte, []string, error) {
	var ms [3]meta
	for i, data := range [][]byte{base, ours, theirs} {
		if len(bytes.TrimSpace(data)) == 0 {
			continue
		}
		m, err := parseMetaFile(data)
		if err != nil {
			return nil, nil, fmt.Errorf("taskgraph: merge %s: %w", metaFileName, err)
		}
		ms[i] = m
	}
	out := meta{HighWater: max(ms[0].HighWater, ms[1].HighWater, ms[2].HighWater)}
	out.Limits = mergeLabels(ms[0].Limits, ms[1].Limits, ms[2].Limits, func(o, t int) int {
		if o == 0 || t == 0 {
			return max(o, t) // one side removed it, the other changed it: keep a limit
		}
		return min(o, t)
	})
	out.Liveness = mergeLabels(ms[0].Liveness, ms[1].Liveness, ms[2].Liveness, func(o, t metaLiveness) metaLiveness {
		// The stricter limit of each, a removal losing to a change.
		return metaLiveness{stricter(o.MaxRuntime, t.MaxRuntime), stricter(o.ProgressWindow, t.ProgressWindow)}
	})
	if p := mergePolicy(ms[0].Approval, ms[1].Approval, ms[2].Approval); len(p.Labels)+len(p.Via) > 0 {
		out.Approval = &p
	}
	data, _ := json.Marshal(out)
	return append(data, '\n'), nil, nil
}

// mergeLabels merges a setting kept per label (a limit, a liveness
// default; the zero value: none) from base, ours and theirs, label by
// label: the side that changed it, and where both did, both(ours,
// theirs). Nil if no label keeps a setting.
func mergeLabels[V comparable](base, ours, theirs map[string]V, both func(o, t V) V) map[string]V {
	var out map[string]V
	for _, side := range []map[string]V{ours, theirs} {
		for l := range side {
			bv, ov, tv := base[l], ours[l], theirs[l]
			v := ov
			switch {
			case ov == tv, tv == bv:
			case ov == bv:
				v = tv
			default:
				v = both(ov, tv)
			}
			var zero V
			if v != zero {
				if out == nil {
					out = map[string]V{}
				}
				out[l] = v
			}
		}
	}
	return out
}

// stricter is the shorter of two durations of the meta file ("" none),
// a duration winning over none.
func stricter(a, b string) string {
	da, ea := time.ParseDuration(a)
	db, eb := time.ParseDuration(b)
	switch {
	case a == "" || ea != nil:
		return b
	case b == "" || eb != nil:
		return a
	case db < da:
		return b
	}
	return a
}

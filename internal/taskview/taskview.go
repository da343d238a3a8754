// Package taskview is a task's outward fields, listed once — each with its
// JSON name, how it is read from a taskgraph.Task (or from what a view
// derives of the graph) and how it is written — and the writer that makes
// a view of them: the CLI's --json, the tools' text, the board's JSON.
// A View is a choice and order of those fields and a Format (how times,
// durations, notes and links are written), so that a field a task gains
// is added once here and named in the views that show it.
//
// Append writes a view by hand, without reflection: the board's snapshot
// writes 100,000 tasks, and list --json as many.
package taskview

import (
	"strconv"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// Derived is what a view says of a task beyond the task itself: where it
// stands in its graph, as the caller worked it out. A view that names
// none of these fields may pass nil.
type Derived struct {
	State taskgraph.State // its column, list or state; "" for none
	Why   string          // why a pending task cannot start (taskgraph.Explain)
	// WaitingOn are the blockers not completed, Missing those that name no
	// task, StrandedBy the failed or cancelled task that strands it, and
	// Strands the tasks a failed or cancelled one strands (the board).
	WaitingOn, Missing []taskgraph.ID
	StrandedBy         taskgraph.ID
	Strands            []taskgraph.ID
	LeaseLapsed        bool // its claim has lapsed (taskgraph.Task.Lapsed)
}

// none is the Derived of a view given nil.
var none Derived

// field is one outward field of a task. Every field is listed once: its
// name in names, how it is read and written in writer.fields.
type field uint8

const (
	id field = iota
	subject
	description
	status
	state
	owner
	priority
	labels
	key
	parent
	reason
	result
	blockedBy
	blocks
	waitingOn
	missing
	strandedBy
	strands
	why
	metadata
	createdAt
	updatedAt
	claimedAt
	leaseExpiresAt
	leaseLapsed
	lapsesAt
	clock
	maxRuntime
	progressWindow
	needsApproval
	awaitingApproval
	createdVia
	links
	check
	acceptance
	prevOwner
	rev
	notBefore
	due
	maxAttempts
	attempts
	backoff
	notes
	history
	nFields
)

// names are the fields' JSON names.
var names = [nFields]string{
	id: "id", subject: "subject", description: "description", status: "status", state: "state",
	owner: "owner", priority: "priority", labels: "labels", key: "key", parent: "parent",
	reason: "reason", result: "result", blockedBy: "blockedBy", blocks: "blocks",
	waitingOn: "waitingOn", missing: "missing", strandedBy: "strandedBy", strands: "strands",
	why: "why", metadata: "metadata", createdAt: "createdAt", updatedAt: "updatedAt",
	claimedAt: "claimedAt", leaseExpiresAt: "leaseExpiresAt", leaseLapsed: "leaseLapsed",
	lapsesAt: "lapsesAt", clock: "clock", maxRuntime: "maxRuntime", progressWindow: "progressWindow",
	needsApproval: "needsApproval", awaitingApproval: "awaitingApproval", createdVia: "createdVia",
	links: "links", check: "check", acceptance: "acceptance", prevOwner: "prevOwner", rev: "rev",
	notBefore: "notBefore", due: "due", maxAttempts: "maxAttempts", attempts: "attempts",
	backoff: "backoff", notes: "notes", history: "history",
}

// fields writes the members ms of t, each its field as read here (w's
// methods leave it out where the member says so and it says nothing). A
// switch, not a table of functions: a value passed to a function called
// through a variable escapes, and the board would allocate for every
// task; and within the loop, not a call for each member.
func (w *writer) fields(ms []member, t *taskgraph.Task, d *Derived) {
	for i := range ms {
		m := &ms[i]
		switch m.field {
		case id:
			w.int(m, int64(t.ID))
		case subject:
			w.str(m, t.Subject)
		case description:
			w.str(m, t.Description)
		case status:
			w.str(m, string(t.Status))
		case state:
			w.str(m, string(d.State))
		case owner:
			w.str(m, t.Owner)
		case priority: // left out, it is the default; else a number, 0 (P0) to 4
			if !m.omit || t.Priority != taskgraph.DefaultPriority {
				w.key(m)
				w.b = strconv.AppendInt(w.b, int64(t.Priority.Level()), 10)
			}
		case labels:
			w.strs(m, t.Labels)
		case key:
			w.str(m, t.Key)
		case parent:
			w.int(m, int64(t.Parent))
		case reason:
			w.str(m, t.Reason)
		case result:
			w.str(m, t.Result)
		case blockedBy:
			w.ids(m, t.BlockedBy)
		case blocks:
			w.ids(m, t.Blocks)
		case waitingOn:
			w.ids(m, d.WaitingOn)
		case missing:
			w.ids(m, d.Missing)
		case strandedBy:
			w.int(m, int64(d.StrandedBy))
		case strands:
			w.ids(m, d.Strands)
		case why:
			w.str(m, d.Why)
		case metadata:
			w.metadata(m, t.Metadata)
		case createdAt:
			w.time(m, t.CreatedAt)
		case updatedAt:
			w.time(m, t.UpdatedAt)
		case claimedAt:
			w.time(m, t.ClaimedAt)
		case leaseExpiresAt:
			w.time(m, t.LeaseExpiresAt)
		case leaseLapsed:
			w.bool(m, d.LeaseLapsed)
		case lapsesAt:
			at, _ := Clock(t)
			w.time(m, at)
		case clock:
			_, c := Clock(t)
			w.str(m, c)
		case maxRuntime:
			w.duration(m, extra(t).MaxRuntime)
		case progressWindow:
			w.duration(m, extra(t).ProgressWindow)
		case needsApproval:
			w.bool(m, extra(t).NeedsApproval)
		case awaitingApproval:
			w.bool(m, t.AwaitingApproval())
		case createdVia:
			w.str(m, extra(t).CreatedVia)
		case links:
			w.links(m, extra(t).Links)
		case check:
			w.str(m, extra(t).Check)
		case acceptance:
			w.strs(m, extra(t).Acceptance)
		case prevOwner:
			w.str(m, t.PrevOwner)
		case rev:
			w.int(m, t.Rev)
		case notBefore:
			w.time(m, t.NotBefore)
		case due:
			w.time(m, t.Due)
		case maxAttempts:
			w.int(m, int64(t.MaxAttempts))
		case attempts:
			w.int(m, int64(t.Attempts))
		case backoff:
			w.duration(m, t.Backoff)
		case notes:
			w.notes(m, t)
		case history:
			w.history(m, t)
		}
	}
}

// noExtra is the Extra of a task that has none: every rare field unset.
var noExtra taskgraph.Extra

func extra(t *taskgraph.Task) *taskgraph.Extra {
	if t.Extra == nil {
		return &noExtra
	}
	return t.Extra
}

// Clock returns when the claim of t lapses and by which clock ("runtime"
// or "progress"), if it is in progress and a clock other than its lease
// ends it first; else the zero time and "".
func Clock(t *taskgraph.Task) (time.Time, string) {
	if t.Status != taskgraph.InProgress || t.Extra == nil {
		return time.Time{}, ""
	}
	if at, c := t.Lapse(); c != taskgraph.ClockLease {
		return at, string(c)
	}
	return time.Time{}, ""
}

// Format is how a view writes the values of its fields.
type Format struct {
	// EscapeHTML escapes <, > and & in strings, as json.Marshal does (an
	// Encoder's SetEscapeHTML(false) does not).
	EscapeHTML bool
	// Seconds writes times in UTC to the second ("2026-12-07T09:16:12Z"),
	// as a model reads them; else as encoding/json writes a time.Time, to
	// the nanosecond in its zone.
	Seconds bool
	// Nanoseconds writes durations as a number of nanoseconds; else as
	// time.Duration.String writes them ("1m30s").
	Nanoseconds bool
	// Notes and History pick the notes and transitions written, in the
	// order written (nil: all of them, oldest first).
	Notes   func(t *taskgraph.Task) []taskgraph.Note
	History func(t *taskgraph.Task) []taskgraph.Transition
	// AuthorFirst writes a note's author before its time.
	AuthorFirst bool
	// LinkRefs writes a link as its ref alone; else as {"ref", "at"}.
	LinkRefs bool
}

// A View is one outward shape of a task: some of its fields, in order,
// each always written or left out when it says nothing, in a Format.
type View struct {
	members []member
	format  Format
}

// member is one field of a view.
type member struct {
	field field
	key   string // ,"name": — the name as a JSON string, between what compact JSON writes around it
	omit  bool   // left out when it says nothing
}

// New returns the view of the fields spec names, in its order, separated
// by spaces; a name ending in "?" is left out when it says nothing (zero,
// empty, false, the default priority), as encoding/json's omitempty. It
// panics on a name that is no field.
func New(f Format, spec string) *View {
	v := &View{format: f}
	for _, name := range strings.Fields(spec) {
		m := member{field: nFields, omit: strings.HasSuffix(name, "?")}
		name = strings.TrimSuffix(name, "?")
		for f := range nFields {
			if names[f] == name {
				m.field = f
			}
		}
		if m.field == nFields {
			panic("taskview: no field " + strconv.Quote(name))
		}
		m.key = "," + strconv.Quote(name) + ":"
		v.members = append(v.members, m)
	}
	return v
}

// Names returns the names of v's fields, in order, each followed by "?"
// where it is left out when it says nothing: the spec New was given.
func (v *View) Names() []string {
	out := make([]string, len(v.members))
	for i, m := range v.members {
		out[i] = names[m.field]
		if m.omit {
			out[i] += "?"
		}
	}
	return out
}

// Append appends t as v's JSON object, compact, with what d derives of
// it (nil: nothing). Where encoding/json would fail (metadata it cannot
// marshal, a time it refuses) it writes what it can and returns the
// error: the board's JSON, which has always written null for such
// metadata, uses the bytes; the CLI, the error.
func (v *View) Append(b []byte, t *taskgraph.Task, d *Derived) ([]byte, error) {
	return v.AppendIndent(b, t, d, "", "")
}

// AppendIndent is Append indented as encoding/json's Encoder with
// SetIndent(prefix, indent) writes the object, the first line not
// prefixed, no newline at the end. An indent of "" is compact.
func (v *View) AppendIndent(b []byte, t *taskgraph.Task, d *Derived, prefix, indent string) ([]byte, error) {
	if d == nil {
		d = &none
	}
	w := writer{b: append(b, '{'), f: &v.format, skip: 1}
	if indent != "" {
		w.ind = "\n" + prefix + indent
		w.elem = w.ind + indent
		w.inner = w.elem + indent
	}
	w.fields(v.members, t, d)
	if w.skip == 0 && indent != "" {
		w.b = append(w.b, "\n"+prefix...)
	}
	return append(w.b, '}'), w.err
}

// FormatIDs writes a list of task ids the one way the tools and the
// taskgraph command write every list in text: "[1, 2, 3]".
func FormatIDs(ids []taskgraph.ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(int64(id), 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

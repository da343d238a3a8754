// The Rulebook: every rule of the task workflow, written once and used
// by every store.

package taskgraph

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/taskgraph-dev/taskgraph/internal/jsonvalue"
)

// Rulebook holds the rules of the task graph — what each operation may do
// to a task, and what the error says when it may not — written once, so
// that every store decides alike and returns identical errors. docs/rules.md
// is the same list in prose.
//
// Callers of a Store never need it. It is for Store implementations: a
// store loads and locks the rows a write touches, asks the Rulebook, and
// persists the result. What a store keeps for itself is how it finds and
// locks tasks, the cycle search, and persistence. FileStore, MemStore and
// pgstore all run these functions; taskgraphtest.Agree checks that a store
// does.
//
// A rule that changes a task receives its current version (as stored, Rev
// not yet advanced) and edits it in place into the version to store, with
// Rev advanced and UpdatedAt set to now. When it returns an error, the task
// is left half edited and must be discarded.
//
// # Call sequence
//
// Every write takes the same steps in the same order: check its arguments
// (the operation's Args method, if it has one, before anything is read),
// lock and read what the rule needs, run the rule, check the blockers
// (Blocked) if the task starts or finishes, check for a cycle if edges were
// added, run Stored on every task it writes, and store them. The first
// step that fails ends the write with its error, and nothing is stored.
// The table is pgstore's sequence, the worked example. Each write is one
// transaction; "lock" reads the task's row FOR UPDATE (no row: Missing);
// "statuses" reads the status of the tasks named FOR SHARE (they answer
// the exists and status functions the rules take); [S] is the graph's
// advisory lock, taken first by the writes that add or remove edges of
// tasks that exist, and by Load; "save" runs Stored on the task and on the
// others the write changed, then writes them.
//
//	Operation   Arguments      Lock and read                           Rule                                Blocked check         Cycle check         Stored
//	Create      CreateArgs     [S] if Blocks; keys and statuses of     Keyed (the key's task is returned,  Wait on each of the   checkCycles         save
//	                           PlanRefs; allocate the id               nothing stored); Create; lock the   Blocks
//	                                                                   Blocks, Reblock each
//	CreatePlan  PlanArgs       [S] if any Blocks; keys and statuses    Plan; lock the Blocked, Reblock     Wait on each of the   checkCycles         Stored on each,
//	                           of PlanRefs; allocate the new ids       each                                Blocked                                   insert, update
//	Update      PatchArgs      [S] if edges or the parent change;      Reparent; Patch; lock AddBlocks     Blocked if Patch      checkCycles         save
//	                           lock; statuses of AddBlockedBy,         and RemoveBlocks, Reblock each      says it enters
//	                           AddBlocks (and of BlockedBy if Status                                       InProgress/Completed;
//	                           is set)                                                                     Wait on it and on
//	                                                                                                       each of AddBlocks
//	Claim       ClaimArgs      lock                                    Claim (already ours: return it,     Blocked, statuses     -                   save
//	                                                                   nothing stored)                     of BlockedBy
//	ClaimNext   ClaimNextArgs  pick the next ready, else lapsed,       Claim                               Blocked, statuses     -                   save
//	                           task (SKIP LOCKED); lock                                                    of BlockedBy
//	Complete    CompleteArgs   lock with its dependents                Complete                            Blocked, statuses     -                   save; read the
//	                                                                                                       of BlockedBy                              dependents now ready
//	Fail        FailArgs       lock                                    Fail                                -                     -                   save
//	Cancel      CancelArgs     lock                                    Cancel                              -                     -                   save
//	Reopen      -              lock with its dependents                Reopen, with the dependents and     (in Reopen: no        -                   save; rewrite the
//	                                                                   their statuses                      dependent of a                            dependents' rows
//	                                                                                                       completed task has
//	                                                                                                       started)
//	Release     -              lock                                    Release                             -                     -                   save
//	Renew       RenewArgs      lock                                    Renew                               -                     -                   save
//	Delete      -              [S]; lock; lock the dependents and      Delete; Detach each dependent and   -                     - (edges only go)   Stored on each
//	                           the children                            child (with the Detach option)                                                dependent and
//	                                                                                                                                                 child; delete
//	Load        LoadArgs       [S]; the graph's high-water mark and    Load                                -                     FindCycle of the    Stored on each,
//	                           time; statuses of the blockers outside                                                            batch (only it can  insert
//	                           the batch; keys                                                                                   close one)
//
// pgstore's ClaimNext first tries one statement that is this sequence in
// SQL (the ready condition for Blocked, a bound of the size for Stored);
// when it finds nothing ready, or a task the bound cannot vouch for, it
// runs the sequence above. FileStore and MemStore make the same calls in
// the same order on their graph in memory, holding the directory's lock or
// the store's mutex where pgstore locks rows.
//
// The Rulebook is exported for Store implementations outside this module,
// but until taskgraph 1.0 its methods may change in any minor version (a
// new rule, a new argument) as the Store interface grows: pin the version,
// and run taskgraphtest.Run and taskgraphtest.Agree against your store when
// you upgrade.
type Rulebook struct{}

// Rules is the Rulebook; see its methods.
var Rules Rulebook

// Bounds that every store enforces, so that no counter wraps and every
// stored task can be read back.
const (
	// MaxID is the highest task id a store allocates or loads: 2^53-1,
	// the largest integer that every JSON reader (JavaScript's included)
	// holds exactly. Once it is allocated, Create refuses with an
	// *InvalidError instead of wrapping around.
	MaxID ID = 1<<53 - 1
	// MaxTaskSize is the size limit, in bytes, of a task's file as
	// FileStore writes it. A write that would store a bigger task is
	// refused, in every store, since FileStore could not read it back.
	MaxTaskSize = maxFileSize
)

// Stored validates a version of a task that a write is about to store,
// after the rule that made it: its Rev must have advanced without
// overflowing, and its file must fit in MaxTaskSize. Stores run it on
// every task a write stores, and refuse the whole write if it fails.
func (Rulebook) Stored(t *Task) error {
	_, err := storedFile(t)
	return err
}

// storedFile is Stored, and returns the file it checked: FileStore writes
// those bytes (plan.files) instead of encoding the task again.
func storedFile(t *Task) ([]byte, error) {
	if t.Rev <= 0 {
		return nil, &InvalidError{Field: "rev", Reason: fmt.Sprintf("task %d is at the highest rev, %d, and cannot be written again", t.ID, int64(math.MaxInt64))}
	}
	data, err := taskFileOf(t)
	if err != nil {
		return nil, err
	}
	if len(data) > MaxTaskSize {
		return nil, &InvalidError{Field: "task", Reason: fmt.Sprintf("task %d would be %d bytes, over the %d-byte limit (MaxTaskSize): keep large content outside the graph", t.ID, len(data), MaxTaskSize)}
	}
	return data, nil
}

// Text validates a string that a write would store in field: it must be
// valid UTF-8 without NUL bytes. JSON cannot carry invalid UTF-8 (it would
// come back altered) and PostgreSQL refuses NUL in text, so every store
// refuses both alike, with an *InvalidError, before anything is read or
// written. Text already stored (a file written by hand) is not judged.
func (Rulebook) Text(field, s string) error {
	if !utf8.ValidString(s) {
		return &InvalidError{Field: field, Reason: "is not valid UTF-8: send text as UTF-8"}
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		return &InvalidError{Field: field, Reason: fmt.Sprintf("holds a NUL byte (at byte %d): remove it", i)}
	}
	return nil
}

// metadataText is Text for every key and string value of metadata.
func metadataText(field string, m map[string]any) error {
	if err := jsonvalue.CheckText(m); err != nil {
		return &InvalidError{Field: field, Reason: err.Error() + ": send text as UTF-8 without NUL"}
	}
	return nil
}

// texts runs Text on pairs of field names and values.
func texts(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := Rules.Text(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// CreateArgs validates everything about nt that does not depend on the
// graph: its text (see Text), subject, metadata, priority, labels, key
// and the form of its After references. Create runs it first; a store
// that must do anything before it can call Create (look up the key,
// allocate the id in a database) runs it before that.
func (Rulebook) CreateArgs(nt NewTask) error {
	if err := texts("subject", nt.Subject, "description", nt.Description); err != nil {
		return err
	}
	if err := ownerArg("owner", nt.Owner); err != nil {
		return err
	}
	if err := metadataText("metadata", nt.Metadata); err != nil {
		return err
	}
	if nt.Subject == "" {
		return &InvalidError{Field: "subject", Reason: "must not be empty"}
	}
	if _, err := normalizeMetadata(nt.Metadata); err != nil {
		return err
	}
	if err := Rules.Priority("priority", nt.Priority); err != nil {
		return err
	}
	if _, err := Rules.Labels("labels", nt.Labels); err != nil {
		return err
	}
	if nt.Key != "" {
		if err := Rules.Key("key", nt.Key); err != nil {
			return err
		}
	}
	if err := Rules.Schedule("", nt.MaxAttempts, nt.Backoff); err != nil {
		return err
	}
	if err := Rules.Liveness("", nt.MaxRuntime, nt.ProgressWindow); err != nil {
		return err
	}
	if err := viaArg("createdVia", nt.CreatedVia); err != nil {
		return err
	}
	if err := Rules.CheckArgs("", nt.Check, nt.Acceptance); err != nil {
		return err
	}
	if err := underArgs(nt); err != nil {
		return err
	}
	for i, ref := range nt.After {
		if err := afterRef(fmt.Sprintf("after[%d]", i), ref); err != nil {
			return err
		}
	}
	return nil
}

// afterRef validates the form of one reference of NewTask.After.
func afterRef(field, ref string) error {
	if ref == "" {
		return &InvalidError{Field: field, Reason: "is empty: name a task by its key, or by its id as \"#12\""}
	}
	if _, ok := parseIDRef(ref); ok {
		return nil
	}
	return Rules.Key(field, ref)
}

// parseIDRef reads a reference of the form "12" or "#12" as an id.
func parseIDRef(ref string) (ID, bool) {
	digits := strings.TrimPrefix(ref, "#")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return MaxID + 1, true // a number too large is an id that cannot exist
	}
	return ID(n), true
}

// Keyed reports whether nt names, by its key, a task that exists: key
// returns the id of the task with a given key. Create then returns that
// task as it is and writes nothing.
func (Rulebook) Keyed(nt NewTask, key func(string) (ID, bool)) (ID, bool) {
	if nt.Key == "" {
		return 0, false
	}
	return key(nt.Key)
}

// MaxKey is the longest key, in bytes.
const MaxKey = 128

// MaxOwner is the longest owner, in bytes: an agent's name, which every
// transition it makes records again in the task's history.
const MaxOwner = 256

// ownerArg validates an owner that a write would store in field: text
// (see Text) of at most MaxOwner bytes.
func ownerArg(field, owner string) error {
	if err := Rules.Text(field, owner); err != nil {
		return err
	}
	return nameLength(field, owner, MaxOwner, "MaxOwner")
}

// Key validates a task key that a write would store or look up in field:
// 1 to MaxKey bytes of printable UTF-8 text, and not an id (all digits,
// or "#" and digits), so that a reference reads one way only.
func (Rulebook) Key(field, key string) error {
	switch {
	case key == "":
		return &InvalidError{Field: field, Reason: "is empty: a key needs 1 to 128 bytes"}
	case len(key) > MaxKey:
		return &InvalidError{Field: field, Reason: fmt.Sprintf("is %d bytes long, over %d (MaxKey): use a shorter key", len(key), MaxKey)}
	}
	if err := Rules.Text(field, key); err != nil {
		return err
	}
	for i, r := range key {
		if !unicode.IsPrint(r) {
			return &InvalidError{Field: field, Reason: fmt.Sprintf("holds a control or invisible character (%U at byte %d): use printable text", r, i)}
		}
	}
	if _, ok := parseIDRef(key); ok {
		return &InvalidError{Field: field, Reason: fmt.Sprintf("%q reads as a task id: a key needs a character other than digits (e.g. \"step-%s\")", key, strings.TrimPrefix(key, "#"))}
	}
	return nil
}

// MaxLabels is the most labels a task carries, and MaxLabel the longest
// label, in bytes.
const (
	MaxLabels = 32
	MaxLabel  = 64
)

// Labels validates the labels a write would store, or a filter asks for,
// in field, and returns them sorted, without duplicates: each is 1 to
// MaxLabel bytes of lower-case ASCII letters, digits and "-_.:/", and
// there are at most MaxLabels.
func (Rulebook) Labels(field string, labels []string) ([]string, error) {
	for i, l := range labels {
		if err := label(fmt.Sprintf("%s[%d]", field, i), l); err != nil {
			return nil, err
		}
	}
	out := slices.Compact(slices.Sorted(slices.Values(labels)))
	if len(out) > MaxLabels {
		return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("%d labels, over %d (MaxLabels): keep at most %d", len(out), MaxLabels, MaxLabels)}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func label(field, l string) error {
	ok := l != "" && len(l) <= MaxLabel
	for i := 0; ok && i < len(l); i++ {
		c := l[i]
		ok = 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-_.:/", c) >= 0
	}
	if ok {
		return nil
	}
	return &InvalidError{Field: field, Reason: fmt.Sprintf("%.80q is not a label: use 1 to %d lower-case letters, digits and -_.:/ (e.g. \"frontend\")", l, MaxLabel)}
}

// Filters validates what filters select, for List and Board, before
// anything is read, and returns it: statuses must be known, the owner
// text (see Text), labels well formed (they come back sorted).
func (Rulebook) Filters(filters []Filter) (Selection, error) {
	c := applyOptions[filterConfig](filters)
	for _, st := range c.statuses {
		if !st.Valid() {
			return Selection{}, statusError("status", string(st))
		}
	}
	if c.owner != nil {
		if err := Rules.Text("owner", *c.owner); err != nil {
			return Selection{}, err
		}
	}
	labels, err := Rules.Labels("labels", c.labels)
	if err != nil {
		return Selection{}, err
	}
	if c.under != 0 { // as ClaimOptions: a negative id selects nothing, which would read as finished
		if err := Rules.ID("under", c.under); err != nil {
			return Selection{}, err
		}
	}
	var statuses []Status
	if len(c.statuses) > 0 {
		statuses = slices.Compact(slices.Sorted(slices.Values(c.statuses)))
	}
	return Selection{Statuses: statuses, Owner: c.owner, Labels: labels, ReadyOnly: c.readyOnly, Limit: c.limit, Now: c.now, Limits: c.limits, Under: c.under}, nil
}

// prefixed returns err with prefix added to the field an *InvalidError
// names, and before the message of a *NotFoundError (which it wraps), so
// that an error about one task of a plan or a load says which.
func prefixed(prefix string, err error) error {
	var inv *InvalidError
	if errors.As(err, &inv) {
		return &InvalidError{Field: prefix + inv.Field, Reason: inv.Reason}
	}
	var nf *NotFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("%s: %w", strings.TrimSuffix(prefix, "."), err)
	}
	return err
}

// PatchArgs validates the text p would store (see Text). Stores run it
// before reading the task; Patch runs it first too.
func (Rulebook) PatchArgs(p Patch) error {
	for _, f := range []struct {
		k string
		v *string
	}{{"subject", p.Subject}, {"description", p.Description}} {
		if f.v != nil {
			if err := Rules.Text(f.k, *f.v); err != nil {
				return err
			}
		}
	}
	if p.Owner != nil {
		if err := ownerArg("owner", *p.Owner); err != nil {
			return err
		}
	}
	if err := metadataText("metadata", p.Metadata); err != nil {
		return err
	}
	if p.Priority != nil {
		if err := Rules.Priority("priority", *p.Priority); err != nil {
			return err
		}
	}
	if p.Labels != nil {
		if _, err := Rules.Labels("labels", *p.Labels); err != nil {
			return err
		}
	}
	if p.MaxAttempts != nil {
		if err := Rules.Schedule("", *p.MaxAttempts, 0); err != nil {
			return err
		}
	}
	if p.Backoff != nil {
		if err := Rules.Schedule("", 0, *p.Backoff); err != nil {
			return err
		}
	}
	if p.Parent != nil && *p.Parent != 0 {
		if err := Rules.ID("parent", *p.Parent); err != nil {
			return err
		}
	}
	if p.MaxRuntime != nil {
		if err := Rules.Liveness("", *p.MaxRuntime, 0); err != nil {
			return err
		}
	}
	if p.ProgressWindow != nil {
		if err := Rules.Liveness("", 0, *p.ProgressWindow); err != nil {
			return err
		}
	}
	if err := linkArgs("addLinks", p.AddLinks); err != nil {
		return err
	}
	if p.Check != nil {
		if err := Rules.CheckArgs("", *p.Check, nil); err != nil {
			return err
		}
	}
	if p.Acceptance != nil {
		if err := Rules.CheckArgs("", "", *p.Acceptance); err != nil {
			return err
		}
	}
	return nil
}

// Reparent returns p with the edges that a change of t's parent
// (Patch.Parent) moves: t leaves its old parent's BlockedBy (RemoveBlocks)
// and joins the new one's (AddBlocks). A store runs it on t as read,
// before Patch, and then handles those edges as any other.
func (Rulebook) Reparent(t *Task, p Patch) Patch {
	if p.Parent == nil || *p.Parent == t.Parent {
		return p
	}
	if t.Parent != 0 {
		p.RemoveBlocks = append(slices.Clip(p.RemoveBlocks), t.Parent)
	}
	if *p.Parent != 0 {
		p.AddBlocks = append(slices.Clip(p.AddBlocks), *p.Parent)
	}
	return p
}

// LoadArgs validates the text of tasks (see Text), before anything is
// read. Load runs it first.
func (Rulebook) LoadArgs(tasks []Task) error {
	for i, t := range tasks {
		f := fmt.Sprintf("tasks[%d].", i)
		if err := texts(f+"subject", t.Subject, f+"description", t.Description, f+"owner", t.Owner, f+"prevOwner", t.PrevOwner,
			f+"reason", t.Reason, f+"result", t.Result); err != nil {
			return err
		}
		if err := metadataText(f+"metadata", t.Metadata); err != nil {
			return err
		}
		for j, n := range t.Notes {
			if err := texts(fmt.Sprintf("%snotes[%d].author", f, j), n.Author, fmt.Sprintf("%snotes[%d].text", f, j), n.Text); err != nil {
				return err
			}
		}
		for j, h := range t.History {
			g := fmt.Sprintf("%shistory[%d].", f, j)
			if err := texts(g+"event", string(h.Event), g+"by", h.By, g+"detail", h.Detail); err != nil {
				return err
			}
		}
	}
	return nil
}

// Missing returns the error for a task id that names no task: an
// *InvalidError for an id that cannot exist, a *NotFoundError otherwise.
func (Rulebook) Missing(id ID) error {
	if err := Rules.ID("id", id); err != nil {
		return err
	}
	return &NotFoundError{ID: id}
}

// CheckEdges validates the blockers that a write to task self names in
// field: none may be self, and exists must return nil for each (it returns
// the error to report for a task that does not exist or cannot be read,
// typically Rules.Missing).
func (Rulebook) CheckEdges(self ID, field string, ids []ID, exists func(ID) error) error {
	for _, b := range ids {
		if b == self {
			return &InvalidError{Field: field, Reason: fmt.Sprintf("task %d cannot block itself", self)}
		}
		if err := exists(b); err != nil {
			return err
		}
	}
	return nil
}

// Create validates nt and returns the task to store under the new id:
// exists answers for the ids nt names (BlockedBy, Blocks, After), key for
// the keys its After names. The store first returns the existing task if
// nt's key names one (Keyed); after Create it adds id to the BlockedBy of
// every task in nt.Blocks (Reblock) and refuses the write if the new edges
// close a cycle.
func (Rulebook) Create(id ID, nt NewTask, now time.Time, exists func(ID) error, key func(string) (ID, bool)) (*Task, error) {
	if err := Rules.CreateArgs(nt); err != nil {
		return nil, err
	}
	return create(id, nt, now, exists, key)
}

// create is Create without the checks of CreateArgs.
func create(id ID, nt NewTask, now time.Time, exists func(ID) error, key func(string) (ID, bool)) (*Task, error) {
	if id <= 0 || id > MaxID {
		return nil, &InvalidError{Field: "id", Reason: fmt.Sprintf("no task id is left: every id up to %d (MaxID) has been allocated", MaxID)}
	}
	meta, err := normalizeMetadata(nt.Metadata)
	if err != nil {
		return nil, err
	}
	parent, err := parentOf(id, nt, exists, key) // before Blocks, which holds it (Family)
	if err != nil {
		return nil, err
	}
	if err := Rules.CheckEdges(id, "blockedBy", nt.BlockedBy, exists); err != nil {
		return nil, err
	}
	if err := Rules.CheckEdges(id, "blocks", nt.Blocks, exists); err != nil {
		return nil, err
	}
	after, err := resolveAfter(id, nt.After, exists, key)
	if err != nil {
		return nil, err
	}
	labels, _ := Rules.Labels("labels", nt.Labels) // valid: CreateArgs
	prio := nt.Priority                            // the zero value is DefaultPriority
	t := &Task{
		ID: id, Subject: nt.Subject, Description: nt.Description, Status: Pending, Owner: nt.Owner,
		BlockedBy: addIDs(addIDs(nil, nt.BlockedBy), after), Metadata: meta,
		CreatedAt: now, UpdatedAt: now, Rev: 1,
		Priority: prio, Labels: labels, Key: nt.Key, Parent: parent,
		MaxAttempts: nt.MaxAttempts, Backoff: nt.Backoff, NotBefore: nt.NotBefore, Due: nt.Due,
	}
	if nt.MaxRuntime != 0 || nt.ProgressWindow != 0 {
		setLiveness(t, nt.MaxRuntime.Truncate(time.Microsecond), nt.ProgressWindow.Truncate(time.Microsecond))
	}
	if nt.NeedsApproval || nt.CreatedVia != "" {
		x := t.editExtra()
		x.NeedsApproval, x.CreatedVia = nt.NeedsApproval, nt.CreatedVia
	}
	if nt.Check != "" || len(nt.Acceptance) > 0 {
		setCheck(t, nt.Check, nt.Acceptance)
	}
	return t, nil
}

// resolveAfter returns the ids that the references of NewTask.After name,
// for the new task self: an id ("#12") must exist, a key must be known to
// key.
func resolveAfter(self ID, after []string, exists func(ID) error, key func(string) (ID, bool)) ([]ID, error) {
	var out []ID
	for i, ref := range after {
		field := fmt.Sprintf("after[%d]", i)
		id, isID := parseIDRef(ref)
		switch {
		case isID:
			if id != self {
				if err := exists(id); err != nil {
					return nil, err
				}
			}
		default:
			var ok bool
			if id, ok = key(ref); !ok {
				return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("%.80q names no task: use the key of a task of this plan or of an existing task, or an existing id as \"#12\"", ref)}
			}
		}
		if id == self {
			return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("task %d cannot block itself", self)}
		}
		out = append(out, id)
	}
	return out, nil
}

// PlanArgs validates a plan before anything is read: each task as
// CreateArgs does, and a key on each, none twice. Errors name the task,
// as in "tasks[2].key".
func (Rulebook) PlanArgs(nts []NewTask) error {
	seen := make(map[string]int, len(nts))
	for i, nt := range nts {
		f := fmt.Sprintf("tasks[%d].", i)
		if err := Rules.CreateArgs(nt); err != nil {
			return prefixed(f, err)
		}
		if nt.Key == "" {
			return &InvalidError{Field: f + "key", Reason: "every task of a plan needs a key, by which the others name it in after"}
		}
		if j, dup := seen[nt.Key]; dup {
			return &InvalidError{Field: f + "key", Reason: fmt.Sprintf("%q is also the key of tasks[%d]: give each task of a plan its own key", nt.Key, j)}
		}
		seen[nt.Key] = i
	}
	return nil
}

// PlanRefs lists what a store must look up to decide a plan (or a
// Create, as a plan of one): every key it names, its tasks' own and
// those in After, and every id it names.
func (Rulebook) PlanRefs(nts []NewTask) (keys []string, ids []ID) {
	for _, nt := range nts {
		if nt.Key != "" {
			keys = append(keys, nt.Key)
		}
		ids = append(append(ids, nt.BlockedBy...), nt.Blocks...)
		if nt.Parent != 0 {
			ids = append(ids, nt.Parent)
		}
		if id, ok := parseIDRef(nt.Under); ok && nt.Under != "" {
			ids = append(ids, id)
		} else if nt.Under != "" {
			keys = append(keys, nt.Under)
		}
		for _, ref := range nt.After {
			if id, ok := parseIDRef(ref); ok {
				ids = append(ids, id)
			} else {
				keys = append(keys, ref)
			}
		}
	}
	return keys, ids
}

// Planned is what Rules.Plan decides.
type Planned struct {
	// IDs holds the id of each task of the plan, in input order: that of
	// the existing task with its key, or its new id.
	IDs []ID
	// New holds the tasks to create, in input order (which is id order).
	New []*Task
	// Blocked lists the existing tasks that new tasks block (Blocks), in
	// the order first named, and Blockers the new ids each gains in its
	// BlockedBy: the store applies them with Reblock.
	Blocked  []ID
	Blockers map[ID][]ID
}

// Named returns err, naming the plan's new tasks by their keys if it is a
// *CycleError: the store's cycle check sees the ids the plan would have
// given them, which a caller never saw. Stores pass the cycle check's
// error through it.
func (pl *Planned) Named(err error) error {
	var ce *CycleError
	if !errors.As(err, &ce) {
		return err
	}
	keys := make(map[ID]string)
	for _, t := range pl.New {
		if slices.Contains(ce.Path, t.ID) {
			keys[t.ID] = t.Key
		}
	}
	return &CycleError{Path: ce.Path, Keys: keys}
}

// Plan decides a plan (CreatePlan): next is the id of the first new task,
// exists answers for the ids it names, key returns the id of the existing
// task with a key. A task whose key exists is not created; the others get
// ids from next on, in input order. The store then applies Blocked and
// Blockers, and refuses the write if the new edges close a cycle.
func (Rulebook) Plan(nts []NewTask, next ID, now time.Time, exists func(ID) error, key func(string) (ID, bool)) (*Planned, error) {
	if err := Rules.PlanArgs(nts); err != nil {
		return nil, err
	}
	nts, err := Rules.Family(nts)
	if err != nil {
		return nil, err
	}
	pl := &Planned{IDs: make([]ID, len(nts)), Blockers: map[ID][]ID{}}
	local := make(map[string]ID, len(nts))
	fresh := make([]bool, len(nts))
	for i, nt := range nts {
		if id, ok := key(nt.Key); ok {
			pl.IDs[i] = id
		} else {
			pl.IDs[i], fresh[i] = next, true
			next++
		}
		local[nt.Key] = pl.IDs[i]
	}
	inPlan := func(k string) (ID, bool) {
		if id, ok := local[k]; ok {
			return id, true
		}
		return key(k)
	}
	for i, nt := range nts {
		if !fresh[i] {
			continue
		}
		t, err := create(pl.IDs[i], nt, now, exists, inPlan)
		if err != nil {
			return nil, prefixed(fmt.Sprintf("tasks[%d].", i), err)
		}
		pl.New = append(pl.New, t)
		for _, b := range addIDs(nil, nt.Blocks) {
			if _, ok := pl.Blockers[b]; !ok {
				pl.Blocked = append(pl.Blocked, b)
			}
			pl.Blockers[b] = append(pl.Blockers[b], t.ID)
		}
	}
	return pl, nil
}

// Patch applies p to t: fields, metadata, t's own BlockedBy and status. It
// reports whether t enters InProgress or Completed, in which case the store
// must check its blockers (Blocked) against the patched edges. The store
// applies p.AddBlocks and p.RemoveBlocks to the other tasks (AddBlocker,
// RemoveBlocker) and refuses the write if a new edge closes a cycle.
func (Rulebook) Patch(t *Task, p Patch, now time.Time, exists func(ID) error) (entering bool, err error) {
	if err := Rules.PatchArgs(p); err != nil {
		return false, err
	}
	if p.IfRev != 0 && p.IfRev != t.Rev {
		return false, &ConflictError{ID: t.ID, Want: p.IfRev, Got: t.Rev}
	}
	advance(t, now)
	edited := patchedFields(p)
	if len(edited) > 0 {
		defer func() {
			if err == nil {
				record(t, now, HistoryEdited, "", strings.Join(edited, ", "))
			}
		}()
	}
	if p.Subject != nil {
		if *p.Subject == "" {
			return false, &InvalidError{Field: "subject", Reason: "must not be empty"}
		}
		t.Subject = *p.Subject
	}
	if p.Description != nil {
		t.Description = *p.Description
	}
	if p.Owner != nil {
		t.Owner = *p.Owner
	}
	if p.Parent != nil {
		if *p.Parent == t.ID {
			return false, &InvalidError{Field: "parent", Reason: fmt.Sprintf("task %d cannot be its own parent", t.ID)}
		}
		if *p.Parent != 0 && *p.Parent != t.Parent {
			if err := exists(*p.Parent); err != nil {
				return false, err
			}
		}
		t.Parent = *p.Parent
	}
	if err := Rules.CheckEdges(t.ID, "addBlockedBy", p.AddBlockedBy, exists); err != nil {
		return false, err
	}
	if err := Rules.CheckEdges(t.ID, "addBlocks", p.AddBlocks, exists); err != nil {
		return false, err
	}
	t.BlockedBy = addIDs(t.BlockedBy, p.AddBlockedBy)
	t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b ID) bool { return slices.Contains(p.RemoveBlockedBy, b) })
	if p.Metadata != nil {
		set, err := normalizeMetadata(p.Metadata)
		if err != nil {
			return false, err
		}
		t.Metadata = jsonvalue.Merge(t.Metadata, set) // a key set to nil is deleted
	}
	if p.Priority != nil {
		t.Priority = *p.Priority
	}
	if p.Labels != nil {
		t.Labels, _ = Rules.Labels("labels", *p.Labels) // valid: PatchArgs
	}
	if p.NotBefore != nil {
		t.NotBefore = *p.NotBefore
	}
	if p.Due != nil {
		t.Due = *p.Due
	}
	if p.MaxAttempts != nil {
		t.MaxAttempts = *p.MaxAttempts
	}
	if p.Backoff != nil {
		t.Backoff = *p.Backoff
	}
	if p.MaxRuntime != nil || p.ProgressWindow != nil {
		x := t.extra()
		if p.MaxRuntime != nil {
			x.MaxRuntime = p.MaxRuntime.Truncate(time.Microsecond)
		}
		if p.ProgressWindow != nil {
			x.ProgressWindow = p.ProgressWindow.Truncate(time.Microsecond)
		}
		setLiveness(t, x.MaxRuntime, x.ProgressWindow)
	}
	if _, err := addLinks(t, p.AddLinks, now); err != nil {
		return false, err
	}
	if p.Check != nil || p.Acceptance != nil {
		x := t.extra()
		if p.Check != nil {
			x.Check = *p.Check
		}
		if p.Acceptance != nil {
			x.Acceptance = *p.Acceptance
		}
		setCheck(t, x.Check, x.Acceptance)
	}
	if p.Status == nil || *p.Status == t.Status {
		return false, nil
	}
	st := *p.Status
	by := t.Owner // the new owner of a claim, the holder of a release
	switch {
	case !st.Valid():
		return false, statusError("status", string(st))
	case st == Failed:
		return false, &InvalidError{Field: "status", Reason: "a task becomes failed only by Fail, which records the reason"}
	case st == Cancelled:
		return false, &InvalidError{Field: "status", Reason: "a task becomes cancelled only by Cancel, which records the reason"}
	case t.Status == Completed:
		// Reopening checks that nothing it blocks has started; a patch
		// does not read the dependents, so it leaves that to Reopen.
		return false, &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is completed: reopen it instead (it checks that no task it blocks has started)", t.ID)}
	case t.Status.ended() && st != Pending:
		return false, &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is %s: reopen it (status pending) first", t.ID, t.Status)}
	}
	if t.Status.ended() {
		t.Reason = ""
	}
	if t.Status == Completed {
		t.Result = ""
	}
	if c := t.extra().Check; st == Completed && c != "" {
		return false, &UnverifiedError{ID: t.ID, Check: c, Reason: "a task with a check completes only by Complete, given evidence that it passed"}
	}
	if t.Status == Pending && st != Pending && t.Deferred(now) {
		return false, &DeferredError{ID: t.ID, Until: t.NotBefore}
	}
	if t.AwaitingApproval() && st != Pending {
		return false, &AwaitingApprovalError{ID: t.ID}
	}
	if st == InProgress && t.Owner == "" {
		return false, &InvalidError{Field: "owner", Reason: "an in_progress task needs an owner: use Claim, or set Owner in the same patch"}
	}
	if st == Pending && p.Owner == nil {
		t.Owner = ""
	}
	if st == InProgress && t.Status == Pending {
		t.ClaimedAt = now
	}
	if st != InProgress {
		t.LeaseExpiresAt = time.Time{}
	}
	from := t.Status
	t.Status = st
	record(t, now, patchedStatus(from, st), by, "")
	// Edges added to a task already past pending record an ordering, not
	// a transition: only entering a started state checks blockers.
	return st != Pending, nil
}

// patchedFields names the fields p edits, but its status, for the
// task's history.
func patchedFields(p Patch) []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"subject", p.Subject != nil}, {"description", p.Description != nil}, {"owner", p.Owner != nil},
		{"blockedBy", len(p.AddBlockedBy)+len(p.RemoveBlockedBy) > 0}, {"blocks", len(p.AddBlocks)+len(p.RemoveBlocks) > 0},
		{"metadata", p.Metadata != nil}, {"priority", p.Priority != nil}, {"labels", p.Labels != nil},
		{"notBefore", p.NotBefore != nil}, {"due", p.Due != nil}, {"maxAttempts", p.MaxAttempts != nil}, {"backoff", p.Backoff != nil},
		{"parent", p.Parent != nil}, {"maxRuntime", p.MaxRuntime != nil}, {"progressWindow", p.ProgressWindow != nil},
		{"links", len(p.AddLinks) > 0}, {"check", p.Check != nil}, {"acceptance", p.Acceptance != nil},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// patchedStatus is the history's name for a patch that moves a task from
// one status to another (Patch allows only these).
func patchedStatus(from, to Status) HistoryEvent {
	switch {
	case to == InProgress:
		return HistoryClaimed
	case to == Completed:
		return HistoryCompleted
	case from.ended():
		return HistoryReopened
	default:
		return HistoryReleased
	}
}

// Reblock edits the blockers of t as one write of t: the ids in add are
// added, then the ids in remove are removed. Stores use it for the other
// side of an edge: the tasks a new task blocks (Create), the tasks a patch
// adds or removes as blocked (Patch).
func (Rulebook) Reblock(t *Task, now time.Time, add, remove []ID) {
	advance(t, now)
	t.BlockedBy = addIDs(t.BlockedBy, add)
	t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b ID) bool { return slices.Contains(remove, b) })
	record(t, now, HistoryEdited, "", "blockedBy")
}

// ClaimArgs validates the arguments of Claim and ClaimNext, before any
// task is read.
func (Rulebook) ClaimArgs(owner string, lease time.Duration) error {
	if owner == "" {
		return &InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if err := ownerArg("owner", owner); err != nil {
		return err
	}
	return Rules.Lease("lease", lease)
}

// ClaimNextArgs validates the arguments of ClaimNext, before any task is
// read, and returns the labels a task must carry, sorted.
func (Rulebook) ClaimNextArgs(owner string, lease time.Duration, labels []string) ([]string, error) {
	if err := Rules.ClaimArgs(owner, lease); err != nil {
		return nil, err
	}
	return Rules.Labels("labels", labels)
}

// ClaimOrder compares a and b in the order ClaimNext takes ready tasks:
// the more urgent first (P0 before P4), then the one created first, then
// the lower id. Ids drawn for a graph kept in git (see gitrepo.FindDir) do not
// follow creation order, so creation time comes before the id; for
// sequential ids the two agree. A task without a creation time (a file
// the reference wrote) comes before every task that has one.
func (Rulebook) ClaimOrder(a, b *Task) int { return entryOf(a).compare(entryOf(b)) }

// createdKey is t as an integer in the claim order: microseconds since
// 1970, as PostgreSQL keeps timestamps, so that every store breaks ties
// the same way; the zero time is the least.
func createdKey(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixMicro()
}

// Claim moves t to InProgress under owner. write is false when owner
// already holds t and asks for no lease: nothing changes. Otherwise the
// store must then check t's blockers (Blocked) before storing it. A
// pending task whose NotBefore is to come is refused (*DeferredError). A
// task held by another owner may be claimed once its lease has expired;
// the previous owner is kept in PrevOwner. The lapse uses one of the
// task's attempts (MaxAttempts); if it used the last one, Claim fails t
// instead and returns write true with a *GaveUpError: the store stores t
// (without checking its blockers) and returns that error.
func (Rulebook) Claim(t *Task, owner string, lease time.Duration, now time.Time) (write bool, err error) {
	if err := Rules.ClaimArgs(owner, lease); err != nil {
		return false, err
	}
	switch t.Status {
	case Completed, Failed, Cancelled:
		return false, finishedError(t)
	case Pending:
		if t.AwaitingApproval() {
			return false, &AwaitingApprovalError{ID: t.ID}
		}
		if t.Deferred(now) {
			return false, &DeferredError{ID: t.ID, Until: t.NotBefore}
		}
	case InProgress:
		expired := t.Lapsed(now) // its lease, its MaxRuntime or its ProgressWindow
		switch {
		case t.Owner == owner && lease == 0 && !expired:
			return false, nil // already ours: nothing to write
		case t.Owner == owner && !expired:
		case expired: // by anyone, its holder too: a restarted agent of the same name is a new attempt
			why := lapseReason(t)
			record(t, t.LapsesAt(), HistoryLapsed, t.Owner, why)
			if t.MaxAttempts > 0 && !lapseAttempt(t, why) {
				advance(t, now)
				record(t, now, HistoryFailed, "", t.Reason)
				return true, &GaveUpError{ID: t.ID, Attempts: t.Attempts, Reason: t.Reason}
			}
			t.PrevOwner = t.Owner
		default:
			return false, &ClaimedError{ID: t.ID, Owner: t.Owner}
		}
	}
	advance(t, now)
	if t.Status != InProgress || t.Owner != owner {
		t.ClaimedAt = now
		c := Rules.ClaimTransition(owner, lease, now)
		record(t, now, c.Event, c.By, c.Detail)
	}
	t.Status, t.Owner = InProgress, owner
	t.LeaseExpiresAt = time.Time{}
	if lease > 0 {
		t.LeaseExpiresAt = now.Add(lease)
	}
	return true, nil
}

// ClaimTransition is the history entry of a claim by owner at now: for a
// store that writes a claim of a ready task in its own query language
// (pgstore), which must append it to the history as Claim does (unless
// the history is full: then the store runs Claim).
func (Rulebook) ClaimTransition(owner string, lease time.Duration, now time.Time) Transition {
	c := Transition{At: now, Event: HistoryClaimed, By: owner}
	if lease > 0 {
		c.Detail = "lease " + lease.String()
	}
	return c
}

// Renew extends the lease of t, which owner must hold, to ttl from now.
// A claim its MaxRuntime or its no-progress window has ended is not
// renewed (*LapsedError): only the lease is extended by renewals.
func (Rulebook) Renew(t *Task, owner string, ttl time.Duration, now time.Time) error {
	if err := Rules.RenewArgs(ttl); err != nil {
		return err
	}
	if err := holder(t, owner, true); err != nil {
		return err
	}
	// A lease that expired may be renewed until someone else claims the
	// task; a claim that ran past its MaxRuntime or went without progress
	// for its window may not: renewing is what a hung agent's harness
	// keeps doing.
	if at, clock := t.Lapse(); clock != ClockLease && !now.Before(at) {
		return &LapsedError{ID: t.ID, Owner: t.Owner, Clock: clock, At: at, Reason: lapseReason(t)}
	}
	// A new version, but not a change of the task: UpdatedAt stays, so
	// that only the lease (which a graph kept in git leaves out of its
	// commits) tells a renewed task from the one before.
	t.Rev++
	t.LeaseExpiresAt = now.Add(ttl)
	return nil
}

// CompleteArgs validates the arguments of Complete, before any task is
// read.
func (Rulebook) CompleteArgs(result string) error {
	return Rules.Text("result", result)
}

// Complete moves t, which must be InProgress (and held by owner, if owner
// is not ""), to Completed, recording set.Result. The store must then check
// t's blockers (Blocked) before storing it.
//
// A task that names a check (Extra.Check) completes only with passing
// evidence of that check (set.Evidence, recorded in its history before
// the completion) or set.SkipCheck (recorded too); else the error is an
// *UnverifiedError and nothing changes.
func (Rulebook) Complete(t *Task, owner string, set CompleteSettings, now time.Time) error {
	err := finishHeld(t, owner, Completed, now, Rules.CompleteArgs(set.Result))
	if err == nil {
		err = evidenceArgs(set.Evidence, set.SkipCheck)
	}
	if err == nil {
		err = verify(t, t.Owner, set.Evidence, set.SkipCheck, now)
	}
	if err == nil {
		t.Result = set.Result
		appendTransition(t, Rules.CompleteTransition(t.Owner, set.Result, now))
	}
	return err
}

// CompleteTransition is the history entry of a completion at now of a task
// held by owner, with result: for a store that writes a completion in its
// own query language (pgstore), which must append it to the history as
// Complete does (unless the history is full: then the store runs Complete).
func (Rulebook) CompleteTransition(owner, result string, now time.Time) Transition {
	return Transition{At: now, Event: HistoryCompleted, By: owner, Detail: clipDetail(result)}
}

// finishHeld moves t, which owner (if not "") must hold, out of
// InProgress to status, its lease ended; unless argErr, the verdict on
// the call's own arguments, is not nil.
func finishHeld(t *Task, owner string, status Status, now time.Time, argErr error) error {
	if argErr != nil {
		return argErr
	}
	if err := holder(t, owner, false); err != nil {
		return err
	}
	advance(t, now)
	t.Status = status
	t.LeaseExpiresAt = time.Time{}
	return nil
}

// FailArgs validates the arguments of Fail, before any task is read: the
// reason is required.
func (Rulebook) FailArgs(reason string) error { return reasonArg(reason) }

// Fail moves t, which must be InProgress (and held by owner, if owner is
// not ""), to Failed, recording reason. The owner is kept as the record
// of who tried. Its dependents are stranded from then on (see Board).
// A task with MaxAttempts counts the attempt: while attempts remain it
// becomes pending again instead, deferred by its backoff (RetryDelay),
// and its dependents wait; the last attempt's failure is final, its
// reason saying that it gave up.
func (Rulebook) Fail(t *Task, owner, reason string, now time.Time) error {
	by := t.Owner
	if err := finishHeld(t, owner, Failed, now, Rules.FailArgs(reason)); err != nil {
		return err
	}
	t.Reason = reason
	detail := reason
	if t.MaxAttempts > 0 {
		if failAttempt(t, now, reason) {
			detail = fmt.Sprintf("%s (attempt %d of %d; retry from %s)", reason, t.Attempts, t.MaxAttempts, t.NotBefore.UTC().Format(time.RFC3339))
		} else {
			detail = t.Reason
		}
	}
	record(t, now, HistoryFailed, by, detail)
	return nil
}

// CancelArgs validates the arguments of Cancel, before any task is read:
// the reason is required.
func (Rulebook) CancelArgs(reason string) error { return reasonArg(reason) }

// Cancel moves t, which must be Pending or InProgress, to Cancelled,
// recording reason; an owner is kept as the record of who held it.
func (Rulebook) Cancel(t *Task, reason string, now time.Time) error {
	if err := Rules.CancelArgs(reason); err != nil {
		return err
	}
	if t.Status.Terminal() {
		return &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already %s: only a pending or in_progress task can be cancelled", t.ID, t.Status)}
	}
	advance(t, now)
	t.Status, t.Reason = Cancelled, reason
	t.LeaseExpiresAt = time.Time{}
	record(t, now, HistoryCancelled, "", reason)
	return nil
}

func reasonArg(reason string) error {
	if reason == "" {
		return &InvalidError{Field: "reason", Reason: "must not be empty: say why, for whoever reads or reopens the task"}
	}
	return Rules.Text("reason", reason)
}

// Reopen returns t, which must be Completed, Failed or Cancelled, to
// Pending with no owner, lease, reason or result. dependents are the tasks
// that list t in their BlockedBy, by id, and status answers for them: a
// completed task is not reopened while one of them is in progress or
// completed, since no task may be started before its blockers finish.
func (Rulebook) Reopen(t *Task, now time.Time, dependents []ID, status func(ID) (Status, bool)) error {
	if !t.Status.Terminal() {
		return &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is %s: only a completed, failed or cancelled task can be reopened", t.ID, t.Status)}
	}
	if t.Status == Completed {
		var started []ID
		for _, d := range dependents {
			if st, _ := status(d); st == InProgress || st == Completed {
				started = append(started, d)
			}
		}
		if len(started) > 0 {
			return &InvalidError{Field: "id", Reason: fmt.Sprintf("tasks %v depend on task %d and are in progress or completed: reopening it would leave them started before their blocker; reopen or release them first", started, t.ID)}
		}
	}
	advance(t, now)
	record(t, now, HistoryReopened, "", "was "+string(t.Status))
	t.Status, t.Owner, t.Reason, t.Result = Pending, "", "", ""
	t.ClaimedAt, t.LeaseExpiresAt = time.Time{}, time.Time{}
	if t.Attempts > 0 {
		t.NotBefore = time.Time{} // a retry's backoff, which it no longer waits out
	}
	t.Attempts = 0 // a person's decision: every attempt again
	return nil
}

// Release returns t, which must be InProgress (and held by owner, if owner
// is not ""), to Pending with no owner.
func (Rulebook) Release(t *Task, owner string, now time.Time) error {
	if err := holder(t, owner, false); err != nil {
		return err
	}
	advance(t, now)
	record(t, now, HistoryReleased, t.Owner, "")
	t.Status, t.Owner = Pending, ""
	t.ClaimedAt, t.LeaseExpiresAt = time.Time{}, time.Time{}
	return nil
}

// Blocked returns a *BlockedError if a blocker of t is not done: not
// completed, or completed out of order (see OutOfOrder), which counts as
// unfinished for the tasks it blocks. status reports the status of a task
// and whether a task of that id exists (a task that exists but cannot be
// read exists, with status ""); early reports whether a completed task is
// out of order (its own blockers are read for it: a store answers from its
// index, or from the same query as status).
func (Rulebook) Blocked(t *Task, status func(ID) (Status, bool), early func(ID) bool) error {
	var by, missing, ended, outOfOrder []ID
	for _, b := range t.BlockedBy {
		st, ok := status(b)
		switch {
		case st == Completed && !early(b):
			continue
		case st == Completed:
			outOfOrder = append(outOfOrder, b)
		case !ok:
			missing = append(missing, b)
		case st.ended():
			ended = append(ended, b)
		}
		by = append(by, b)
	}
	if len(by) == 0 {
		return nil
	}
	return &BlockedError{ID: t.ID, By: by, Missing: missing, Failed: ended, OutOfOrder: outOfOrder}
}

// Wait refuses a write that makes t, if it is in progress or completed,
// wait on a task of added that is not completed (status answers as for
// Blocked): work begun before its blockers were done, which no write
// leaves (OutOfOrder). Stores run it on every task that gains blockers:
// the task a patch gives blockers (AddBlockedBy, on t as patched), and the
// tasks a new task or a patched one comes to block (Blocks, AddBlocks, a
// parent), field naming the argument. A new task is pending, so a task
// begun gains none.
func (Rulebook) Wait(field string, t *Task, added []ID, status func(ID) (Status, bool)) error {
	if t.Status != InProgress && t.Status != Completed {
		return nil
	}
	open, _, _ := unfinished(&Task{BlockedBy: added}, status)
	if len(open) == 0 {
		return nil
	}
	fix := "release it first"
	if t.Status == Completed {
		fix = "reopen it first"
	}
	return &InvalidError{Field: field, Reason: fmt.Sprintf("task %d is %s, so it cannot wait on tasks that are not completed (%v): no task is begun before its blockers are done; %s, or add the edge once they are completed", t.ID, t.Status, open, fix)}
}

// OutOfOrder returns the blockers of t that are not completed (missing
// ones included) if t is in progress or completed, and nil otherwise: work
// begun before what it waits on was done. No write leaves a task so
// (Blocked, Wait, Reopen), but a merge of two branches of a graph kept in
// git can — one branch reopens a task, the other completes a task it
// blocks — and so can a hand edit or a Load; Check reports each. Such a
// completed task does not count as completed for the tasks it blocks
// (Blocked, Resolve, ClaimNext): they wait until its own blockers are
// completed again, or it is reopened and done again. The rule looks one step back: a completed task whose
// blockers are all completed counts as completed, whatever their own
// blockers are. A task in progress out of order cannot be completed until
// its blockers are (Blocked); ClaimNext does not take it over when its
// lease lapses.
func (Rulebook) OutOfOrder(t *Task, status func(ID) (Status, bool)) []ID {
	if t.Status != InProgress && t.Status != Completed {
		return nil
	}
	by, _, _ := unfinished(t, status)
	return by
}

// unfinished returns the blockers of t that are not completed, and the
// subsets of them that do not exist, and that are failed or cancelled.
func unfinished(t *Task, status func(ID) (Status, bool)) (by, missing, ended []ID) {
	for _, b := range t.BlockedBy {
		st, ok := status(b)
		if st != Completed {
			by = append(by, b)
			if !ok {
				missing = append(missing, b)
			}
			if st.ended() {
				ended = append(ended, b)
			}
		}
	}
	return by, missing, ended
}

// Delete decides whether task id may be deleted while the tasks in
// dependents list it in their BlockedBy and the tasks in children name it
// as their Parent (both in id order). With detach, the store detaches each
// of them from it (Detach) in the same write; without, a task that others
// depend on or that has children is not deleted, so that no edge and no
// parent names a task that does not exist.
func (Rulebook) Delete(id ID, dependents, children []ID, detach bool) error {
	if detach {
		return nil
	}
	switch {
	case len(dependents) > 0 && len(children) > 0:
		return &InvalidError{Field: "id", Reason: fmt.Sprintf("tasks %v depend on task %d and tasks %v are its children: remove those edges and delete those children first, or delete with taskgraph.Detach(), which removes the edges and leaves the children without a parent", dependents, id, children)}
	case len(dependents) > 0:
		return &InvalidError{Field: "id", Reason: fmt.Sprintf("tasks %v depend on task %d: remove those edges first, or delete with taskgraph.Detach()", dependents, id)}
	case len(children) > 0:
		return &InvalidError{Field: "id", Reason: fmt.Sprintf("tasks %v are children of task %d: delete them first, or delete with taskgraph.Detach(), which leaves them without a parent", children, id)}
	}
	return nil
}

// Detach edits t, a dependent or a child of task id that Delete with
// detach removes, as one write of t: id leaves its BlockedBy and, if it is
// t's parent, t is left without one.
func (Rulebook) Detach(t *Task, id ID, now time.Time) {
	advance(t, now)
	var fields []string
	if slices.Contains(t.BlockedBy, id) {
		t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b ID) bool { return b == id })
		fields = append(fields, "blockedBy")
	}
	if t.Parent == id {
		t.Parent = 0
		fields = append(fields, "parent")
	}
	record(t, now, HistoryEdited, "", strings.Join(fields, ", "))
}

// Load validates tasks for Loader.Load into a store whose highest
// allocated id is highWater, and returns the versions to store: metadata
// normalised, BlockedBy de-duplicated, Blocks dropped, Rev advanced,
// missing timestamps set to now, labels sorted. Priority is taken as
// given (the zero value is DefaultPriority). exists is asked about every blocker
// outside the batch, key about every key (which must be unique, in the
// batch and in the store). The store then refuses the load if it closes a
// cycle.
func (Rulebook) Load(tasks []Task, highWater ID, now time.Time, exists func(ID) error, key func(string) (ID, bool)) ([]*Task, error) {
	if err := Rules.LoadArgs(tasks); err != nil {
		return nil, err
	}
	out := make([]*Task, 0, len(tasks))
	// The versions are cut from one slab, side by side (graph.go,
	// "slabs"): copying a board of them reads memory in order.
	slab := make([]Task, len(tasks))
	batch := make(map[ID]bool, len(tasks))
	keys := map[string]int{}
	for i := range tasks {
		t := &slab[i]
		*t = tasks[i].clone()
		field := fmt.Sprintf("tasks[%d]", i)
		switch {
		case t.ID <= highWater:
			return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("id %d is not above %d, the highest id this store has allocated", t.ID, highWater)}
		case t.ID > MaxID:
			return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("id %d is above %d (MaxID)", t.ID, MaxID)}
		case t.Rev < 0:
			return nil, &InvalidError{Field: field + ".rev", Reason: fmt.Sprintf("%d is negative", t.Rev)}
		case batch[t.ID]:
			return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("id %d appears twice", t.ID)}
		case t.Subject == "":
			return nil, &InvalidError{Field: field + ".subject", Reason: "must not be empty"}
		case !t.Status.Valid():
			return nil, statusError(field+".status", string(t.Status))
		}
		batch[t.ID] = true
		var err error
		if t.Metadata, err = normalizeMetadata(t.Metadata); err != nil {
			return nil, err
		}
		if err := Rules.Priority(field+".priority", t.Priority); err != nil {
			return nil, err
		}
		if t.Labels, err = Rules.Labels(field+".labels", t.Labels); err != nil {
			return nil, err
		}
		if err := Rules.Bounded(t); err != nil {
			return nil, prefixed(field+".", err)
		}
		if t.Parent == t.ID {
			return nil, &InvalidError{Field: field + ".parent", Reason: fmt.Sprintf("%d is not another task's id", t.Parent)}
		}
		if t.Key != "" {
			if err := Rules.Key(field+".key", t.Key); err != nil {
				return nil, err
			}
			if j, dup := keys[t.Key]; dup {
				return nil, &InvalidError{Field: field + ".key", Reason: fmt.Sprintf("%q is also the key of tasks[%d]: keys are unique in a graph", t.Key, j)}
			}
			if id, ok := key(t.Key); ok {
				return nil, &InvalidError{Field: field + ".key", Reason: fmt.Sprintf("%q is already the key of task %d: keys are unique in a graph", t.Key, id)}
			}
			keys[t.Key] = i
		}
		t.Blocks = nil
		t.BlockedBy = addIDs(nil, t.BlockedBy)
		t.Rev++
		if t.CreatedAt.IsZero() {
			t.CreatedAt = now
		}
		if t.UpdatedAt.IsZero() {
			t.UpdatedAt = now
		}
		out = append(out, t)
	}
	for _, t := range out {
		for _, b := range t.BlockedBy {
			if b == t.ID {
				return nil, &InvalidError{Field: "blockedBy", Reason: fmt.Sprintf("task %d cannot block itself", b)}
			}
			if !batch[b] {
				if err := exists(b); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// finishedError is the error for a write that needs a task that is not
// completed, failed or cancelled.
func finishedError(t *Task) error {
	if t.Status == Completed {
		return &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already completed", t.ID)}
	}
	return &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is %s: reopen it first", t.ID, t.Status)}
}

// holder requires t to be InProgress and, if owner is given (or
// required), held by owner.
func holder(t *Task, owner string, required bool) error {
	switch t.Status {
	case Completed, Failed, Cancelled:
		return finishedError(t)
	case Pending:
		return &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is pending, not in_progress: claim it first", t.ID)}
	}
	if required && owner == "" {
		return &InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if owner != "" && owner != t.Owner {
		return &ClaimedError{ID: t.ID, Owner: t.Owner}
	}
	return nil
}

// advance marks t as a new version written at now.
func advance(t *Task, now time.Time) {
	t.Rev++
	t.UpdatedAt = now
}

// addIDs appends the ids of add that are not already in s. Linear: a set
// is used once the lists are long enough for a scan to matter.
func addIDs(s, add []ID) []ID {
	if s == nil {
		s = []ID{}
	}
	if len(s)+len(add) <= 32 {
		for _, id := range add {
			if !slices.Contains(s, id) {
				s = append(s, id)
			}
		}
		return s
	}
	seen := make(map[ID]bool, len(s)+len(add))
	for _, id := range s {
		seen[id] = true
	}
	for _, id := range add {
		if !seen[id] {
			seen[id] = true
			s = append(s, id)
		}
	}
	return s
}

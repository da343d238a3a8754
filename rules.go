package taskgraph

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskgraph/taskgraph/internal/jsonvalue"
)

// Rulebook holds the rules of the task graph — what each operation may do
// to a task, and what the error says when it may not — written once, so
// that every store decides alike and returns identical errors. The README's
// "Rules" section is the same list in prose.
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
	if t.Rev <= 0 {
		return &InvalidError{Field: "rev", Reason: fmt.Sprintf("task %d is at the highest rev, %d, and cannot be written again", t.ID, int64(math.MaxInt64))}
	}
	data, err := encodeTask(t)
	if err != nil {
		return &InvalidError{Field: "metadata", Reason: err.Error()}
	}
	if len(data) > MaxTaskSize {
		return &InvalidError{Field: "task", Reason: fmt.Sprintf("task %d would be %d bytes, over the %d-byte limit (MaxTaskSize): keep large content outside the graph", t.ID, len(data), MaxTaskSize)}
	}
	return nil
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

// CreateArgs validates the text of nt (see Text). Create runs it first; a
// store that must do anything before it can call Create (allocate the id
// in a database) runs it before that.
func (Rulebook) CreateArgs(nt NewTask) error {
	if err := texts("subject", nt.Subject, "description", nt.Description, "owner", nt.Owner); err != nil {
		return err
	}
	return metadataText("metadata", nt.Metadata)
}

// PatchArgs validates the text p would store (see Text). Stores run it
// before reading the task; Patch runs it first too.
func (Rulebook) PatchArgs(p Patch) error {
	for _, f := range []struct {
		k string
		v *string
	}{{"subject", p.Subject}, {"description", p.Description}, {"owner", p.Owner}} {
		if f.v != nil {
			if err := Rules.Text(f.k, *f.v); err != nil {
				return err
			}
		}
	}
	return metadataText("metadata", p.Metadata)
}

// LoadArgs validates the text of tasks (see Text), before anything is
// read. Load runs it first.
func (Rulebook) LoadArgs(tasks []Task) error {
	for i, t := range tasks {
		f := fmt.Sprintf("tasks[%d].", i)
		if err := texts(f+"subject", t.Subject, f+"description", t.Description, f+"owner", t.Owner, f+"prevOwner", t.PrevOwner); err != nil {
			return err
		}
		if err := metadataText(f+"metadata", t.Metadata); err != nil {
			return err
		}
	}
	return nil
}

// Missing returns the error for a task id that names no task: an
// *InvalidError for an id that cannot exist, a *NotFoundError otherwise.
func (Rulebook) Missing(id ID) error {
	if id <= 0 {
		return &InvalidError{Field: "id", Reason: fmt.Sprintf("%d is not a positive task id", id)}
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

// Create validates nt and returns the task to store under the new id. The
// store then adds id to the BlockedBy of every task in nt.Blocks
// (Reblock) and refuses the write if the new edges close a cycle.
func (Rulebook) Create(id ID, nt NewTask, now time.Time, exists func(ID) error) (*Task, error) {
	if err := Rules.CreateArgs(nt); err != nil {
		return nil, err
	}
	if id <= 0 || id > MaxID {
		return nil, &InvalidError{Field: "id", Reason: fmt.Sprintf("no task id is left: every id up to %d (MaxID) has been allocated", MaxID)}
	}
	if nt.Subject == "" {
		return nil, &InvalidError{Field: "subject", Reason: "must not be empty"}
	}
	meta, err := normalizeMetadata(nt.Metadata)
	if err != nil {
		return nil, err
	}
	if err := Rules.CheckEdges(id, "blockedBy", nt.BlockedBy, exists); err != nil {
		return nil, err
	}
	if err := Rules.CheckEdges(id, "blocks", nt.Blocks, exists); err != nil {
		return nil, err
	}
	return &Task{
		ID: id, Subject: nt.Subject, Description: nt.Description, Status: Pending, Owner: nt.Owner,
		BlockedBy: addIDs(nil, nt.BlockedBy), Metadata: meta,
		CreatedAt: now, UpdatedAt: now, Rev: 1,
	}, nil
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
	if p.Status == nil || *p.Status == t.Status {
		return false, nil
	}
	st := *p.Status
	if !st.Valid() {
		return false, &InvalidError{Field: "status", Reason: fmt.Sprintf("%q is not pending, in_progress or completed", st)}
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
	t.Status = st
	// Edges added to a task already past pending record an ordering, not
	// a transition: only entering a started state checks blockers.
	return st != Pending, nil
}

// Reblock edits the blockers of t as one write of t: the ids in add are
// added, then the ids in remove are removed. Stores use it for the other
// side of an edge: the tasks a new task blocks (Create), the tasks a patch
// adds or removes as blocked (Patch), the dependents of a detached task
// (Delete).
func (Rulebook) Reblock(t *Task, now time.Time, add, remove []ID) {
	advance(t, now)
	t.BlockedBy = addIDs(t.BlockedBy, add)
	t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b ID) bool { return slices.Contains(remove, b) })
}

// ClaimArgs validates the arguments of Claim and ClaimNext, before any
// task is read.
func (Rulebook) ClaimArgs(owner string, lease time.Duration) error {
	if owner == "" {
		return &InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if err := Rules.Text("owner", owner); err != nil {
		return err
	}
	if lease < 0 {
		return &InvalidError{Field: "lease", Reason: "must not be negative"}
	}
	return nil
}

// Claim moves t to InProgress under owner. write is false when owner
// already holds t and asks for no lease: nothing changes. Otherwise the
// store must then check t's blockers (Blocked) before storing it. A task
// held by another owner may be claimed once its lease has expired; the
// previous owner is kept in PrevOwner.
func (Rulebook) Claim(t *Task, owner string, lease time.Duration, now time.Time) (write bool, err error) {
	if err := Rules.ClaimArgs(owner, lease); err != nil {
		return false, err
	}
	switch t.Status {
	case Completed:
		return false, &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already completed", t.ID)}
	case InProgress:
		expired := !t.LeaseExpiresAt.IsZero() && !now.Before(t.LeaseExpiresAt)
		switch {
		case t.Owner == owner && lease == 0:
			return false, nil // already ours: nothing to write
		case t.Owner == owner:
		case expired:
			t.PrevOwner = t.Owner
		default:
			return false, &ClaimedError{ID: t.ID, Owner: t.Owner}
		}
	}
	advance(t, now)
	if t.Status != InProgress || t.Owner != owner {
		t.ClaimedAt = now
	}
	t.Status, t.Owner = InProgress, owner
	t.LeaseExpiresAt = time.Time{}
	if lease > 0 {
		t.LeaseExpiresAt = now.Add(lease)
	}
	return true, nil
}

// RenewArgs validates the arguments of Renew, before any task is read.
func (Rulebook) RenewArgs(ttl time.Duration) error {
	if ttl <= 0 {
		return &InvalidError{Field: "ttl", Reason: "must be positive"}
	}
	return nil
}

// Renew extends the lease of t, which owner must hold, to ttl from now.
func (Rulebook) Renew(t *Task, owner string, ttl time.Duration, now time.Time) error {
	if err := Rules.RenewArgs(ttl); err != nil {
		return err
	}
	if err := holder(t, owner, true); err != nil {
		return err
	}
	advance(t, now)
	t.LeaseExpiresAt = now.Add(ttl)
	return nil
}

// Complete moves t, which must be InProgress (and held by owner, if owner
// is not ""), to Completed. The store must then check t's blockers
// (Blocked) before storing it.
func (Rulebook) Complete(t *Task, owner string, now time.Time) error {
	if err := holder(t, owner, false); err != nil {
		return err
	}
	advance(t, now)
	t.Status = Completed
	t.LeaseExpiresAt = time.Time{}
	return nil
}

// Release returns t, which must be InProgress (and held by owner, if owner
// is not ""), to Pending with no owner.
func (Rulebook) Release(t *Task, owner string, now time.Time) error {
	if err := holder(t, owner, false); err != nil {
		return err
	}
	advance(t, now)
	t.Status, t.Owner = Pending, ""
	t.ClaimedAt, t.LeaseExpiresAt = time.Time{}, time.Time{}
	return nil
}

// Blocked returns a *BlockedError if a blocker of t is not completed.
// status reports the status of a task and whether a task of that id
// exists (a task that exists but cannot be read exists, with status "").
func (Rulebook) Blocked(t *Task, status func(ID) (Status, bool)) error {
	by, missing := unfinished(t, status)
	if len(by) == 0 {
		return nil
	}
	return &BlockedError{ID: t.ID, By: by, Missing: missing}
}

// unfinished returns the blockers of t that are not completed, and the
// subset of them that do not exist.
func unfinished(t *Task, status func(ID) (Status, bool)) (by, missing []ID) {
	for _, b := range t.BlockedBy {
		st, ok := status(b)
		if st != Completed {
			by = append(by, b)
			if !ok {
				missing = append(missing, b)
			}
		}
	}
	return by, missing
}

// Delete decides whether task id may be deleted while the tasks in
// dependents list it in their BlockedBy. With detach, the store removes
// the edge from each dependent (Reblock) in the same write.
func (Rulebook) Delete(id ID, dependents []ID, detach bool) error {
	if len(dependents) > 0 && !detach {
		return &InvalidError{Field: "id", Reason: fmt.Sprintf("tasks %v depend on task %d: remove those edges first, or delete with taskgraph.Detach()", dependents, id)}
	}
	return nil
}

// Load validates tasks for Loader.Load into a store whose highest
// allocated id is highWater, and returns the versions to store: metadata
// normalised, BlockedBy de-duplicated, Blocks dropped, Rev advanced,
// missing timestamps set to now. exists is asked about every blocker
// outside the batch. The store then refuses the load if it closes a cycle.
func (Rulebook) Load(tasks []Task, highWater ID, now time.Time, exists func(ID) error) ([]*Task, error) {
	if err := Rules.LoadArgs(tasks); err != nil {
		return nil, err
	}
	out := make([]*Task, 0, len(tasks))
	batch := make(map[ID]bool, len(tasks))
	for i := range tasks {
		t := tasks[i].clone()
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
			return nil, &InvalidError{Field: field + ".status", Reason: fmt.Sprintf("%q is not pending, in_progress or completed", t.Status)}
		}
		batch[t.ID] = true
		var err error
		if t.Metadata, err = normalizeMetadata(t.Metadata); err != nil {
			return nil, err
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
		out = append(out, &t)
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

// holder requires t to be InProgress and, if owner is given (or
// required), held by owner.
func holder(t *Task, owner string, required bool) error {
	switch t.Status {
	case Completed:
		return &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already completed", t.ID)}
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

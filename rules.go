package taskgraph

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// The rules. Each plan function validates against the graph as it is and
// returns the new versions of the tasks to write; it never changes g.

func (g *graph) get(id ID) (*Task, error) {
	if t := g.tasks[id]; t != nil {
		return t, nil
	}
	if err := g.broken[id]; err != nil {
		return nil, err
	}
	if id <= 0 {
		return nil, &InvalidError{Field: "id", Reason: fmt.Sprintf("%d is not a positive task id", id)}
	}
	return nil, &NotFoundError{ID: id}
}

// brokenErr reports every corrupt file, or nil.
func (g *graph) brokenErr() error {
	if len(g.broken) == 0 {
		return nil
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(g.broken)) {
		errs = append(errs, g.broken[id])
	}
	return errors.Join(errs...)
}

// edit returns a copy of task id to modify, with Rev and UpdatedAt advanced.
func (g *graph) edit(id ID, now time.Time) (*Task, error) {
	t, err := g.get(id)
	if err != nil {
		return nil, err
	}
	c := t.clone()
	c.Rev++
	c.UpdatedAt = now
	return &c, nil
}

// checkEdges validates the blockers named by a write.
func (g *graph) checkEdges(self ID, field string, ids []ID) error {
	for _, b := range ids {
		if b == self {
			return &InvalidError{Field: field, Reason: fmt.Sprintf("task %d cannot block itself", self)}
		}
		if _, err := g.get(b); err != nil {
			return err
		}
	}
	return nil
}

func (g *graph) planCreate(nt NewTask, now time.Time) (*plan, error) {
	if nt.Subject == "" {
		return nil, &InvalidError{Field: "subject", Reason: "must not be empty"}
	}
	id := g.maxID + 1
	meta, err := normalizeMetadata(nt.Metadata)
	if err != nil {
		return nil, err
	}
	if err := g.checkEdges(id, "blockedBy", nt.BlockedBy); err != nil {
		return nil, err
	}
	if err := g.checkEdges(id, "blocks", nt.Blocks); err != nil {
		return nil, err
	}
	t := &Task{
		ID: id, Subject: nt.Subject, Description: nt.Description, Status: Pending, Owner: nt.Owner,
		BlockedBy: addIDs(nil, nt.BlockedBy), Metadata: meta,
		CreatedAt: now, UpdatedAt: now, Rev: 1,
	}
	p := &plan{put: []*Task{t}, read: slices.Clone(nt.BlockedBy), result: id}
	for _, d := range nt.Blocks {
		dt, _ := g.edit(d, now)
		dt.BlockedBy = addIDs(dt.BlockedBy, []ID{id})
		p.put = append(p.put, dt)
		p.read = append(p.read, d)
	}
	return p, newOverlay(g, p.put, nil).checkNewEdges()
}

func (g *graph) planUpdate(id ID, pa Patch, now time.Time) (*plan, error) {
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	if pa.IfRev != 0 && pa.IfRev != t.Rev-1 {
		return nil, &ConflictError{ID: id, Want: pa.IfRev, Got: t.Rev - 1}
	}
	p := &plan{put: []*Task{t}, read: []ID{id}, result: id}
	if pa.Subject != nil {
		if *pa.Subject == "" {
			return nil, &InvalidError{Field: "subject", Reason: "must not be empty"}
		}
		t.Subject = *pa.Subject
	}
	if pa.Description != nil {
		t.Description = *pa.Description
	}
	if pa.Owner != nil {
		t.Owner = *pa.Owner
	}
	if err := g.checkEdges(id, "addBlockedBy", pa.AddBlockedBy); err != nil {
		return nil, err
	}
	if err := g.checkEdges(id, "addBlocks", pa.AddBlocks); err != nil {
		return nil, err
	}
	t.BlockedBy = addIDs(t.BlockedBy, pa.AddBlockedBy)
	t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b ID) bool { return slices.Contains(pa.RemoveBlockedBy, b) })
	others := map[ID]*Task{}
	other := func(d ID) (*Task, error) {
		if ot := others[d]; ot != nil {
			return ot, nil
		}
		ot, err := g.edit(d, now)
		if err != nil {
			return nil, err
		}
		others[d] = ot
		p.put = append(p.put, ot)
		p.read = append(p.read, d)
		return ot, nil
	}
	for _, d := range pa.AddBlocks {
		ot, _ := other(d)
		ot.BlockedBy = addIDs(ot.BlockedBy, []ID{id})
	}
	for _, d := range pa.RemoveBlocks {
		if dt := g.tasks[d]; dt == nil || !slices.Contains(dt.BlockedBy, id) {
			continue
		}
		ot, err := other(d)
		if err != nil {
			return nil, err
		}
		ot.BlockedBy = slices.DeleteFunc(ot.BlockedBy, func(b ID) bool { return b == id })
	}
	if pa.Metadata != nil {
		if t.Metadata == nil {
			t.Metadata = map[string]any{}
		}
		set, err := normalizeMetadata(pa.Metadata)
		if err != nil {
			return nil, err
		}
		for k := range pa.Metadata {
			if v := set[k]; v == nil {
				delete(t.Metadata, k)
			} else {
				t.Metadata[k] = v
			}
		}
		if len(t.Metadata) == 0 {
			t.Metadata = nil
		}
	}
	entering := false
	if pa.Status != nil && *pa.Status != t.Status {
		st := *pa.Status
		entering = st != Pending
		if !st.Valid() {
			return nil, &InvalidError{Field: "status", Reason: fmt.Sprintf("%q is not pending, in_progress or completed", st)}
		}
		if st == InProgress && t.Owner == "" {
			return nil, &InvalidError{Field: "owner", Reason: "an in_progress task needs an owner: use Claim, or set Owner in the same patch"}
		}
		if st == Pending && pa.Owner == nil {
			t.Owner = ""
		}
		if st == InProgress && t.Status == Pending {
			t.ClaimedAt = now
		}
		if st != InProgress {
			t.LeaseExpiresAt = time.Time{}
		}
		t.Status = st
	}
	if entering {
		// Checked against the patched edges: the blockers that count are
		// the ones the task has after this patch. Edges added to a task
		// already past pending record an ordering, not a transition.
		if err := g.checkBlockers(t); err != nil {
			return nil, err
		}
	}
	p.read = append(p.read, t.BlockedBy...)
	return p, newOverlay(g, p.put, nil).checkNewEdges()
}

func (g *graph) planClaim(id ID, owner string, lease time.Duration, now time.Time) (*plan, error) {
	if owner == "" {
		return nil, &InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if lease < 0 {
		return nil, &InvalidError{Field: "lease", Reason: "must not be negative"}
	}
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	switch t.Status {
	case Completed:
		return nil, &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already completed", id)}
	case InProgress:
		expired := !t.LeaseExpiresAt.IsZero() && !now.Before(t.LeaseExpiresAt)
		switch {
		case t.Owner == owner && lease == 0:
			return &plan{read: []ID{id}, result: id}, nil // already ours: nothing to write
		case t.Owner == owner:
		case expired:
			t.PrevOwner = t.Owner
		default:
			return nil, &ClaimedError{ID: id, Owner: t.Owner}
		}
	}
	if err := g.checkBlockers(t); err != nil {
		return nil, err
	}
	if t.Status != InProgress || t.Owner != owner {
		t.ClaimedAt = now
	}
	t.Status, t.Owner = InProgress, owner
	t.LeaseExpiresAt = time.Time{}
	if lease > 0 {
		t.LeaseExpiresAt = now.Add(lease)
	}
	return &plan{put: []*Task{t}, read: append([]ID{id}, t.BlockedBy...), result: id}, nil
}

func (g *graph) planClaimNext(owner string, lease time.Duration, now time.Time) (*plan, error) {
	if owner == "" {
		return nil, &InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if id, ok := g.nextReady(); ok {
		return g.planClaim(id, owner, lease, now)
	}
	// Tasks whose lease lapsed come after every never-claimed ready task.
	var expired []ID
	for id := range g.leased {
		t := g.tasks[id]
		if by, _ := g.unfinished(t); len(by) == 0 && !now.Before(t.LeaseExpiresAt) {
			expired = append(expired, id)
		}
	}
	if len(expired) == 0 {
		return nil, ErrNoReady
	}
	return g.planClaim(slices.Min(expired), owner, lease, now)
}

func (g *graph) planRenew(id ID, owner string, ttl time.Duration, now time.Time) (*plan, error) {
	if ttl <= 0 {
		return nil, &InvalidError{Field: "ttl", Reason: "must be positive"}
	}
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	if err := checkHolder(t, owner, true); err != nil {
		return nil, err
	}
	t.LeaseExpiresAt = now.Add(ttl)
	return &plan{put: []*Task{t}, read: []ID{id}, result: id}, nil
}

// checkBlockers refuses to start or finish t while a blocker is unfinished.
// A task on a cycle (one a human wrote into the files) can never start; it
// gets a *CycleError naming the cycle rather than a *BlockedError.
func (g *graph) checkBlockers(t *Task) error {
	by, missing := g.unfinished(t)
	if len(by) == 0 {
		return nil
	}
	if g.backward > 0 { // without a backward edge there is no cycle
		o := newOverlay(g, []*Task{t}, nil)
		for _, b := range t.BlockedBy {
			if path := o.pathBetween(t.ID, b); path != nil {
				return &CycleError{Path: append(path, t.ID)}
			}
		}
	}
	return &BlockedError{ID: t.ID, By: by, Missing: missing}
}

// checkHolder requires t to be InProgress and, if owner is given (or
// required), held by owner.
func checkHolder(t *Task, owner string, required bool) error {
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

func (g *graph) planComplete(id ID, owner string, now time.Time) (*plan, error) {
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	if err := checkHolder(t, owner, false); err != nil {
		return nil, err
	}
	if err := g.checkBlockers(t); err != nil {
		return nil, err
	}
	t.Status = Completed
	t.LeaseExpiresAt = time.Time{}
	return &plan{put: []*Task{t}, read: append([]ID{id}, t.BlockedBy...), result: id}, nil
}

func (g *graph) planRelease(id ID, owner string, now time.Time) (*plan, error) {
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	if err := checkHolder(t, owner, false); err != nil {
		return nil, err
	}
	t.Status, t.Owner = Pending, ""
	t.ClaimedAt, t.LeaseExpiresAt = time.Time{}, time.Time{}
	return &plan{put: []*Task{t}, read: []ID{id}, result: id}, nil
}

func (g *graph) planDelete(id ID, detach bool, now time.Time) (*plan, error) {
	if _, err := g.get(id); err != nil {
		return nil, err
	}
	p := &plan{del: []ID{id}, read: []ID{id}, result: id}
	deps := g.dependents[id] // tasks that exist: remove drops the edges of a task it removes
	if len(deps) > 0 && !detach {
		return nil, &InvalidError{Field: "id", Reason: fmt.Sprintf("tasks %v depend on task %d: remove those edges first, or delete with taskgraph.Detach()", deps, id)}
	}
	for _, d := range deps {
		dt, err := g.edit(d, now)
		if err != nil {
			return nil, err
		}
		dt.BlockedBy = slices.DeleteFunc(dt.BlockedBy, func(b ID) bool { return b == id })
		p.put = append(p.put, dt)
		p.read = append(p.read, d)
	}
	return p, nil
}

func (g *graph) planLoad(tasks []Task, now time.Time) (*plan, error) {
	p := &plan{}
	batch := make(map[ID]bool, len(tasks))
	for i := range tasks {
		t := tasks[i].clone()
		field := fmt.Sprintf("tasks[%d]", i)
		switch {
		case t.ID <= g.maxID:
			return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("id %d is not above %d, the highest id this store has allocated", t.ID, g.maxID)}
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
		p.put = append(p.put, &t)
	}
	for _, t := range p.put {
		for _, b := range t.BlockedBy {
			if b == t.ID {
				return nil, &InvalidError{Field: "blockedBy", Reason: fmt.Sprintf("task %d cannot block itself", b)}
			}
			if !batch[b] {
				if _, err := g.get(b); err != nil {
					return nil, err
				}
			}
		}
	}
	return p, newOverlay(g, p.put, nil).checkNewEdges()
}

// apply makes a persisted plan part of the graph.
func (g *graph) apply(p *plan) {
	for _, id := range p.del {
		g.remove(id)
		g.maxID = max(g.maxID, id)
	}
	for _, t := range p.put {
		g.put(t)
	}
}

// addIDs appends the ids of add that are not already in s.
func addIDs(s, add []ID) []ID {
	if s == nil {
		s = []ID{}
	}
	for _, id := range add {
		if !slices.Contains(s, id) {
			s = append(s, id)
		}
	}
	return s
}

// Planning a write: the Rulebook run against the graph index, giving the
// set of files one write changes.

package taskgraph

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// plan is a validated mutation: the new versions of the tasks it writes and
// the ids it deletes. read lists the tasks whose current content the
// decision depended on, so a FileStore can prove them current first.
type plan struct {
	put    []*Task
	del    []ID
	read   []ID
	result ID
	ids    []ID // the tasks of a CreatePlan, in input order
	// lastNew is the highest id the write allocates; 0 if it creates
	// nothing.
	lastNew ID
	// after is the error the operation returns once the plan is written:
	// a claim that failed its task instead of claiming it, because the
	// lapse used its last attempt (*GaveUpError); a ClaimNext that did so
	// and found nothing to claim (ErrNoReady).
	after error
	// files holds the file of each task of put, as checked encoded it;
	// nil in a plan made without checked.
	files [][]byte
}

// file returns the bytes of the file of put[i]: checked's, or encoded now.
func (p *plan) file(i int) ([]byte, error) {
	if i < len(p.files) {
		return p.files[i], nil
	}
	return taskFileOf(p.put[i])
}

// The plan functions run the Rulebook against the in-memory graph of
// MemStore and FileStore. Each validates against the graph as it is and
// returns the new versions of the tasks to write; none changes g.

func (g *graph) get(id ID) (*Task, error) {
	if t := g.tasks[id]; t != nil {
		return t, nil
	}
	if err := g.broken[id]; err != nil {
		return nil, err
	}
	return nil, Rules.Missing(id)
}

// exists is the Rulebook's question "may a write name this task?".
func (g *graph) exists(id ID) error {
	_, err := g.get(id)
	return err
}

// parent checks the parent of a selection or a claim (Under, WithUnder;
// 0 for none): it must exist, since nothing is under a task that does not,
// which would read as all done.
func (g *graph) parent(id ID) error {
	if id == 0 || g.tasks[id] != nil || g.broken[id] != nil {
		return nil
	}
	return Rules.Missing(id)
}

// status is the Rulebook's question "is this blocker finished?".
func (g *graph) status(id ID) (Status, bool) {
	if t := g.tasks[id]; t != nil {
		return t.Status, true
	}
	return "", g.broken[id] != nil
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

// current returns a private copy of task id to edit.
func (g *graph) current(id ID) (*Task, error) {
	t, err := g.get(id)
	if err != nil {
		return nil, err
	}
	c := t.clone()
	return &c, nil
}

func (g *graph) planCreate(nt NewTask, now time.Time) (*plan, error) {
	if err := Rules.CreateArgs(nt); err != nil {
		return nil, err
	}
	nt = Rules.DefaultApproval(Rules.DefaultLiveness([]NewTask{nt}, g.liveness), g.approval)[0]
	family, err := Rules.Family([]NewTask{nt})
	if err != nil {
		return nil, err
	}
	nt = family[0]
	if id, ok := Rules.Keyed(nt, g.keyed); ok {
		return &plan{read: []ID{id}, result: id}, nil // exists: returned as it is
	}
	id, err := g.firstID(1)
	if err != nil {
		return nil, err
	}
	t, err := create(id, nt, now, g.exists, g.keyed) // Rules.Create, its arguments checked just above
	if err != nil {
		return nil, err
	}
	// The new id is read too: a file of that id that the cache does not
	// know (made behind the lock) is loaded and the id decided again,
	// rather than overwritten.
	p := &plan{put: []*Task{t}, read: append([]ID{t.ID}, t.BlockedBy...), result: t.ID, lastNew: t.ID}
	var refused error // after the cycle check, as in every store
	for _, d := range addIDs(nil, nt.Blocks) {
		dt, _ := g.current(d)
		if refused == nil {
			refused = Rules.Wait("blocks", dt, []ID{t.ID}, g.status) // t is new: pending
		}
		Rules.Reblock(dt, now, []ID{t.ID}, nil)
		p.put = append(p.put, dt)
		p.read = append(p.read, d)
	}
	if err := newOverlay(g, p.put, nil).checkNewEdges(); err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	return p, nil
}

func (g *graph) planCreatePlan(nts []NewTask, now time.Time) (*plan, error) {
	first, err := g.firstID(len(nts))
	if err != nil {
		return nil, err
	}
	pl, err := Rules.Plan(Rules.DefaultApproval(Rules.DefaultLiveness(nts, g.liveness), g.approval), first, now, g.exists, g.keyed)
	if err != nil {
		return nil, err
	}
	p := &plan{ids: pl.IDs}
	p.read = append(p.read, pl.IDs...) // existing ones, and new ids as in planCreate
	for _, t := range pl.New {
		p.lastNew = max(p.lastNew, t.ID)
		p.put = append(p.put, t)
		p.read = append(p.read, t.BlockedBy...)
	}
	var refused error // after the cycle check, as in every store
	for _, d := range pl.Blocked {
		dt, _ := g.current(d) // exists: checked by the rule
		if refused == nil {
			refused = Rules.Wait("blocks", dt, pl.Blockers[d], g.status) // new tasks: pending
		}
		Rules.Reblock(dt, now, pl.Blockers[d], nil)
		p.put = append(p.put, dt)
		p.read = append(p.read, d)
	}
	if err := pl.Named(newOverlay(g, p.put, nil).checkNewEdges()); err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	return p, nil
}

func (g *graph) planUpdate(id ID, pa Patch, now time.Time) (*plan, error) {
	if err := Rules.PatchArgs(pa); err != nil { // before the task is read, as in every store
		return nil, err
	}
	t, err := g.current(id)
	if err != nil {
		return nil, err
	}
	pa = Rules.Reparent(t, pa)
	entering, err := Rules.Patch(t, pa, now, g.exists)
	if err != nil {
		return nil, err
	}
	// No task begun gains a blocker that is not completed: t, as patched,
	// and the tasks it comes to block, which wait on t as patched
	// (refused after the cycle check, as in every store).
	status := func(b ID) (Status, bool) {
		if b == id {
			return t.Status, true
		}
		return g.status(b)
	}
	refused := Rules.Wait("addBlockedBy", t, pa.AddBlockedBy, status)
	p := &plan{put: []*Task{t}, read: []ID{id}, result: id}
	// The other side of each edge the patch adds or removes: one write
	// per other task, however many of its edges change.
	var others []ID
	add, remove := map[ID][]ID{}, map[ID][]ID{}
	for _, d := range pa.AddBlocks {
		others = append(others, d)
		add[d] = []ID{id}
	}
	for _, d := range pa.RemoveBlocks {
		if dt := g.tasks[d]; dt != nil && slices.Contains(dt.BlockedBy, id) {
			others = append(others, d)
			remove[d] = []ID{id}
		}
	}
	for _, d := range addIDs(nil, others) {
		ot, _ := g.current(d) // exists: checked by the rule, or just above
		if refused == nil {
			refused = Rules.Wait("addBlocks", ot, add[d], status)
		}
		Rules.Reblock(ot, now, add[d], remove[d])
		p.put = append(p.put, ot)
		p.read = append(p.read, d)
	}
	if entering {
		if err := g.checkBlockers(t); err != nil {
			return nil, err
		}
	}
	if t.Holds(now) && (!g.tasks[id].Holds(now) || pa.Labels != nil) { // entering, or gaining labels
		if err := Rules.Limited(t, g.limits, g.heldWith(id, now)); err != nil {
			return nil, err
		}
	}
	p.read = append(p.read, t.BlockedBy...)
	if err := newOverlay(g, p.put, nil).checkNewEdges(); err != nil {
		return nil, err
	}
	if refused != nil {
		return nil, refused
	}
	return p, nil
}

func (g *graph) planClaim(id ID, owner string, lease time.Duration, now time.Time) (*plan, error) {
	if err := Rules.ClaimArgs(owner, lease); err != nil {
		return nil, err
	}
	t, err := g.current(id)
	if err != nil {
		return nil, err
	}
	write, err := Rules.Claim(t, owner, lease, now)
	if write && errors.Is(err, ErrGaveUp) {
		return &plan{put: []*Task{t}, read: []ID{id}, result: id, after: err}, nil
	}
	if err != nil {
		return nil, err
	}
	if !write {
		return &plan{read: []ID{id}, result: id}, nil
	}
	if err := g.checkBlockers(t); err != nil {
		return nil, err
	}
	if !g.tasks[id].Holds(now) { // it enters in_progress: it must fit the limits
		if err := Rules.Limited(t, g.limits, g.heldWith(id, now)); err != nil {
			return nil, err
		}
	}
	return &plan{put: []*Task{t}, read: append([]ID{id}, t.BlockedBy...), result: id}, nil
}

func (g *graph) planClaimNext(owner string, lease time.Duration, labels []string, under ID, now time.Time) (*plan, error) {
	labels, err := Rules.ClaimNextArgs(owner, lease, labels)
	if err != nil {
		return nil, err
	}
	if err := g.parent(under); err != nil {
		return nil, err
	}
	if id, ok := g.nextClaim(labels, under, now); ok {
		return g.planClaim(id, owner, lease, now)
	}
	// Tasks whose lease lapsed come after every never-claimed ready task,
	// the most urgent first. A lapse that used a task's last attempt fails
	// it, in the same write, and the claim goes on to the next.
	var lapsed []*Task
	for id := range g.leased {
		t := g.tasks[id]
		if Rules.Blocked(t, g.status, g.isEarly) == nil && t.Lapsed(now) && hasLabels(t.Labels, labels) &&
			(under == 0 || g.under(id, under)) {
			lapsed = append(lapsed, t)
		}
	}
	slices.SortFunc(lapsed, Rules.ClaimOrder)
	var gaveUp plan
	for _, t := range lapsed {
		p, err := g.planClaim(t.ID, owner, lease, now)
		if errors.Is(err, ErrLimited) {
			continue
		}
		if err != nil || p.after == nil {
			if err == nil && len(gaveUp.put) > 0 {
				p.put = append(gaveUp.put, p.put...)
				p.read = append(gaveUp.read, p.read...)
			}
			return p, err
		}
		gaveUp.put, gaveUp.read, gaveUp.result = append(gaveUp.put, p.put...), append(gaveUp.read, p.read...), p.result
	}
	if len(gaveUp.put) == 0 {
		return nil, ErrNoReady
	}
	gaveUp.after = ErrNoReady
	return &gaveUp, nil
}

func (g *graph) planRenew(id ID, owner string, ttl time.Duration, now time.Time) (*plan, error) {
	if err := Rules.RenewArgs(ttl); err != nil {
		return nil, err
	}
	return g.planOne(id, func(t *Task) error {
		lapsed := !t.Holds(now)
		if err := Rules.Renew(t, owner, ttl, now); err != nil {
			return err
		}
		if lapsed { // the claim comes back: it must fit the limits again
			return Rules.Limited(t, g.limits, g.heldWith(id, now))
		}
		return nil
	})
}

func (g *graph) planNote(id ID, author, text string, now time.Time) (*plan, error) {
	if err := Rules.NoteArgs(author, text); err != nil {
		return nil, err
	}
	return g.planOne(id, func(t *Task) error { return Rules.Note(t, author, text, now) })
}

func (g *graph) planRelease(id ID, owner string, now time.Time) (*plan, error) {
	return g.planOne(id, func(t *Task) error { return Rules.Release(t, owner, now) })
}

// planOne plans a write of task id alone, which rule decides: those only
// its holder may make (Renew, Release), and a note.
func (g *graph) planOne(id ID, rule func(t *Task) error) (*plan, error) {
	t, err := g.current(id)
	if err != nil {
		return nil, err
	}
	if err := rule(t); err != nil {
		return nil, err
	}
	return &plan{put: []*Task{t}, read: []ID{id}, result: id}, nil
}

func (g *graph) planComplete(id ID, owner string, set CompleteSettings, now time.Time) (*plan, error) {
	t, err := g.current(id)
	if err != nil {
		return nil, err
	}
	if err := Rules.Complete(t, owner, set, now); err != nil {
		return nil, err
	}
	if err := g.checkBlockers(t); err != nil {
		return nil, err
	}
	return &plan{put: []*Task{t}, read: append([]ID{id}, t.BlockedBy...), result: id}, nil
}

func (g *graph) planFail(id ID, owner, reason string, now time.Time) (*plan, error) {
	if err := Rules.FailArgs(reason); err != nil {
		return nil, err
	}
	return g.planOne(id, func(t *Task) error { return Rules.Fail(t, owner, reason, now) })
}

func (g *graph) planCancel(id ID, reason string, now time.Time) (*plan, error) {
	if err := Rules.CancelArgs(reason); err != nil {
		return nil, err
	}
	return g.planOne(id, func(t *Task) error { return Rules.Cancel(t, reason, now) })
}

func (g *graph) planApprove(id ID, by string, now time.Time) (*plan, error) {
	if err := Rules.ApproveArgs(by); err != nil {
		return nil, err
	}
	return g.planOne(id, func(t *Task) error { return Rules.Approve(t, by, now) })
}

func (g *graph) planReject(id ID, by, reason string, now time.Time) (*plan, error) {
	if err := Rules.RejectArgs(by, reason); err != nil {
		return nil, err
	}
	return g.planOne(id, func(t *Task) error { return Rules.Reject(t, by, reason, now) })
}

func (g *graph) planReopen(id ID, now time.Time) (*plan, error) {
	t, err := g.current(id)
	if err != nil {
		return nil, err
	}
	deps := g.dependents[id] // tasks that exist: remove drops the edges of a task it removes
	if err := Rules.Reopen(t, now, deps, g.status); err != nil {
		return nil, err
	}
	return &plan{put: []*Task{t}, read: append([]ID{id}, deps...), result: id}, nil
}

// checkBlockers refuses to start or finish t while a blocker is unfinished.
// A task on a cycle (one a human wrote into the files) can never start; it
// gets a *CycleError naming the cycle rather than a *BlockedError.
func (g *graph) checkBlockers(t *Task) error {
	err := Rules.Blocked(t, g.status, g.isEarly)
	if err == nil || g.backward == 0 { // without a backward edge there is no cycle
		return err
	}
	o := newOverlay(g, []*Task{t}, nil)
	for _, b := range t.BlockedBy {
		if path := o.pathBetween(t.ID, b); path != nil {
			return &CycleError{Path: append(path, t.ID)}
		}
	}
	return err
}

func (g *graph) planDelete(id ID, detach bool, now time.Time) (*plan, error) {
	if _, err := g.get(id); err != nil {
		return nil, err
	}
	if len(g.broken) > 0 {
		// The dependents index lacks the edges of files that cannot be
		// read: one of them may depend on id, and would be left blocked
		// by a task that no longer exists (or, without Detach, deleted
		// from under it).
		return nil, fmt.Errorf("taskgraph: delete task %d: the task files that cannot be read may depend on it; fix or remove them first: %w", id, g.brokenErr())
	}
	deps := g.dependents[id] // tasks that exist: remove drops the edges of a task it removes
	children := g.children[id]
	if err := Rules.Delete(id, deps, children, detach); err != nil {
		return nil, err
	}
	p := &plan{del: []ID{id}, read: []ID{id}, result: id}
	for _, d := range slices.Sorted(slices.Values(addIDs(slices.Clone(deps), children))) { // a task that is both is written once
		dt, err := g.current(d)
		if err != nil {
			return nil, err
		}
		Rules.Detach(dt, id, now)
		p.put = append(p.put, dt)
		p.read = append(p.read, d)
	}
	return p, nil
}

func (g *graph) planLoad(tasks []Task, now time.Time) (*plan, error) {
	put, err := Rules.Load(tasks, g.maxID, now, g.exists, g.keyed)
	if err != nil {
		return nil, err
	}
	// Loaded tasks in progress count against the limits, each against
	// the graph and the ones loaded before it.
	var loaded []*Task
	for _, t := range put {
		if !t.Holds(now) {
			continue
		}
		held := g.heldWith(t.ID, now)
		err := Rules.Limited(t, g.limits, func(l string) int {
			return held(l) + len(slices.DeleteFunc(slices.Clone(loaded), func(o *Task) bool { return !slices.Contains(o.Labels, l) }))
		})
		if err != nil {
			return nil, err
		}
		loaded = append(loaded, t)
	}
	p := &plan{put: put}
	for _, t := range put {
		p.read = append(p.read, t.ID) // as for Create: never overwrite an unknown file
	}
	return p, newOverlay(g, put, nil).checkNewEdges()
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

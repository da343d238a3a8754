// This file holds the operations of Agree: the table of decoders, which
// picks the next operation from the input, and each decoder, which reads
// its arguments (agree_args.go) and returns the operation, ready to run on
// either store.

package taskgraphtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// A decoder reads one operation from the input.
type decoder func(d *driver) op

// decoders are the operations, some twice to run more often.
var decoders = []decoder{
	(*driver).create, (*driver).create, (*driver).createEdges, (*driver).createEdges,
	(*driver).claim, (*driver).claim, (*driver).claimNext, (*driver).claimNext, (*driver).drain,
	(*driver).renew, (*driver).complete, (*driver).complete, (*driver).release,
	(*driver).updateFields, (*driver).updateStatus, (*driver).updateEdges, (*driver).updateEdges,
	(*driver).delete, (*driver).load, (*driver).advance, (*driver).get, (*driver).compare,
	(*driver).createKeyed, (*driver).createKeyed, (*driver).createPlan, (*driver).createPlan,
	(*driver).fail, (*driver).cancel, (*driver).reopen, (*driver).updateRouting, (*driver).listFiltered,
	(*driver).note, (*driver).scheduled, (*driver).reschedule, (*driver).setLimit,
	// Appended, so that an operation byte below the length of the table
	// before them means what it meant; the stored seeds were rewritten to
	// such bytes when they came (see the commit that added them).
	(*driver).createLive, (*driver).createLive, (*driver).updateLive, (*driver).setLivenessDefault,
	// Appended after those, for the same reason: approval gates and links.
	(*driver).createGated, (*driver).approve, (*driver).reject, (*driver).setApprovalPolicy, (*driver).addLinks,
	// Appended after those, for the same reason (the stored seeds'
	// operation bytes are all below 35): verified completion.
	(*driver).createChecked, (*driver).completeChecked, (*driver).completeChecked, (*driver).updateCheck,
}

// decode reads the next operation from the input.
func (d *driver) decode() op {
	return decoders[d.pick(len(decoders))](d)
}

// taskOp is the operation named name that makes call, which returns a
// task.
func taskOp(name string, call func(s tg.Store) (tg.Task, error)) op {
	return op{name: name, run: func(s tg.Store) result { return taskResult(call(s)) }}
}

// Creating: Create with fields, with edges, with keys and references;
// CreatePlan; with liveness limits.

// livenesses are the MaxRuntime and ProgressWindow the operations give:
// whole milliseconds, as the clock moves, some out of range.
var livenesses = []time.Duration{0, 0, time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, 5 * time.Second, -time.Second, tg.MaxLiveness + time.Millisecond}

// createLive creates a task with a MaxRuntime, a ProgressWindow, or both,
// and some attempts: the clock (advance), claims, notes and renewals then
// lapse it by either.
func (d *driver) createLive() op {
	nt := tg.NewTask{Subject: d.subject(), Labels: d.labels(), MaxAttempts: d.pick(3)}
	nt.MaxRuntime = livenesses[d.pick(len(livenesses))]
	nt.ProgressWindow = livenesses[d.pick(len(livenesses))]
	return createOp(nt)
}

// updateLive sets or clears a task's MaxRuntime or ProgressWindow.
func (d *driver) updateLive() op {
	id := d.id()
	var p tg.Patch
	if d.pick(2) == 0 {
		p.MaxRuntime = ptr(livenesses[d.pick(len(livenesses))])
	}
	if d.pick(2) == 0 {
		p.ProgressWindow = ptr(livenesses[d.pick(len(livenesses))])
	}
	p.IfRev = d.ifRev(id)
	return updateOp(id, p)
}

func (d *driver) create() op {
	nt := tg.NewTask{Subject: d.subject()}
	if d.pick(4) == 0 {
		nt.Description = "details"
	}
	if d.pick(8) == 0 {
		nt.Owner = d.owner()
	}
	nt.Metadata = d.metadata()
	return createOp(nt)
}

func (d *driver) createEdges() op {
	nt := tg.NewTask{Subject: fmt.Sprint("edge task ", d.next())}
	switch d.pick(4) {
	case 0:
		nt.Blocks = d.ids()
	case 1:
		nt.BlockedBy, nt.Blocks = d.ids(), d.ids()
	default:
		nt.BlockedBy = d.ids()
	}
	return createOp(nt)
}

// createKeyed creates a task with a priority, labels, a key (often one
// that exists) and references.
func (d *driver) createKeyed() op {
	nt := tg.NewTask{Subject: d.subject(), Priority: d.newPriority(), Labels: d.labels()}
	if d.pick(4) > 0 {
		nt.Key = d.key()
	}
	nt.After = d.references(nil)
	if d.pick(6) == 0 {
		nt.BlockedBy = d.ids()
	}
	return createOp(nt)
}

// createPlan creates 0 to 4 tasks naming each other, sometimes with a
// missing or repeated key, a cycle, or Blocks into the graph.
func (d *driver) createPlan() op {
	n := d.pick(5)
	nts := make([]tg.NewTask, n)
	var keys []string
	for i := range nts {
		k := fmt.Sprintf("p%d-%d", d.next()%8, i)
		switch d.pick(10) {
		case 0:
			k = d.key() // perhaps one that exists
		case 1:
			k = ""
		case 2:
			if len(keys) > 0 {
				k = keys[0] // twice
			}
		}
		keys = append(keys, k)
		nts[i] = tg.NewTask{Subject: d.subject(), Key: k, Priority: d.newPriority(), Labels: d.labels()}
		if d.pick(6) == 0 {
			nts[i].Blocks = d.ids()
		}
		if d.pick(8) == 0 {
			nts[i].BlockedBy = d.ids()
		}
	}
	for i := range nts {
		nts[i].After = d.references(keys) // forwards and backwards: cycles too
	}
	return op{
		name: fmt.Sprintf("CreatePlan(%s)", fmtPlan(nts)),
		run: func(s tg.Store) result {
			ts, err := s.CreatePlan(bg, nts)
			return listResult(ts, err)
		},
		alloc: func(result) tg.ID {
			top := tg.ID(0)
			all, _ := d.ref.List(bg)
			for _, t := range all {
				top = max(top, t.ID)
			}
			return top
		},
	}
}

func createOp(nt tg.NewTask) op {
	o := taskOp(fmt.Sprintf("Create(%s)", fmtNewTask(nt)),
		func(s tg.Store) (tg.Task, error) { return s.Create(bg, nt) })
	o.alloc = func(r result) tg.ID { return r.task.ID }
	return o
}

// Claiming: Claim, ClaimNext, and ClaimNext until none is ready.

func (d *driver) claim() op {
	id := d.id()
	if d.pick(3) == 0 {
		id = d.heldID() // taken, or its lease lapsed
	}
	owner := d.owner()
	opts, desc := d.lease()
	return taskOp(fmt.Sprintf("Claim(%d, %q%s)", id, owner, desc),
		func(s tg.Store) (tg.Task, error) { return s.Claim(bg, id, owner, opts...) })
}

func (d *driver) claimNext() op {
	owner, opts, desc := d.claimNextArgs()
	return taskOp(fmt.Sprintf("ClaimNext(%q%s)", owner, desc),
		func(s tg.Store) (tg.Task, error) { return s.ClaimNext(bg, owner, opts...) })
}

// drain claims up to 8 tasks in a row, so that the ready tasks run out
// and ClaimNext turns to the expired leases.
func (d *driver) drain() op {
	n := 1 + d.pick(8)
	owner, opts, desc := d.claimNextArgs()
	return op{
		name: fmt.Sprintf("up to %d times ClaimNext(%q%s)", n, owner, desc),
		run: func(s tg.Store) result {
			var lines []string
			for range n {
				r := taskResult(s.ClaimNext(bg, owner, opts...))
				lines = append(lines, r.text)
				if r.err != nil {
					break
				}
			}
			return result{text: strings.Join(lines, "\n")}
		},
	}
}

// scheduled creates a task with a schedule: attempts (sometimes out of
// range), a backoff, a NotBefore in the past or the next seconds.
func (d *driver) scheduled() op {
	nt := tg.NewTask{Subject: d.subject(), MaxAttempts: []int{0, 1, 2, 3, -1}[d.pick(5)],
		Backoff: []time.Duration{0, time.Second, 3 * time.Second, -time.Second}[d.pick(4)]}
	if d.pick(2) == 0 {
		nt.NotBefore = d.clock.now().Add(time.Duration(d.pick(8)-2) * time.Second)
	}
	if d.pick(3) == 0 {
		nt.BlockedBy = d.ids()
	}
	if d.pick(2) == 0 {
		nt.Parent = d.id() // sometimes one that does not exist, or 0
	}
	return createOp(nt)
}

// reschedule moves a task's NotBefore or changes its attempts.
func (d *driver) reschedule() op {
	id := d.id()
	var p tg.Patch
	switch d.pick(3) {
	case 0:
		p.NotBefore = ptr(d.clock.now().Add(time.Duration(d.pick(8)-4) * time.Second))
	case 1:
		p.NotBefore = ptr(time.Time{})
	default:
		p.MaxAttempts = ptr(d.pick(4))
	}
	return updateOp(id, p)
}

// setLimit sets, changes or removes a label's limit (sometimes an
// invalid one), then lists the limits: through Limiter, which every store
// of this module implements.
func (d *driver) setLimit() op {
	label := agreeLabels[d.pick(len(agreeLabels))]
	n := []int{0, 1, 1, 2, 3, -1}[d.pick(6)]
	return op{
		name: fmt.Sprintf("SetLimit(%q, %d), Limits()", label, n),
		run: func(s tg.Store) result {
			l, ok := s.(tg.Limiter)
			if !ok {
				return errResult(fmt.Errorf("%T does not implement taskgraph.Limiter", s))
			}
			if err := l.SetLimit(bg, label, n); err != nil {
				return errResult(err)
			}
			limits, err := l.Limits(bg)
			if err != nil {
				return errResult(err)
			}
			return result{text: fmt.Sprint(limits)}
		},
	}
}

// setLivenessDefault sets, changes or removes a label's default liveness
// (sometimes out of range), which the creates after it apply.
func (d *driver) setLivenessDefault() op {
	label := agreeLabels[d.pick(len(agreeLabels))]
	ld := tg.LivenessDefault{MaxRuntime: livenesses[d.pick(len(livenesses))], ProgressWindow: livenesses[d.pick(len(livenesses))]}
	return op{
		name: fmt.Sprintf("SetLivenessDefault(%q, %+v), LivenessDefaults()", label, ld),
		run: func(s tg.Store) result {
			l, ok := s.(tg.LivenessDefaulter)
			if !ok {
				return errResult(fmt.Errorf("%T does not implement taskgraph.LivenessDefaulter", s))
			}
			if err := l.SetLivenessDefault(bg, label, ld); err != nil {
				return errResult(err)
			}
			all, err := l.LivenessDefaults(bg)
			if err != nil {
				return errResult(err)
			}
			return result{text: fmt.Sprint(all)}
		},
	}
}

// vias are the ways of creation the operations give, one invalid.
var vias = []string{"", tg.ViaCLI, tg.ViaTools, tg.ViaMCP, "Bad Way"}

// createGated creates a task that needs approval, or says how it was
// created, which the approval policy may gate.
func (d *driver) createGated() op {
	nt := tg.NewTask{Subject: d.subject(), Labels: d.labels(), NeedsApproval: d.pick(2) == 0, CreatedVia: vias[d.pick(len(vias))]}
	return createOp(nt)
}

// approve approves a task, through Approver, sometimes without saying
// who; most tasks do not await approval.
func (d *driver) approve() op {
	id := d.id()
	by := d.owner()
	if d.pick(8) == 0 {
		by = ""
	}
	return taskOp(fmt.Sprintf("Approve(%d, %q)", id, by), func(s tg.Store) (tg.Task, error) {
		a, ok := s.(tg.Approver)
		if !ok {
			return tg.Task{}, fmt.Errorf("%T does not implement taskgraph.Approver", s)
		}
		return a.Approve(bg, id, by)
	})
}

// reject rejects a task, through Approver, sometimes without a reason.
func (d *driver) reject() op {
	id := d.id()
	by := d.owner()
	reason := []string{"too risky", "", "not now"}[d.pick(3)]
	return taskOp(fmt.Sprintf("Reject(%d, %q, %q)", id, by, reason), func(s tg.Store) (tg.Task, error) {
		a, ok := s.(tg.Approver)
		if !ok {
			return tg.Task{}, fmt.Errorf("%T does not implement taskgraph.Approver", s)
		}
		return a.Reject(bg, id, by, reason)
	})
}

// setApprovalPolicy sets the approval policy (sometimes an invalid one),
// which the creates after it apply.
func (d *driver) setApprovalPolicy() op {
	var p tg.ApprovalPolicy
	for range d.pick(3) {
		p.Labels = append(p.Labels, agreeLabels[d.pick(len(agreeLabels))])
	}
	for range d.pick(3) {
		p.Via = append(p.Via, vias[1+d.pick(len(vias)-1)])
	}
	return op{
		name: fmt.Sprintf("SetApprovalPolicy(%+v), ApprovalPolicy()", p),
		run: func(s tg.Store) result {
			a, ok := s.(tg.ApprovalPolicer)
			if !ok {
				return errResult(fmt.Errorf("%T does not implement taskgraph.ApprovalPolicer", s))
			}
			if err := a.SetApprovalPolicy(bg, p); err != nil {
				return errResult(err)
			}
			got, err := a.ApprovalPolicy(bg)
			if err != nil {
				return errResult(err)
			}
			return result{text: fmt.Sprintf("%+v", got)}
		},
	}
}

// linkRefs are the links the operations add, one invalid.
var linkRefs = []string{"https://example.com/pr/7", "abc1234", "docs/design.md", "two\nlines"}

// addLinks adds one or two links to a task by Update: a set, and
// progress for the claim's no-progress window.
func (d *driver) addLinks() op {
	id := d.id()
	refs := []string{linkRefs[d.pick(len(linkRefs))]}
	if d.pick(2) == 0 {
		refs = append(refs, linkRefs[d.pick(len(linkRefs))])
	}
	return updateOp(id, tg.Patch{AddLinks: refs, IfRev: d.ifRev(id)})
}

// note writes a note, sometimes an invalid one, on a task: through
// Noter, which every store of this module implements.
func (d *driver) note() op {
	id := d.id()
	author := d.owner()
	if d.pick(8) == 0 {
		author = ""
	}
	texts := []string{"tried the obvious fix", "", "nul\x00", "see the log «7»"}
	text := texts[d.pick(len(texts))]
	return taskOp(fmt.Sprintf("Note(%d, %q, %q)", id, author, text), func(s tg.Store) (tg.Task, error) {
		n, ok := s.(tg.Noter)
		if !ok {
			return tg.Task{}, fmt.Errorf("%T does not implement taskgraph.Noter", s)
		}
		return n.Note(bg, id, author, text)
	})
}

// The operations of a task's holder, and those of anyone: Renew,
// Complete, Release, Fail; Cancel, Reopen.

var ttls = []time.Duration{0, -time.Second, time.Millisecond, time.Second, time.Second, 5 * time.Second, 5 * time.Second, 30 * time.Second}

func (d *driver) renew() op {
	id, owner := d.holder()
	ttl := ttls[d.pick(len(ttls))]
	return taskOp(fmt.Sprintf("Renew(%d, %q, %v)", id, owner, ttl),
		func(s tg.Store) (tg.Task, error) { return s.Renew(bg, id, owner, ttl) })
}

var results = []string{"", "", "done: see PR 7", "nul\x00"}

func (d *driver) complete() op {
	id, owner := d.holder()
	var opts []tg.CompleteOption
	desc := ""
	if v := d.pick(len(results) + 2); v < len(results) {
		opts, desc = []tg.CompleteOption{tg.WithResult(results[v])}, fmt.Sprintf(", WithResult(%q)", results[v])
	}
	return completeOp(id, owner, opts, desc)
}

// completeOp is Complete(id, owner, opts...), desc saying what opts are.
func completeOp(id tg.ID, owner string, opts []tg.CompleteOption, desc string) op {
	return op{
		name: fmt.Sprintf("Complete(%d, %q%s)", id, owner, desc),
		run: func(s tg.Store) result {
			c, err := s.Complete(bg, id, owner, opts...)
			if err != nil {
				return errResult(err)
			}
			var b strings.Builder
			b.WriteString(fmtTask(c.Task))
			b.WriteString("\nunblocked:")
			for _, u := range c.Unblocked {
				b.WriteString("\n  " + fmtTask(u))
			}
			return result{text: b.String()}
		},
	}
}

func (d *driver) release() op {
	id, owner := d.holder()
	return taskOp(fmt.Sprintf("Release(%d, %q)", id, owner),
		func(s tg.Store) (tg.Task, error) { return s.Release(bg, id, owner) })
}

func (d *driver) fail() op {
	id, owner := d.holder()
	reason := d.reason()
	return taskOp(fmt.Sprintf("Fail(%d, %q, %q)", id, owner, reason),
		func(s tg.Store) (tg.Task, error) { return s.Fail(bg, id, owner, reason) })
}

func (d *driver) cancel() op {
	id := d.id()
	reason := d.reason()
	return taskOp(fmt.Sprintf("Cancel(%d, %q)", id, reason),
		func(s tg.Store) (tg.Task, error) { return s.Cancel(bg, id, reason) })
}

// reopen mostly reopens a completed, failed or cancelled task.
func (d *driver) reopen() op {
	id := d.id()
	if d.pick(4) > 0 {
		if b, _ := d.ref.Board(bg); len(b.Completed)+len(b.Failed)+len(b.Cancelled) > 0 {
			done := slices.Concat(b.Completed, b.Failed, b.Cancelled)
			id = done[d.pick(len(done))].ID
		}
	}
	return taskOp(fmt.Sprintf("Reopen(%d)", id), func(s tg.Store) (tg.Task, error) { return s.Reopen(bg, id) })
}

// Updating: fields, status and owner, edges, priority and labels.

func (d *driver) updateFields() op {
	id := d.id()
	var p tg.Patch
	if d.pick(2) == 0 {
		p.Subject = ptr(d.subject())
	}
	switch d.pick(3) {
	case 0:
		p.Description = ptr("")
	case 1:
		p.Description = ptr(fmt.Sprint("description ", d.next()))
	}
	p.Metadata = d.metadata()
	p.IfRev = d.ifRev(id)
	return updateOp(id, p)
}

func (d *driver) updateStatus() op {
	id := d.id()
	var p tg.Patch
	if v := d.pick(len(statuses) + 1); v < len(statuses) {
		p.Status = ptr(statuses[v])
	}
	if v := d.pick(len(owners) + 1); v < len(owners) {
		p.Owner = ptr(owners[v])
	}
	if d.pick(3) == 0 {
		// Remove the blockers and start in one patch.
		p.RemoveBlockedBy = d.refTask(id).BlockedBy
	}
	p.IfRev = d.ifRev(id)
	return updateOp(id, p)
}

func (d *driver) updateEdges() op {
	id := d.id()
	var p tg.Patch
	switch d.pick(6) {
	case 0: // close a cycle through every blocker
		p.AddBlocks = d.refTask(id).BlockedBy
	case 1: // ... or through every dependent
		p.AddBlockedBy = d.refTask(id).Blocks
	default:
		v := d.next()
		if v&1 != 0 {
			p.AddBlockedBy = d.ids()
		}
		if v&2 != 0 {
			p.RemoveBlockedBy = d.ids()
		}
		if v&4 != 0 {
			p.AddBlocks = d.ids()
		}
		if v&8 != 0 {
			p.RemoveBlocks = d.ids()
		}
	}
	if d.pick(4) == 0 {
		p.IfRev = d.ifRev(id)
	}
	return updateOp(id, p)
}

// updateRouting changes a task's priority and labels.
func (d *driver) updateRouting() op {
	id := d.id()
	p := tg.Patch{Priority: d.priority()}
	if d.pick(2) == 0 {
		labels := d.labels()
		p.Labels = &labels
	}
	return updateOp(id, p)
}

func updateOp(id tg.ID, p tg.Patch) op {
	return taskOp(fmt.Sprintf("Update(%d, %s)", id, fmtPatch(p)),
		func(s tg.Store) (tg.Task, error) { return s.Update(bg, id, p) })
}

// Delete, Load, and the clock.

func (d *driver) delete() op {
	id := d.id()
	if d.pick(2) == 0 {
		return op{
			name: fmt.Sprintf("Delete(%d)", id),
			run:  func(s tg.Store) result { return errResult(s.Delete(bg, id)) },
		}
	}
	return op{
		name: fmt.Sprintf("Delete(%d, Detach())", id),
		run:  func(s tg.Store) result { return errResult(s.Delete(bg, id, tg.Detach())) },
	}
}

var loadStatuses = []tg.Status{tg.Pending, tg.Pending, tg.Pending, tg.InProgress, tg.InProgress, tg.InProgress, tg.Completed, tg.Completed, tg.Completed, "bogus",
	tg.Failed, tg.Cancelled}

// load loads a batch of tasks, mostly with fresh ids; sometimes an id that
// is taken or not above the highest, a duplicate, a blocker 0, a cycle
// within the batch.
func (d *driver) load() op {
	n := 1 + d.pick(3)
	var base tg.ID
	switch d.pick(8) {
	case 0:
		base = d.hi
	case 1:
		base = d.hi - 2
	default:
		base = d.hi + 1 + tg.ID(d.pick(3))
	}
	now := d.clock.now()
	tasks := make([]tg.Task, n)
	for i := range tasks {
		tasks[i] = d.loadedTask(base, i, n, now)
	}
	if n > 1 && d.pick(8) == 0 {
		tasks[n-1].ID = tasks[0].ID
	}
	return d.loadOp(tasks)
}

// loadedTask returns task i of a batch of n from id base, loaded at now:
// of any status, sometimes invalid, with blockers outside the batch or in
// it, and the fields a store sets itself (times, rev, lease) at times.
func (d *driver) loadedTask(base tg.ID, i, n int, now time.Time) tg.Task {
	t := tg.Task{ID: base + tg.ID(i), Subject: fmt.Sprint("loaded ", d.next())}
	if d.pick(16) == 0 {
		t.Subject = ""
	}
	t.Status = loadStatuses[d.pick(len(loadStatuses))]
	if t.Status != tg.Pending || d.pick(8) == 0 {
		t.Owner = d.owner()
	}
	switch d.pick(16) {
	case 0, 1, 2, 3:
		t.BlockedBy = []tg.ID{d.id()}
	case 4, 5: // within the batch, possibly ahead, possibly itself
		t.BlockedBy = []tg.ID{base + tg.ID(d.pick(n))}
	case 6:
		t.BlockedBy = []tg.ID{0}
	case 7:
		t.BlockedBy = []tg.ID{d.id(), d.id(), base}
	}
	if d.pick(8) == 0 {
		t.Blocks = []tg.ID{d.id()} // derived: Load ignores it
	}
	if d.pick(4) == 0 {
		t.Metadata = d.metadata()
	}
	t.Priority = tg.PriorityLevel(d.pick(6)) // 5: refused
	if d.pick(3) == 0 {
		t.Labels = d.labels()
	}
	if d.pick(3) == 0 {
		t.Key = d.key()
	}
	if t.Status == tg.Failed || t.Status == tg.Cancelled {
		t.Reason = "loaded"
	}
	if t.Status == tg.Completed && d.pick(2) == 0 {
		t.Result = "loaded result"
	}
	if d.pick(2) == 0 {
		// Created before the tasks already there, or at one instant
		// with another loaded task: the claim order's tie-break by
		// creation time, then id, against the ids' order.
		t.CreatedAt = now.Add(-time.Duration(1+d.pick(2)) * time.Hour)
		t.UpdatedAt = now.Add(-time.Minute)
		t.Rev = int64(d.pick(4))
	}
	if t.Status == tg.InProgress && d.pick(2) == 0 {
		t.ClaimedAt = now.Add(-time.Minute)
		t.LeaseExpiresAt = now.Add(time.Duration(d.pick(4)) * time.Second)
		if d.pick(4) == 0 {
			t.PrevOwner = "previous"
		}
	}
	return t
}

// loadOp loads tasks, if the store under test is a Loader; else it does
// nothing to either store.
func (d *driver) loadOp(tasks []tg.Task) op {
	var names []string
	top := tg.ID(0)
	for _, t := range tasks {
		names = append(names, fmtTask(t))
		top = max(top, t.ID)
	}
	name := fmt.Sprintf("Load([%s])", strings.Join(names, ", "))
	if !d.loads {
		return op{name: name + " (skipped: not a Loader)", run: func(tg.Store) result { return result{} }}
	}
	return op{
		name: name,
		run: func(s tg.Store) result {
			// Each store gets its own copy: Load must not keep the slices.
			batch := make([]tg.Task, len(tasks))
			for i, t := range tasks {
				t.BlockedBy, t.Blocks = slices.Clone(t.BlockedBy), slices.Clone(t.Blocks)
				t.Metadata = maps.Clone(t.Metadata)
				batch[i] = t
			}
			return errResult(s.(tg.Loader).Load(bg, batch))
		},
		alloc: func(result) tg.ID { return top },
	}
}

var jumps = []time.Duration{0, time.Millisecond, 999 * time.Millisecond, time.Second, 5 * time.Second, time.Minute}

// advance moves the clock: to exactly the next lease expiry (or lapse),
// or on.
func (d *driver) advance() op {
	now := d.clock.now()
	v := d.pick(len(jumps))
	to := now.Add(jumps[v])
	if v == 0 {
		to = now.Add(time.Second)
		all, _ := d.ref.List(bg)
		for _, t := range all {
			l := t.LeaseExpiresAt
			if t.Extra != nil && t.Status == tg.InProgress {
				l = t.LapsesAt() // its runtime or its window may end the claim first
			}
			if l.After(now) && l.Before(to) {
				to = l
			}
		}
	}
	return op{
		name: fmt.Sprintf("advance the clock %v to %s", to.Sub(now), fmtTime(to)),
		run: func(tg.Store) result {
			d.clock.set(to)
			return result{}
		},
	}
}

// Reading: Get, List and Board, with and without filters.

func (d *driver) get() op { return getOp(d.id()) }

func getOp(id tg.ID) op {
	return taskOp(fmt.Sprintf("Get(%d)", id), func(s tg.Store) (tg.Task, error) { return s.Get(bg, id) })
}

func (d *driver) compare() op {
	id := d.id()
	all := d.compareAll()
	return op{
		name: fmt.Sprintf("List(), Board(), Get(%d)", id),
		run: func(s tg.Store) result {
			r := all.run(s)
			return result{text: r.text + "\n" + getOp(id).run(s).text}
		},
	}
}

// compareAll renders List and Board.
func (d *driver) compareAll() op { return listBoardOp(nil, nil) }

// listFiltered lists and boards with filters.
func (d *driver) listFiltered() op {
	var filters []tg.Filter
	var desc []string
	if v := d.pick(len(statuses) + 3); v < len(statuses) {
		filters, desc = append(filters, tg.WithStatus(statuses[v])), append(desc, fmt.Sprintf("WithStatus(%q)", statuses[v]))
	}
	if v := d.pick(len(owners) + 3); v < len(owners) {
		filters, desc = append(filters, tg.WithOwner(owners[v])), append(desc, fmt.Sprintf("WithOwner(%q)", owners[v]))
	}
	if d.pick(3) == 0 {
		labels := d.labels()
		filters, desc = append(filters, tg.HasLabels(labels...)), append(desc, fmt.Sprintf("HasLabels(%q)", labels))
	}
	if d.pick(4) == 0 {
		filters, desc = append(filters, tg.ReadyOnly()), append(desc, "ReadyOnly()")
	}
	if d.pick(3) == 0 {
		n := d.pick(4)
		filters, desc = append(filters, tg.Limit(n)), append(desc, fmt.Sprintf("Limit(%d)", n))
	}
	return listBoardOp(filters, desc)
}

// listBoardOp renders List and Board with filters, which desc renders.
func listBoardOp(filters []tg.Filter, desc []string) op {
	args := strings.Join(desc, ", ")
	return op{
		name: fmt.Sprintf("List(%s), Board(%s)", args, args),
		run: func(s tg.Store) result {
			ts, err := s.List(bg, filters...)
			text := listResult(ts, err).text
			b, err := s.Board(bg, filters...)
			return result{text: text + "\n" + boardResult(b, err).text}
		},
	}
}

// Verified completion: tasks naming a check (some malformed), completed
// with evidence that passed or failed, of their check or another, with a
// skip, or with nothing; checks set and cleared by Update.

// checkNames are the checks the operations name; "" is none, the last
// is malformed.
var checkNames = []string{"", "test", "test", "lint", "Not A Name"}

// evidence is a run of check that passed, or failed with exit 1.
func evidence(check string, passed bool) tg.Evidence {
	ev := tg.Evidence{Check: check, Duration: 1200 * time.Millisecond, Digest: "sha256:" + strings.Repeat("0f", 32), Tail: "PASS", Commit: strings.Repeat("a1", 20)}
	if !passed {
		ev.Exit, ev.Tail = 1, "FAIL"
	}
	return ev
}

// createChecked creates a task naming a check, with acceptance items
// (sometimes an empty one, which is refused) and attempts.
func (d *driver) createChecked() op {
	nt := tg.NewTask{Subject: d.subject(), MaxAttempts: d.pick(3), Check: checkNames[d.pick(len(checkNames))]}
	switch d.pick(4) {
	case 0:
		nt.Acceptance = []string{"it works", "docs say so"}
	case 1:
		nt.Acceptance = []string{""}
	}
	if d.pick(3) == 0 {
		nt.BlockedBy = d.ids()
	}
	return createOp(nt)
}

// completeChecked completes a held task with evidence (passing or not,
// of a check maybe not its own), a skip, both, or nothing.
func (d *driver) completeChecked() op {
	id, owner := d.holder()
	check := checkNames[1+d.pick(len(checkNames)-1)]
	var opts []tg.CompleteOption
	var desc string
	switch d.pick(6) {
	case 0:
	case 1, 2:
		opts, desc = []tg.CompleteOption{tg.WithEvidence(evidence(check, true))}, fmt.Sprintf(", WithEvidence(%s passed)", check)
	case 3:
		opts, desc = []tg.CompleteOption{tg.WithEvidence(evidence(check, false))}, fmt.Sprintf(", WithEvidence(%s failed)", check)
	case 4:
		opts, desc = []tg.CompleteOption{tg.SkipCheck()}, ", SkipCheck()"
	case 5:
		opts, desc = []tg.CompleteOption{tg.WithEvidence(evidence(check, true)), tg.SkipCheck()}, fmt.Sprintf(", WithEvidence(%s passed), SkipCheck()", check)
	}
	return completeOp(id, owner, opts, desc)
}

// updateCheck sets or clears a task's check or acceptance items, or
// completes it by an edit, which a task with a check refuses.
func (d *driver) updateCheck() op {
	id := d.id()
	var p tg.Patch
	switch d.pick(4) {
	case 0:
		p.Acceptance = ptr([]string{"reviewed"})
	case 1:
		p.Status = ptr(tg.Completed)
	}
	if d.pick(2) == 0 {
		p.Check = ptr(checkNames[d.pick(len(checkNames))])
	}
	p.IfRev = d.ifRev(id)
	return updateOp(id, p)
}

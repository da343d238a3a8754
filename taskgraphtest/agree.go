package taskgraphtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// NewStoreWithClock returns a new, empty store that reads the time from
// now, and from nothing else: Agree drives a fake clock, so that leases
// lapse when it says and timestamps are the same in both stores. The
// driver advances the clock in whole milliseconds. Agree closes the store.
type NewStoreWithClock = func(t *testing.T, now func() time.Time) tg.Store

// The size of Agree: agreeSeeds sequences of agreeSteps operations each
// (fewer seeds with -short), and the most operations AgreeOn decodes from
// one input.
const (
	agreeSeeds      = 8
	agreeShortSeeds = 2
	agreeSteps      = 600
	agreeOnMaxSteps = 1000
)

// Agree is a differential check: it applies seeded random sequences of
// operations to a store from newStore and to a [tg.MemStore] running on the
// same fake clock, and fails at the first result or error in which they
// differ. Every operation of the Store contract takes part, with valid
// and invalid arguments alike: Create with BlockedBy and Blocks (some
// closing a cycle), with priorities, labels, keys (often one that exists)
// and After references; CreatePlan of plans that name each other by key,
// some with a missing or repeated key, a cycle or Blocks into the graph;
// Claim and ClaimNext with and without WithLease and WithLabels, Renew,
// Complete (with and without WithResult), Fail and Release by the holder,
// by "" and by another owner, Cancel and Reopen, Update of fields,
// metadata, priority, labels, status (failed and cancelled included),
// edges and IfRev, Delete with and without Detach, Load (if the store is a
// [tg.Loader]) of new, duplicate and taken ids and keys, the clock jumping
// to and past lease expiries, Get, List and Board with and without
// filters, and finally Close.
//
// Results must be equal field by field (exported fields only; times as
// instants, to the microsecond; a nil and an empty slice or map are the
// same), errors must have identical text and match the same sentinels
// (ErrNotFound, ErrBlocked, ErrClaimed, ErrConflict, ErrCycle, ErrInvalid,
// ErrCorrupt, ErrNoReady, ErrClosed) with errors.Is.
//
// Each sequence is a subtest named by its seed, so a failure reported as
// seed=3 is rerun alone with -run 'YourTest/seed=3'. The sequences are
// fixed: a store that passes once passes every time.
func Agree(t *testing.T, newStore NewStoreWithClock) {
	t.Helper()
	seeds := agreeSeeds
	if testing.Short() {
		seeds = agreeShortSeeds
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			if err := agree(t, agreeInput(seed), agreeSteps, newStore); err != nil {
				t.Fatalf("taskgraphtest.Agree, seed %d (rerun it alone with -run '%s'): %v", seed, t.Name(), err)
			}
		})
	}
}

// AgreeOn is Agree for one sequence decoded from ops, for fuzz targets:
//
//	func FuzzAgree(f *testing.F) {
//		f.Add([]byte{0, 1, 2, 3})
//		f.Fuzz(func(t *testing.T, ops []byte) {
//			taskgraphtest.AgreeOn(t, ops, newStore)
//		})
//	}
//
// Any bytes are a valid sequence; it decodes at most 1000 operations.
func AgreeOn(t *testing.T, ops []byte, newStore NewStoreWithClock) {
	t.Helper()
	if err := agree(t, ops, agreeOnMaxSteps, newStore); err != nil {
		t.Fatalf("taskgraphtest.AgreeOn: %v", err)
	}
}

// agreeInput returns the bytes that Agree decodes for seed.
func agreeInput(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 0x7461736b67726170))
	b := make([]byte, agreeSteps*24) // more than the operations consume
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// disagreement is how the two stores first differed.
type disagreement struct {
	step    int      // 0-based; -1 for the checks after the last step
	op      string   // the operation, as Go-like source
	ref     string   // what MemStore returned
	got     string   // what the store under test returned
	history []string // the operations before it, most recent last
}

func (d *disagreement) Error() string {
	var b strings.Builder
	if d.step < 0 {
		fmt.Fprintf(&b, "after the last step, %s: the stores disagree", d.op)
	} else {
		fmt.Fprintf(&b, "step %d, %s: the stores disagree", d.step, d.op)
	}
	refLines, gotLines := strings.Split(d.ref, "\n"), strings.Split(d.got, "\n")
	for i := range max(len(refLines), len(gotLines)) {
		r, g := lineAt(refLines, i), lineAt(gotLines, i)
		if r != g {
			fmt.Fprintf(&b, "\n  first difference, line %d of the result:\n    MemStore: %s\n    store:    %s", i+1, r, g)
			break
		}
	}
	if len(d.ref)+len(d.got) < 4000 {
		fmt.Fprintf(&b, "\n  MemStore returned:\n%s\n  the store returned:\n%s", indent(d.ref), indent(d.got))
	}
	if len(d.history) > 0 {
		fmt.Fprintf(&b, "\n  the operations before it:")
		for _, h := range d.history {
			fmt.Fprintf(&b, "\n    %s", h)
		}
	}
	return b.String()
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(nothing)"
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

// fakeClock is the clock both stores read; only the driver moves it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// agree runs the operations decoded from input, at most maxSteps of them,
// on a store from newStore and on a MemStore, and returns a *disagreement
// for the first difference.
func agree(t *testing.T, input []byte, maxSteps int, newStore NewStoreWithClock) error {
	clock := &fakeClock{t: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	d := &driver{
		ref:   tg.NewMemStore(tg.WithClock(clock.now)),
		sut:   newStore(t, clock.now),
		clock: clock,
		in:    input,
	}
	defer d.ref.Close()
	defer d.sut.Close()
	_, d.loads = d.sut.(tg.Loader)
	for step := 0; step < maxSteps && d.more(); step++ {
		o := d.decode()
		if err := d.check(step, o); err != nil {
			return err
		}
		d.history = append(d.history, fmt.Sprintf("step %d: %s", step, o.name))
		if len(d.history) > 12 {
			d.history = d.history[1:]
		}
		clock.set(clock.now().Add(time.Millisecond))
		if step%32 == 31 {
			if err := d.check(step, d.compareAll()); err != nil {
				return err
			}
		}
	}
	return d.final()
}

// driver decodes operations from its input and runs each on both stores.
type driver struct {
	ref     *tg.MemStore
	sut     tg.Store
	clock   *fakeClock
	in      []byte
	loads   bool     // the store under test is a Loader, as MemStore is
	hi      tg.ID    // the highest id the stores have allocated
	history []string // the last operations run
}

// op is one decoded operation: run performs it and renders the result.
type op struct {
	name string
	run  func(s tg.Store) result
	// alloc is the highest id the operation allocates if it succeeds.
	alloc func(r result) tg.ID
}

type result struct {
	text string
	task tg.Task // of Create
	err  error
}

func (d *driver) more() bool { return len(d.in) > 0 }

// next consumes one byte of input; 0 once it is used up.
func (d *driver) next() byte {
	if len(d.in) == 0 {
		return 0
	}
	b := d.in[0]
	d.in = d.in[1:]
	return b
}

func (d *driver) pick(n int) int { return int(d.next()) % n }

var bg = context.Background()

// check runs o on both stores and compares what they return.
func (d *driver) check(step int, o op) error {
	want := o.run(d.ref)
	got := o.run(d.sut)
	if want.text != got.text {
		return &disagreement{step: step, op: o.name, ref: want.text, got: got.text, history: slices.Clone(d.history)}
	}
	if o.alloc != nil && want.err == nil {
		d.hi = max(d.hi, o.alloc(want))
	}
	return nil
}

// final compares every task, List and Board, then the stores after Close.
func (d *driver) final() error {
	checks := []op{d.compareAll()}
	for id := tg.ID(0); id <= d.hi+1; id++ {
		checks = append(checks, getOp(id))
	}
	checks = append(checks,
		op{name: "Close()", run: func(s tg.Store) result { return errResult(s.Close()) }},
		getOp(1),
		op{name: "List()", run: func(s tg.Store) result {
			ts, err := s.List(bg)
			return listResult(ts, err)
		}},
		op{name: `Create({Subject:"after close"})`, run: func(s tg.Store) result {
			return taskResult(s.Create(bg, tg.NewTask{Subject: "after close"}))
		}},
		op{name: "ClaimNext(\"a\")", run: func(s tg.Store) result {
			return taskResult(s.ClaimNext(bg, "a"))
		}},
		op{name: "Close() again", run: func(s tg.Store) result { return errResult(s.Close()) }},
	)
	for _, o := range checks {
		if err := d.check(-1, o); err != nil {
			return err
		}
	}
	return nil
}

// Operation decoding. Each decoder reads the bytes it needs; what it cannot
// decide from bytes alone (the current holder, rev or blockers of a task)
// it reads from the MemStore, so the sequence depends on the input only.

type decoder func(d *driver) op

var decoders = []decoder{
	(*driver).create, (*driver).create, (*driver).createEdges, (*driver).createEdges,
	(*driver).claim, (*driver).claim, (*driver).claimNext, (*driver).claimNext, (*driver).drain,
	(*driver).renew, (*driver).complete, (*driver).complete, (*driver).release,
	(*driver).updateFields, (*driver).updateStatus, (*driver).updateEdges, (*driver).updateEdges,
	(*driver).delete, (*driver).load, (*driver).advance, (*driver).get, (*driver).compare,
	(*driver).createKeyed, (*driver).createKeyed, (*driver).createPlan, (*driver).createPlan,
	(*driver).fail, (*driver).cancel, (*driver).reopen, (*driver).updateRouting, (*driver).listFiltered,
}

func (d *driver) decode() op {
	return decoders[d.pick(len(decoders))](d)
}

// id returns a task id: half the time one of the tasks that exist, else
// one near the highest allocated, so that most operations name a task that
// exists; sometimes 0, -1 or one not yet allocated.
func (d *driver) id() tg.ID {
	v := tg.ID(d.pick(32))
	switch {
	case v == 0:
		return 0
	case v == 1:
		return -1
	case v == 2:
		return d.hi + 1
	case v == 3:
		return d.hi + 2
	case v >= 16:
		if all, _ := d.ref.List(bg); len(all) > 0 {
			return all[d.pick(len(all))].ID
		}
		fallthrough
	case d.hi == 0:
		return v%12 + 1
	}
	id := d.hi - (v - 4)
	if id < 1 {
		id = 1 + (v-4)%d.hi
	}
	return id
}

// heldID is mostly a task in progress, for the operations of its holder.
func (d *driver) heldID() tg.ID {
	if d.pick(3) > 0 {
		if b, _ := d.ref.Board(bg); len(b.InProgress) > 0 {
			return b.InProgress[d.pick(len(b.InProgress))].ID
		}
	}
	return d.id()
}

func (d *driver) ids() []tg.ID {
	out := make([]tg.ID, 1+d.pick(3))
	for i := range out {
		out[i] = d.id()
	}
	return out
}

var owners = []string{"", "a", "a", "a", "b", "b", "agent-ü", "agent-ü"}

func (d *driver) owner() string { return owners[d.pick(len(owners))] }

// ownerFor is often the current owner of task id, else any owner,
// including "".
func (d *driver) ownerFor(id tg.ID) string {
	if v := d.pick(2 * len(owners)); v < len(owners) {
		return owners[v]
	}
	t, _ := d.ref.Get(bg, id)
	return t.Owner
}

func (d *driver) refTask(id tg.ID) tg.Task {
	t, _ := d.ref.Get(bg, id)
	return t
}

func (d *driver) subject() string {
	switch v := d.next(); v % 8 {
	case 0:
		return ""
	case 1:
		return "设置 «schema» & <api>"
	default:
		return fmt.Sprint("task ", v)
	}
}

func (d *driver) metadata() map[string]any {
	switch v := d.next(); v % 8 {
	case 1:
		return map[string]any{"k": "v"}
	case 2:
		return map[string]any{"k": nil, "n": nil}
	case 3:
		return map[string]any{"n": int(v)}
	case 4:
		return map[string]any{"nested": map[string]any{"list": []any{1, "x", true}}, "k": 2.5}
	case 5:
		return map[string]any{"bad": math.NaN()}
	case 6:
		return map[string]any{}
	}
	return nil
}

var leases = []time.Duration{
	0, 0, 0, 0, 0, 0, 0, 0, // no option
	0, time.Second, time.Second, time.Second, 3 * time.Second, 3 * time.Second, 10 * time.Second, -time.Second,
}

// lease returns claim options: none, or WithLease with a lease that may be
// 0 or negative.
func (d *driver) lease() ([]tg.ClaimOption, string) {
	v := d.pick(len(leases))
	if v < 8 {
		return nil, ""
	}
	return []tg.ClaimOption{tg.WithLease(leases[v])}, fmt.Sprintf(", WithLease(%v)", leases[v])
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

func createOp(nt tg.NewTask) op {
	return op{
		name:  fmt.Sprintf("Create(%s)", fmtNewTask(nt)),
		run:   func(s tg.Store) result { return taskResult(s.Create(bg, nt)) },
		alloc: func(r result) tg.ID { return r.task.ID },
	}
}

func (d *driver) claim() op {
	id := d.id()
	if d.pick(3) == 0 {
		id = d.heldID() // taken, or its lease lapsed
	}
	owner := d.owner()
	opts, desc := d.lease()
	return op{
		name: fmt.Sprintf("Claim(%d, %q%s)", id, owner, desc),
		run:  func(s tg.Store) result { return taskResult(s.Claim(bg, id, owner, opts...)) },
	}
}

func (d *driver) claimNext() op {
	owner := d.owner()
	opts, desc := d.lease()
	opts, desc = d.withLabels(opts, desc)
	return op{
		name: fmt.Sprintf("ClaimNext(%q%s)", owner, desc),
		run:  func(s tg.Store) result { return taskResult(s.ClaimNext(bg, owner, opts...)) },
	}
}

// drain claims up to 8 tasks in a row, so that the ready tasks run out
// and ClaimNext turns to the expired leases.
func (d *driver) drain() op {
	n := 1 + d.pick(8)
	owner := d.owner()
	opts, desc := d.lease()
	opts, desc = d.withLabels(opts, desc)
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

var ttls = []time.Duration{0, -time.Second, time.Millisecond, time.Second, time.Second, 5 * time.Second, 5 * time.Second, 30 * time.Second}

func (d *driver) renew() op {
	id := d.heldID()
	owner := d.ownerFor(id)
	ttl := ttls[d.pick(len(ttls))]
	return op{
		name: fmt.Sprintf("Renew(%d, %q, %v)", id, owner, ttl),
		run:  func(s tg.Store) result { return taskResult(s.Renew(bg, id, owner, ttl)) },
	}
}

var results = []string{"", "", "done: see PR 7", "nul\x00"}

func (d *driver) complete() op {
	id := d.heldID()
	owner := d.ownerFor(id)
	var opts []tg.CompleteOption
	desc := ""
	if v := d.pick(len(results) + 2); v < len(results) {
		opts, desc = []tg.CompleteOption{tg.WithResult(results[v])}, fmt.Sprintf(", WithResult(%q)", results[v])
	}
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
	id := d.heldID()
	owner := d.ownerFor(id)
	return op{
		name: fmt.Sprintf("Release(%d, %q)", id, owner),
		run:  func(s tg.Store) result { return taskResult(s.Release(bg, id, owner)) },
	}
}

func (d *driver) ifRev(id tg.ID) int64 {
	switch d.pick(5) {
	case 1, 2:
		return d.refTask(id).Rev
	case 3:
		return max(d.refTask(id).Rev-1, 1)
	case 4:
		return 99
	}
	return 0
}

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

var statuses = []tg.Status{tg.Pending, tg.InProgress, tg.InProgress, tg.Completed, "done", tg.Failed, tg.Cancelled, tg.Pending}

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

func updateOp(id tg.ID, p tg.Patch) op {
	return op{
		name: fmt.Sprintf("Update(%d, %s)", id, fmtPatch(p)),
		run:  func(s tg.Store) result { return taskResult(s.Update(bg, id, p)) },
	}
}

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
		t.Priority = tg.Priority(d.pick(6)) // 5: refused
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
			t.CreatedAt = now.Add(-time.Hour)
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
		tasks[i] = t
	}
	if n > 1 && d.pick(8) == 0 {
		tasks[n-1].ID = tasks[0].ID
	}
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

// advance moves the clock: to exactly the next lease expiry, or on.
func (d *driver) advance() op {
	now := d.clock.now()
	v := d.pick(len(jumps))
	to := now.Add(jumps[v])
	if v == 0 {
		to = now.Add(time.Second)
		all, _ := d.ref.List(bg)
		for _, t := range all {
			if l := t.LeaseExpiresAt; l.After(now) && l.Before(to) {
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

// Priorities, labels, keys and references: mostly valid, sometimes not.
var (
	agreeLabels = []string{"a", "b", "frontend", "a", "b", "Bad Label"}
	agreeKeys   = []string{"k1", "k2", "k3", "schema", "api", "k1", "12", "#3", "tab\tkey"}
)

// priority is nil (the default) or a priority, sometimes out of range.
func (d *driver) priority() *tg.Priority {
	v := d.pick(8)
	if v >= 6 {
		return nil
	}
	p := tg.Priority(v) // 5: refused
	return &p
}

// labels returns 0 to 3 labels, sometimes repeated or malformed.
func (d *driver) labels() []string {
	n := d.pick(4)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = agreeLabels[d.pick(len(agreeLabels))]
	}
	return out
}

func (d *driver) key() string { return agreeKeys[d.pick(len(agreeKeys))] }

// reference returns a reference for NewTask.After: a key (of the plan, of a
// task, or of none), an id in either form, or something refused.
func (d *driver) reference(plan []string) string {
	switch v := d.pick(10); {
	case v < 4 && len(plan) > 0:
		return plan[d.pick(len(plan))]
	case v < 6:
		return d.key()
	case v == 6:
		return fmt.Sprint("#", d.id())
	case v == 7:
		return fmt.Sprint(d.id())
	case v == 8:
		return "nope"
	}
	return ""
}

func (d *driver) references(plan []string) []string {
	n := d.pick(4)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.reference(plan)
	}
	return out
}

// createKeyed creates a task with a priority, labels, a key (often one
// that exists) and references.
func (d *driver) createKeyed() op {
	nt := tg.NewTask{Subject: d.subject(), Priority: d.priority(), Labels: d.labels()}
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
		nts[i] = tg.NewTask{Subject: d.subject(), Key: k, Priority: d.priority(), Labels: d.labels()}
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

func fmtPlan(nts []tg.NewTask) string {
	var parts []string
	for _, nt := range nts {
		parts = append(parts, fmtNewTask(nt))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

var reasons = []string{"crashed", "not needed", "", "bad \xff"}

func (d *driver) fail() op {
	id := d.heldID()
	owner := d.ownerFor(id)
	reason := reasons[d.pick(len(reasons))]
	return op{
		name: fmt.Sprintf("Fail(%d, %q, %q)", id, owner, reason),
		run:  func(s tg.Store) result { return taskResult(s.Fail(bg, id, owner, reason)) },
	}
}

func (d *driver) cancel() op {
	id := d.id()
	reason := reasons[d.pick(len(reasons))]
	return op{
		name: fmt.Sprintf("Cancel(%d, %q)", id, reason),
		run:  func(s tg.Store) result { return taskResult(s.Cancel(bg, id, reason)) },
	}
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
	return op{
		name: fmt.Sprintf("Reopen(%d)", id),
		run:  func(s tg.Store) result { return taskResult(s.Reopen(bg, id)) },
	}
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

// withLabels sometimes adds WithLabels to claim options.
func (d *driver) withLabels(opts []tg.ClaimOption, desc string) ([]tg.ClaimOption, string) {
	if d.pick(3) > 0 {
		return opts, desc
	}
	labels := d.labels()
	return append(opts, tg.WithLabels(labels...)), desc + fmt.Sprintf(", WithLabels(%q)", labels)
}

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

func (d *driver) get() op { return getOp(d.id()) }

func getOp(id tg.ID) op {
	return op{
		name: fmt.Sprintf("Get(%d)", id),
		run:  func(s tg.Store) result { return taskResult(s.Get(bg, id)) },
	}
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
func (d *driver) compareAll() op {
	return op{
		name: "List(), Board()",
		run: func(s tg.Store) result {
			ts, err := s.List(bg)
			text := listResult(ts, err).text
			b, err := s.Board(bg)
			return result{text: text + "\n" + boardResult(b, err).text}
		},
	}
}

// Rendering. Results are compared as text, one task per line, so that a
// difference names the task and the field.

func taskResult(t tg.Task, err error) result {
	if err != nil {
		return errResult(err)
	}
	return result{text: fmtTask(t), task: t}
}

func errResult(err error) result {
	return result{text: fmtErr(err), err: err}
}

func listResult(ts []tg.Task, err error) result {
	if err != nil {
		return errResult(err)
	}
	lines := []string{fmt.Sprintf("list of %d:", len(ts))}
	for _, t := range ts {
		lines = append(lines, "  "+fmtTask(t))
	}
	return result{text: strings.Join(lines, "\n")}
}

func boardResult(b tg.Board, err error) result {
	if err != nil {
		return errResult(err)
	}
	var lines []string
	for _, part := range []struct {
		state tg.State
		tasks []tg.Task
	}{{tg.StateReady, b.Ready}, {tg.StateBlocked, b.Blocked}, {tg.StateStranded, b.Stranded}, {tg.StateInProgress, b.InProgress},
		{tg.StateCompleted, b.Completed}, {tg.StateFailed, b.Failed}, {tg.StateCancelled, b.Cancelled}} {
		name := strings.ReplaceAll(string(part.state), "_", " ") // "in progress", as the transcripts have always read
		lines = append(lines, fmt.Sprintf("board %s, %d:", name, len(part.tasks)))
		for _, t := range part.tasks {
			lines = append(lines, "  "+fmtTask(t))
		}
	}
	var missing []string
	for _, id := range slices.Sorted(maps.Keys(b.Missing)) {
		if len(b.Missing[id]) > 0 {
			missing = append(missing, fmt.Sprintf("%d:%v", id, b.Missing[id]))
		}
	}
	lines = append(lines, fmt.Sprintf("board missing: %v", missing))
	var stranded []string
	for _, id := range slices.Sorted(maps.Keys(b.StrandedBy)) {
		stranded = append(stranded, fmt.Sprintf("%d:%d", id, b.StrandedBy[id]))
	}
	lines = append(lines, fmt.Sprintf("board stranded by: %v, finished: %v", stranded, b.Finished()))
	return result{text: strings.Join(lines, "\n")}
}

var sentinels = []struct {
	name string
	err  error
}{
	{"ErrNotFound", tg.ErrNotFound}, {"ErrBlocked", tg.ErrBlocked}, {"ErrClaimed", tg.ErrClaimed},
	{"ErrConflict", tg.ErrConflict}, {"ErrCycle", tg.ErrCycle}, {"ErrInvalid", tg.ErrInvalid},
	{"ErrCorrupt", tg.ErrCorrupt}, {"ErrNoReady", tg.ErrNoReady}, {"ErrClosed", tg.ErrClosed},
}

// fmtErr renders an error as its text and the sentinels it matches.
func fmtErr(err error) string {
	if err == nil {
		return "ok"
	}
	var is []string
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			is = append(is, s.name)
		}
	}
	return fmt.Sprintf("error %q matching %v", err.Error(), is)
}

// taskFields are the exported fields of Task, in declaration order.
var taskFields = func() []reflect.StructField {
	var out []reflect.StructField
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[tg.Task]()) {
		if sf.IsExported() && !sf.Anonymous {
			out = append(out, sf)
		}
	}
	return out
}()

// fmtTask renders every exported field of t, so that a field added to
// Task takes part without a change here.
func fmtTask(t tg.Task) string {
	v := reflect.ValueOf(t)
	var b strings.Builder
	b.WriteByte('{')
	for i, sf := range taskFields {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sf.Name)
		b.WriteByte(':')
		switch x := v.FieldByIndex(sf.Index).Interface().(type) {
		case time.Time:
			b.WriteString(fmtTime(x))
		case []tg.ID:
			b.WriteString(fmtIDs(x))
		case map[string]any:
			b.WriteString(fmtMeta(x))
		case string:
			b.WriteString(strconv.Quote(x))
		case tg.Status:
			b.WriteString(strconv.Quote(string(x)))
		default:
			fmt.Fprint(&b, x)
		}
	}
	b.WriteByte('}')
	return b.String()
}

func fmtNewTask(nt tg.NewTask) string {
	var f []string
	f = append(f, fmt.Sprintf("Subject:%q", nt.Subject))
	if nt.Description != "" {
		f = append(f, fmt.Sprintf("Description:%q", nt.Description))
	}
	if nt.Owner != "" {
		f = append(f, fmt.Sprintf("Owner:%q", nt.Owner))
	}
	if nt.BlockedBy != nil {
		f = append(f, "BlockedBy:"+fmtIDs(nt.BlockedBy))
	}
	if nt.Blocks != nil {
		f = append(f, "Blocks:"+fmtIDs(nt.Blocks))
	}
	if nt.Metadata != nil {
		f = append(f, "Metadata:"+fmtMeta(nt.Metadata))
	}
	if nt.Priority != nil {
		f = append(f, fmt.Sprint("Priority:", int(*nt.Priority)))
	}
	if nt.Labels != nil {
		f = append(f, fmt.Sprintf("Labels:%q", nt.Labels))
	}
	if nt.Key != "" {
		f = append(f, fmt.Sprintf("Key:%q", nt.Key))
	}
	if nt.After != nil {
		f = append(f, fmt.Sprintf("After:%q", nt.After))
	}
	return "{" + strings.Join(f, " ") + "}"
}

func fmtPatch(p tg.Patch) string {
	var f []string
	if p.Subject != nil {
		f = append(f, fmt.Sprintf("Subject:%q", *p.Subject))
	}
	if p.Description != nil {
		f = append(f, fmt.Sprintf("Description:%q", *p.Description))
	}
	if p.Status != nil {
		f = append(f, fmt.Sprintf("Status:%q", *p.Status))
	}
	if p.Owner != nil {
		f = append(f, fmt.Sprintf("Owner:%q", *p.Owner))
	}
	for _, e := range []struct {
		name string
		ids  []tg.ID
	}{{"AddBlockedBy", p.AddBlockedBy}, {"RemoveBlockedBy", p.RemoveBlockedBy}, {"AddBlocks", p.AddBlocks}, {"RemoveBlocks", p.RemoveBlocks}} {
		if e.ids != nil {
			f = append(f, e.name+":"+fmtIDs(e.ids))
		}
	}
	if p.Metadata != nil {
		f = append(f, "Metadata:"+fmtMeta(p.Metadata))
	}
	if p.Priority != nil {
		f = append(f, fmt.Sprint("Priority:", int(*p.Priority)))
	}
	if p.Labels != nil {
		f = append(f, fmt.Sprintf("Labels:%q", *p.Labels))
	}
	if p.IfRev != 0 {
		f = append(f, fmt.Sprint("IfRev:", p.IfRev))
	}
	return "{" + strings.Join(f, " ") + "}"
}

func fmtIDs(ids []tg.ID) string {
	if len(ids) == 0 {
		return "[]"
	}
	return fmt.Sprint(ids)
}

// fmtMeta renders metadata as JSON, keys sorted; {} and nil alike.
func fmtMeta(m map[string]any) string {
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprintf("%v", m)
	}
	return string(b)
}

// fmtTime renders an instant in UTC to the microsecond, the precision of
// the coarsest store (PostgreSQL).
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}

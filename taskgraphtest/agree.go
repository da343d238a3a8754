// This file holds the harness of Agree: its entry points, the fake clock,
// and the driver that runs each operation on both stores side by side and
// compares what they return. The operations are in agree_ops.go, their
// arguments in agree_args.go, and the text that is compared and reported
// in agree_render.go.

package taskgraphtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
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

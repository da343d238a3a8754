// The state made from the one before by the watch's events agrees with
// the state made anew from the store.

package board_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/board"
)

// TestNextAgreesWithStore: after each of 300 random writes to a graph of
// 300 tasks — edits of every kind of field, notes, claims, renewals,
// releases, and the completions, failures, cancellations, reopenings and
// new edges that the board reads from the store instead — the board made
// from the state before by the write's events (state.next) is the board
// a new server makes from the store, task by task, column by column, and
// most of the writes were told by their events alone.
func TestNextAgreesWithStore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const n = 300
	s := project(t, n)
	events, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	srv := board.New(s)
	defer srv.Close()
	if _, err := srv.ApplyChange(ctx); err != nil { // the first state, from the store
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 5))
	pick := func(col taskgraph.State) (taskgraph.ID, bool) {
		for _, c := range srv.Current().Columns {
			if c.Key == col && len(c.IDs) > 0 {
				return c.IDs[r.IntN(len(c.IDs))], true
			}
		}
		return 0, false
	}
	local := 0
	for step := range 300 {
		id := taskgraph.ID(1 + r.IntN(n))
		var err error
		var what string
		switch k := r.IntN(14); {
		case k < 2:
			what = "subject"
			_, err = s.Update(ctx, id, taskgraph.Patch{Subject: ptr(fmt.Sprintf("subject %d", step))})
		case k < 3:
			what = "priority, labels, metadata"
			_, err = s.Update(ctx, id, taskgraph.Patch{Priority: ptr(taskgraph.PriorityLevel(r.IntN(5))),
				Labels: &[]string{"x", fmt.Sprint(step % 3)}, Metadata: map[string]any{"step": step}})
		case k < 4:
			what = "note"
			_, err = s.Note(ctx, id, "agent-3", fmt.Sprintf("note %d", step))
		case k < 7:
			what = "claim"
			if id, ok := pick(taskgraph.StateReady); ok {
				_, err = s.Claim(ctx, id, fmt.Sprintf("agent-%d", r.IntN(3)), taskgraph.WithLease(time.Hour))
			}
		case k < 9:
			what = "release or renew"
			if id, ok := pick(taskgraph.StateInProgress); ok {
				tk, _ := s.Get(ctx, id)
				if r.IntN(2) == 0 {
					_, err = s.Release(ctx, id, tk.Owner)
				} else {
					_, err = s.Renew(ctx, id, tk.Owner, 2*time.Hour)
				}
			}
		case k < 10:
			what = "defer"
			if id, ok := pick(taskgraph.StateReady); ok {
				_, err = s.Update(ctx, id, taskgraph.Patch{NotBefore: ptr(time.Now().Add(time.Hour))})
			}
		case k < 11:
			what = "complete"
			if id, ok := pick(taskgraph.StateInProgress); ok {
				tk, _ := s.Get(ctx, id)
				_, err = s.Complete(ctx, id, tk.Owner)
			}
		case k < 12:
			what = "fail"
			if id, ok := pick(taskgraph.StateInProgress); ok {
				tk, _ := s.Get(ctx, id)
				_, err = s.Fail(ctx, id, tk.Owner, fmt.Sprintf("broke at %d", step))
			}
		case k < 13:
			what = "reopen"
			if id, ok := pick(taskgraph.StateFailed); ok {
				_, err = s.Reopen(ctx, id)
			}
		default:
			what = "edge"
			_, err = s.Update(ctx, id, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{id - 1 - taskgraph.ID(r.IntN(5))}})
		}
		if err != nil {
			continue // a write the rules refuse (a cycle, a task in the wrong state): nothing changed
		}
		before := srv.Nexts()
		if _, err := srv.ApplyChange(ctx, drain(events)...); err != nil {
			t.Fatal(err)
		}
		local += int(srv.Nexts() - before)
		got, want := srv.Current(), fresh(t, s)
		if g, w := normal(t, got), normal(t, want); g != w {
			t.Fatalf("step %d (%s): the board by events differs from the store's:\n got %s\nwant %s", step, what, g, w)
		}
	}
	t.Logf("%d of 300 writes told by their events alone", local)
	if local < 100 {
		t.Errorf("only %d of 300 writes were told by their events: the test no longer tests state.next", local)
	}
}

// drain returns the events the watch has sent, waiting until it has been
// quiet for 20 ms.
func drain(events <-chan taskgraph.Event) []taskgraph.Event {
	var out []taskgraph.Event
	for {
		select {
		case ev := <-events:
			out = append(out, ev)
		case <-time.After(20 * time.Millisecond):
			return out
		}
	}
}

// fresh is the board a new server makes from the store.
func fresh(t *testing.T, s taskgraph.Store) board.Snapshot {
	t.Helper()
	srv := board.New(s)
	defer srv.Close()
	snap, err := srv.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// leaseText is the part of a why that tells a lease's time left, which
// the page is told when the blocker changes and not every second.
var leaseText = regexp.MustCompile(`lease [0-9hms.]+ left`)

// normal is the snapshot as JSON without its version, its clock and the
// time left on leases in whys.
func normal(t *testing.T, s board.Snapshot) string {
	t.Helper()
	s.Version, s.Now = 0, time.Time{}
	for i := range s.Tasks {
		s.Tasks[i].Why = leaseText.ReplaceAllString(s.Tasks[i].Why, "lease … left")
	}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

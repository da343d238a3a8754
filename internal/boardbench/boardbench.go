// Package boardbench measures what one change to a task costs the board
// server of taskgraph serve — by the store watch's event, as the server
// does, and with its state made anew from the store, as it did before —
// on one fixture: the board's BenchmarkChange and go run ./bench share
// it, so that both measure the same thing.
package boardbench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/board"
)

// Tasks returns a project of n tasks (n ≥ 64), as a team would have it
// part way through: the first 60% completed, every 97th of those failed,
// nine in progress, the rest ready or blocked (and task n-30 failed,
// stranding what waits on it), each with a label, a priority and a short
// description. Each task from the 17th to the (n-21)th waits on up to two
// of the twelve before it; task n-11 is in progress, and the last ten
// tasks wait on it alone, so that completing it readies exactly them.
func Tasks(n int) []taskgraph.Task {
	r := rand.New(rand.NewPCG(7, 11))
	areas := []string{"backend", "frontend", "ops", "docs", "data"}
	now := time.Now().UTC().Add(-time.Hour)
	tasks := make([]taskgraph.Task, 0, n)
	done := n * 6 / 10
	for i := 1; i <= n; i++ {
		t := taskgraph.Task{
			ID:          taskgraph.ID(i),
			Subject:     fmt.Sprintf("Task number %d of the project", i),
			Description: "Some words that say what is to be done, and how, and why it matters to the rest.",
			Status:      taskgraph.Pending,
			Priority:    taskgraph.PriorityLevel(r.IntN(5)),
			Labels:      []string{areas[r.IntN(len(areas))]},
			CreatedAt:   now, UpdatedAt: now, Rev: 1,
		}
		if i > 16 && i < n-20 {
			for range 2 {
				b := taskgraph.ID(max(1, i-1-r.IntN(12)))
				if r.IntN(3) > 0 && !containsID(t.BlockedBy, b) {
					t.BlockedBy = append(t.BlockedBy, b)
				}
			}
		}
		if i > n-11 {
			t.BlockedBy = []taskgraph.ID{taskgraph.ID(n - 11)}
		}
		switch {
		case i <= done && i%97 == 0, i == n-30:
			t.Status, t.Owner, t.Reason = taskgraph.Failed, "agent-1", "flaky test in CI"
		case i <= done:
			t.Status, t.Owner, t.Result = taskgraph.Completed, "agent-2", "done and merged"
		case i == n-11 || (i > done && i <= done+8):
			if i > done {
				t.BlockedBy = nil
			}
			t.Status, t.Owner, t.ClaimedAt = taskgraph.InProgress, fmt.Sprintf("agent-%d", i%8), now
		}
		tasks = append(tasks, t)
	}
	return tasks
}

func containsID(ids []taskgraph.ID, id taskgraph.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Change is a board server of a MemStore holding Tasks(n), with a watch
// of the store, whose state is made: each change renames one blocked
// task (n-5), whose event the watch reports.
type Change struct {
	Store  *taskgraph.MemStore // the project
	Server *board.Server       // a server of Store, no page connected
	events <-chan taskgraph.Event
	stop   context.CancelFunc
	id     taskgraph.ID
	i      int
}

// New returns a Change of n tasks (n ≥ 64), its server's first state
// made.
func New(n int) (*Change, error) {
	s := taskgraph.NewMemStore()
	ctx, stop := context.WithCancel(context.Background())
	c := &Change{Store: s, Server: board.New(s), stop: stop, id: taskgraph.ID(n - 5)}
	err := s.Load(ctx, Tasks(n))
	if err == nil {
		c.events, err = s.Watch(ctx)
	}
	if err == nil {
		_, err = c.Server.ApplyChange(ctx)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close ends the watch and the server.
func (c *Change) Close() {
	c.stop()
	c.Server.Close()
	c.Store.Close()
}

// Event returns the watch's next event that is not an Unblocked one, or
// an error if none comes within 10 s.
func (c *Change) Event() (taskgraph.Event, error) {
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return ev, errors.New("boardbench: the store's watch ended")
			}
			if ev.Kind != taskgraph.Unblocked {
				return ev, nil
			}
		case <-timeout:
			return taskgraph.Event{}, errors.New("boardbench: no event within 10 s")
		}
	}
}

// touch renames the blocked task and returns its event.
func (c *Change) touch(ctx context.Context) (taskgraph.Event, error) {
	c.i++
	subject := fmt.Sprintf("renamed %d", c.i)
	if _, err := c.Store.Update(ctx, c.id, taskgraph.Patch{Subject: &subject}); err != nil {
		return taskgraph.Event{}, err
	}
	return c.Event()
}

// ByEvent makes one change and brings the server up to date by its
// event, as the server does; it returns the size of the Change event its
// pages are sent.
func (c *Change) ByEvent(ctx context.Context) (int, error) {
	ev, err := c.touch(ctx)
	if err != nil {
		return 0, err
	}
	return c.Server.ApplyChange(ctx, ev)
}

// Anew makes one change and brings the server up to date with its state
// made anew from the store, as the server did before; it returns the
// size of the Change event its pages are sent.
func (c *Change) Anew(ctx context.Context) (int, error) {
	if _, err := c.touch(ctx); err != nil {
		return 0, err
	}
	return c.Server.ApplyChange(ctx)
}

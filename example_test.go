package taskgraph_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/taskgraph-dev/taskgraph"
)

// The agent loop: claim the next ready task, do it, complete it, and learn
// what became ready.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	store, err := taskgraph.Open(filepath.Join(dir, ".tasks"))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	schema, _ := store.Create(ctx, taskgraph.NewTask{Subject: "setup database schema"})
	store.Create(ctx, taskgraph.NewTask{Subject: "create API endpoints", BlockedBy: []taskgraph.ID{schema.ID}})
	store.Create(ctx, taskgraph.NewTask{Subject: "write docs", BlockedBy: []taskgraph.ID{schema.ID}})

	for {
		task, err := store.ClaimNext(ctx, "agent-1")
		if errors.Is(err, taskgraph.ErrNoReady) {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		// ... do the work ...
		done, err := store.Complete(ctx, task.ID, "agent-1")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("#%d %s done, unblocked %d\n", task.ID, task.Subject, len(done.Unblocked))
	}
	// Output:
	// #1 setup database schema done, unblocked 2
	// #2 create API endpoints done, unblocked 0
	// #3 write docs done, unblocked 0
}

// Edges that would close a cycle are refused, naming the cycle.
func ExampleCycleError() {
	ctx := context.Background()
	store := taskgraph.NewMemStore()
	parse, _ := store.Create(ctx, taskgraph.NewTask{Subject: "parse"})
	emit, _ := store.Create(ctx, taskgraph.NewTask{Subject: "emit", BlockedBy: []taskgraph.ID{parse.ID}})

	_, err := store.Update(ctx, parse.ID, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{emit.ID}})
	var cycle *taskgraph.CycleError
	if errors.As(err, &cycle) {
		fmt.Println(err, cycle.Path)
	}
	// Output: dependency cycle 1 -> 2 -> 1 [1 2 1]
}

// Resolve is pure: it answers what can run now for any slice of tasks.
func ExampleResolve() {
	board := taskgraph.Resolve([]taskgraph.Task{
		{ID: 1, Subject: "parse", Status: taskgraph.Completed},
		{ID: 2, Subject: "transform", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{1}},
		{ID: 3, Subject: "emit", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{1}},
		{ID: 4, Subject: "test", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{2, 3, 9}},
	})
	for _, t := range board.Ready {
		fmt.Println("ready:", t.ID, t.Subject)
	}
	for _, t := range board.Blocked {
		fmt.Println("blocked:", t.ID, t.Subject, "missing:", board.Missing[t.ID])
	}
	// Output:
	// ready: 2 transform
	// ready: 3 emit
	// blocked: 4 test missing: [9]
}

func ExampleTopoOrder() {
	order, _ := taskgraph.TopoOrder([]taskgraph.Task{
		{ID: 1, Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{3}},
		{ID: 2, Status: taskgraph.Pending},
		{ID: 3, Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{2}},
	})
	fmt.Println(order)
	// Output: [2 3 1]
}

// Work is the agent loop in one call: it returns when the graph is finished.
func ExampleWork() {
	ctx := context.Background()
	store := taskgraph.NewMemStore()
	schema, _ := store.Create(ctx, taskgraph.NewTask{Subject: "setup database schema"})
	store.Create(ctx, taskgraph.NewTask{Subject: "create API endpoints", BlockedBy: []taskgraph.ID{schema.ID}})

	err := taskgraph.Work(ctx, store, "agent-1", func(ctx context.Context, t taskgraph.Task) error {
		fmt.Println("working on", t.Subject)
		return nil
	})
	fmt.Println("finished:", err == nil)
	// Output:
	// working on setup database schema
	// working on create API endpoints
	// finished: true
}

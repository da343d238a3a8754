// Multiagent: a planner writes a 12-task plan with dependencies, then four
// worker processes share it, each running taskgraph.Work: claim with a
// lease (a worker that dies does not hold its task forever), work, complete. The
// output shows every task done exactly once, never before its blockers.
package main

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

var plan = []struct {
	subject string
	after   []taskgraph.ID
}{
	{"design the schema", nil},                     // 1
	{"write the migration", []taskgraph.ID{1}},     // 2
	{"model: users", []taskgraph.ID{2}},            // 3
	{"model: orders", []taskgraph.ID{2}},           // 4
	{"model: invoices", []taskgraph.ID{2}},         // 5
	{"API: users", []taskgraph.ID{3}},              // 6
	{"API: orders", []taskgraph.ID{4, 3}},          // 7
	{"API: invoices", []taskgraph.ID{5, 4}},        // 8
	{"write the docs", []taskgraph.ID{6, 7, 8}},    // 9
	{"integration tests", []taskgraph.ID{6, 7, 8}}, // 10
	{"load test", []taskgraph.ID{10}},              // 11
	{"release", []taskgraph.ID{9, 10, 11}},         // 12
}

func main() {
	if len(os.Args) == 3 && os.Args[1] == "worker" {
		worker(os.Args[2])
		return
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "taskgraph-multiagent-") // the task directory all share
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	store, err := taskgraph.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	for _, p := range plan {
		if _, err := store.Create(ctx, taskgraph.NewTask{Subject: p.subject, BlockedBy: p.after}); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("planner: %d tasks in %s\n", len(plan), dir)

	// Four workers, each its own process, sharing the directory.
	var mu sync.Mutex
	doneBy := map[string]string{}
	var order []string
	var wg sync.WaitGroup
	for w := 1; w <= 4; w++ {
		cmd := exec.Command(os.Args[0], "worker", dir)
		cmd.Env = append(os.Environ(), fmt.Sprintf("WORKER=worker-%d", w))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			log.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		wg.Go(func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				fmt.Println(sc.Text())
				if who, task, ok := strings.Cut(sc.Text(), " did "); ok {
					mu.Lock()
					if prev, dup := doneBy[task]; dup {
						log.Fatalf("%s was done twice, by %s and %s", task, prev, who)
					}
					doneBy[task] = who
					order = append(order, task)
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				log.Fatal(err)
			}
		})
	}
	wg.Wait()

	board, err := store.Board(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\nfinal board: %d completed, %d in progress, %d ready, %d blocked\n",
		len(board.Completed), len(board.InProgress), len(board.Ready), len(board.Blocked))
	per := map[string]int{}
	for _, who := range doneBy {
		per[who]++
	}
	for _, who := range slices.Sorted(maps.Keys(per)) {
		fmt.Printf("  %s did %d\n", who, per[who])
	}
	if len(doneBy) != len(plan) || len(board.Completed) != len(plan) {
		log.Fatalf("expected all %d tasks completed exactly once, got %d", len(plan), len(doneBy))
	}
	fmt.Println("every task was done exactly once, each after its blockers")
}

// worker does ready tasks until the plan is finished: taskgraph.Work claims
// each with a lease, renews it while the work runs, completes it, and waits
// for a change (never polling) when nothing is ready.
func worker(dir string) {
	ctx := context.Background()
	me := os.Getenv("WORKER")
	store, err := taskgraph.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	err = taskgraph.Work(ctx, store, me, func(ctx context.Context, task taskgraph.Task) error {
		// Each blocker must already be completed: check, as a reviewer would.
		for _, b := range task.BlockedBy {
			if bt, err := store.Get(ctx, b); err != nil || bt.Status != taskgraph.Completed {
				return fmt.Errorf("started #%d before its blocker #%d was done", task.ID, b)
			}
		}
		time.Sleep(time.Duration(5+rand.IntN(20)) * time.Millisecond) // the work
		fmt.Printf("%s did #%d %s\n", me, task.ID, task.Subject)
		return nil
	}, taskgraph.WorkLease(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
}

// Quickstart walks the reference scenario: a schema task, API endpoints and
// docs that wait for it, tests that wait for the endpoints. It claims and
// completes each in order, prints what each completion unblocked, then
// reopens the directory to show that everything survived.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/taskgraph-dev/taskgraph"
)

func main() {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "taskgraph-quickstart-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, ".tasks")

	store, err := taskgraph.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	add := func(subject string, blockedBy ...taskgraph.ID) taskgraph.ID {
		t, err := store.Create(ctx, taskgraph.NewTask{Subject: subject, BlockedBy: blockedBy})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("created #%d %s (blocked by %v)\n", t.ID, t.Subject, t.BlockedBy)
		return t.ID
	}
	schema := add("setup database schema")
	endpoints := add("create API endpoints", schema)
	tests := add("write tests", endpoints)
	docs := add("write docs", schema)

	for _, id := range []taskgraph.ID{schema, endpoints, docs, tests} {
		t, err := store.Claim(ctx, id, "agent-1")
		if err != nil {
			log.Fatal(err)
		}
		done, err := store.Complete(ctx, t.ID, "agent-1")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("completed #%d %s", t.ID, t.Subject)
		for i, u := range done.Unblocked {
			sep := ", "
			if i == 0 {
				sep = " -> unblocked "
			}
			fmt.Printf("%s#%d %s", sep, u.ID, u.Subject)
		}
		fmt.Println()
	}
	store.Close()

	// A new process (or the same agent after a crash) sees the same graph.
	again, err := taskgraph.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer again.Close()
	board, err := again.Board(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("reopened %s: %d completed, %d ready, %d blocked\n", filepath.Base(dir), len(board.Completed), len(board.Ready), len(board.Blocked))
	for _, t := range board.Completed {
		fmt.Printf("  [x] #%d: %s (by %s, rev %d)\n", t.ID, t.Subject, t.Owner, t.Rev)
	}
}

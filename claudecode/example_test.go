package claudecode_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/claudecode"
)

// Import moves a Claude Code task list (normally ~/.claude/tasks/<list>/)
// into a store, keeping its ids, statuses, owners and edges, so agents can
// carry on where Claude Code left off.
func ExampleImport() {
	// A two-task list as Claude Code writes it: string ids, and an edge
	// recorded on both sides.
	dir, err := os.MkdirTemp("", "tasklist")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	files := map[string]string{
		"1.json": `{"id": "1", "subject": "Set up database schema", "activeForm": "Setting up database schema",
			"status": "completed", "owner": "main", "blocks": ["2"], "blockedBy": []}`,
		"2.json": `{"id": "2", "subject": "Write API docs", "activeForm": "Writing API docs",
			"status": "pending", "blocks": [], "blockedBy": ["1"]}`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			log.Fatal(err)
		}
	}

	ctx := context.Background()
	store := taskgraph.NewMemStore()
	defer store.Close()
	tasks, err := claudecode.Import(ctx, store, dir)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tasks {
		// activeForm has no taskgraph field, so it is kept as metadata.
		fmt.Printf("#%d %s [%s] blockedBy=%v activeForm=%q\n", t.ID, t.Subject, t.Status, t.BlockedBy, t.Metadata["activeForm"])
	}

	// The imported graph behaves like any other: #1 is done, so #2 is ready.
	board, err := store.Board(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range board.Ready {
		fmt.Println("ready:", t.ID, t.Subject)
	}
	// Output:
	// #1 Set up database schema [completed] blockedBy=[] activeForm="Setting up database schema"
	// #2 Write API docs [pending] blockedBy=[1] activeForm="Writing API docs"
	// ready: 2 Write API docs
}

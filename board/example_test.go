package board_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/board"
)

// A board serves one page and its API; here the API's snapshot of a
// two-task plan. `taskgraph serve` does the same on a real listener.
func ExampleNew() {
	ctx := context.Background()
	store := taskgraph.NewMemStore()
	schema, _ := store.Create(ctx, taskgraph.NewTask{Subject: "setup database schema"})
	store.Create(ctx, taskgraph.NewTask{Subject: "create API endpoints", BlockedBy: []taskgraph.ID{schema.ID}})
	store.Claim(ctx, schema.ID, "agent-1")

	b := board.New(store) // read-only; board.AllowWrites() turns on the page's actions
	defer b.Close()
	srv := httptest.NewServer(b) // or http.ListenAndServe("127.0.0.1:7777", b)
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL + "/api/board")
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var snap board.Snapshot
	json.NewDecoder(resp.Body).Decode(&snap)
	for _, c := range snap.Columns {
		fmt.Printf("%s: %v\n", c.Title, c.IDs)
	}
	fmt.Println("task 2 waits on", snap.Tasks[1].WaitingOn)
	// Output:
	// Ready: []
	// Awaiting approval: []
	// Deferred: []
	// Limited: []
	// Blocked: [2]
	// Stranded: []
	// In progress: [1]
	// Completed: []
	// Failed: []
	// Cancelled: []
	// task 2 waits on [1]
}

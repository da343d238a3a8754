package pgstore_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// Agents on different machines share a graph by opening it by name in one
// database. Not run: it needs a PostgreSQL server, e.g.
// TASKGRAPH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable.
func ExampleOpen() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("TASKGRAPH_POSTGRES_URL"))
	if err != nil {
		log.Fatal(err)
	}
	// The pool is ours: the store's Close leaves it open.
	defer pool.Close()

	// Open applies the schema migrations if needed and creates the graph
	// "release-1.2" if it does not exist yet.
	store, err := pgstore.Open(ctx, pool, "release-1.2")
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	task, err := store.Create(ctx, taskgraph.NewTask{Subject: "setup database schema"})
	if err != nil {
		log.Fatal(err)
	}
	// The database decides who wins: an agent elsewhere claiming the same
	// task at the same time gets an error instead.
	claimed, err := store.Claim(ctx, task.ID, "agent-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("#%d %s: %s by %s\n", claimed.ID, claimed.Subject, claimed.Status, claimed.Owner)
}

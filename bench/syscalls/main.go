// Syscalls is the probe behind scripts/syscalls: it creates -n tasks in a
// fresh directory, then claims and completes each (three durable writes a
// task). scripts/syscalls runs it under strace at two sizes and divides the
// difference, so that opening the store and starting the runtime cancel out.
package main

import (
	"context"
	"flag"
	"log"
	"os"

	"github.com/taskgraph-dev/taskgraph"
)

func main() {
	n := flag.Int("n", 100, "tasks")
	dir := flag.String("dir", "", "an empty directory")
	flag.Parse()
	if *dir == "" {
		log.Fatal("usage: syscalls -dir EMPTY_DIR [-n TASKS]")
	}
	ctx := context.Background()
	s, err := taskgraph.Open(*dir)
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	for range *n {
		if _, err := s.Create(ctx, taskgraph.NewTask{Subject: "x"}); err != nil {
			log.Fatal(err)
		}
	}
	for range *n {
		t, err := s.ClaimNext(ctx, "w")
		if err != nil {
			log.Fatal(err)
		}
		if _, err := s.Complete(ctx, t.ID, "w"); err != nil {
			log.Fatal(err)
		}
	}
	os.Exit(0)
}

package pgstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/claimbench"
)

// BenchmarkClaimNext measures ClaimNext's one-statement claim of a ready
// task, each with a completed blocker, on one connection:
//
//	go test -run '^$' -bench ClaimNext ./pgstore
func BenchmarkClaimNext(b *testing.B) {
	p := pool(b)
	graph := graphName(b)
	s := open(b, p, graph)
	const batch = 5000
	next := taskgraph.ID(1)
	load := func() {
		tasks := []taskgraph.Task{{ID: next, Subject: "done", Status: taskgraph.Completed}}
		for i := 1; i <= batch; i++ {
			tasks = append(tasks, taskgraph.Task{ID: next + taskgraph.ID(i), Subject: "ready", Status: taskgraph.Pending, BlockedBy: []taskgraph.ID{next}})
		}
		require.NoError(b, s.Load(b.Context(), tasks))
		next += batch + 1
	}
	load()
	left := batch
	b.ResetTimer()
	for range b.N {
		if left == 0 {
			b.StopTimer()
			load()
			left = batch
			b.StartTimer()
		}
		_, err := s.ClaimNext(ctx, "w")
		require.NoError(b, err)
		left--
	}
}

// BenchmarkBoard measures Board of a 1,000-task layered graph, a third of
// it completed, each completed task with the history of its claim and
// completion and a note: the read every watcher makes at each wake-up.
//
//	go test -run '^$' -bench Board ./pgstore
func BenchmarkBoard(b *testing.B) {
	p := pool(b)
	s := open(b, p, graphName(b))
	buildLayered(b, s, 1000, 50)
	for range 330 {
		t, err := s.ClaimNext(ctx, "worker")
		require.NoError(b, err)
		_, err = s.Note(ctx, t.ID, "worker", "done: see the log")
		require.NoError(b, err)
		_, err = s.Complete(ctx, t.ID, "worker", taskgraph.WithResult("ok"))
		require.NoError(b, err)
	}
	for b.Loop() {
		_, err := s.Board(ctx)
		require.NoError(b, err)
	}
}

// BenchmarkWorkLayered measures a worker's round, ClaimNext then
// Complete, on a layered graph whose tasks have up to three blockers and
// about three dependents each: the completion locks the dependents and
// reports those it readies.
//
//	go test -run '^$' -bench WorkLayered ./pgstore
func BenchmarkWorkLayered(b *testing.B) {
	p := pool(b)
	s := open(b, p, graphName(b))
	const n = 2000
	buildLayered(b, s, n, 50)
	done := 0
	for b.Loop() {
		if done == n-100 { // keep a full layer ahead
			b.StopTimer()
			s = open(b, p, graphName(b))
			buildLayered(b, s, n, 50)
			done = 0
			b.StartTimer()
		}
		t, err := s.ClaimNext(ctx, "worker")
		require.NoError(b, err)
		_, err = s.Complete(ctx, t.ID, "worker")
		require.NoError(b, err)
		done++
	}
}

// BenchmarkClaimNextAtScale compares, at 100,000 tasks, ClaimNext under a
// limit on a label no task carries, under a reached limit that holds back
// the most urgent tenth of the ready tasks, and WithUnder the last of 10
// epics, with a plain ClaimNext, in one run, as the file store's
// benchmark of the same name does (claimbench):
//
//	go test -run '^$' -bench ClaimNextAtScale -benchtime 40x ./pgstore
func BenchmarkClaimNextAtScale(b *testing.B) {
	s := open(b, pool(b), graphName(b))
	require.NoError(b, s.Load(ctx, claimbench.Tasks(100_000)))
	require.NoError(b, claimbench.Setup(ctx, s))
	claimbench.Bench(b, s)
}

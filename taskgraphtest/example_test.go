package taskgraphtest_test

import (
	"testing"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

// A backend runs the suite from one of its own tests. The test is written
// here as a closure only because an example cannot declare a Test function;
// in a backend's _test.go file it is a plain func TestConformance. It is
// not run: Run needs the *testing.T of a real test.
func ExampleRun() {
	TestConformance := func(t *testing.T) {
		taskgraphtest.Run(t, func(t *testing.T) taskgraph.Store {
			// Every subtest needs a new, empty store, hence a fresh
			// directory each call; Run closes the store.
			s, err := taskgraph.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return s
		})
	}
	_ = TestConformance
}

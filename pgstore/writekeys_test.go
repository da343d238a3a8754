package pgstore_test

import (
	"testing"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

func TestRecallWrites(t *testing.T) {
	p := pool(t)
	taskgraphtest.RecallWrites(t, func(t *testing.T) taskgraph.Store { return open(t, p, graphName(t)) })
}

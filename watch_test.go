package taskgraph_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

// TestWatch sees changes made through another store on the same directory
// (as another process would make them), with inotify and with polling.
func TestWatch(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprint("poll=", poll), func(t *testing.T) {
			var opts []tg.Option
			if poll {
				opts = append(opts, tg.WatchPollOnly())
			}
			dir := t.TempDir()
			watcher, err := tg.Open(dir, opts...)
			require.NoError(t, err)
			defer watcher.Close()
			other, err := tg.Open(dir)
			require.NoError(t, err)
			defer other.Close()
			taskgraphtest.Watch(t, watcher, other)
		})
	}
}

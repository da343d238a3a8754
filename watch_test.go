package taskgraph

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatch sees changes made through another store on the same directory
// (as another process would make them), with inotify and with polling.
func TestWatch(t *testing.T) {
	for _, poll := range []bool{false, true} {
		t.Run(fmt.Sprint("poll=", poll), func(t *testing.T) {
			watchPollOnly = poll
			defer func() { watchPollOnly = false }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			dir := t.TempDir()
			watcher, err := Open(dir)
			require.NoError(t, err)
			defer watcher.Close()
			other, err := Open(dir)
			require.NoError(t, err)
			defer other.Close()

			events, err := watcher.Watch(ctx)
			require.NoError(t, err)
			// expect waits for the next events, in order, as "kind id".
			expect := func(want ...string) {
				t.Helper()
				for _, w := range want {
					select {
					case e := <-events:
						require.Equal(t, w, fmt.Sprint(e.Kind, " ", e.Task.ID))
					case <-ctx.Done():
						t.Fatalf("no event; wanted %s", w)
					}
				}
			}
			a, err := other.Create(ctx, NewTask{Subject: "a"})
			require.NoError(t, err)
			expect("created 1", "unblocked 1")
			_, err = other.Create(ctx, NewTask{Subject: "b", BlockedBy: []ID{a.ID}})
			require.NoError(t, err)
			expect("created 2")
			_, err = other.Claim(ctx, a.ID, "x")
			require.NoError(t, err)
			expect("updated 1")
			_, err = other.Complete(ctx, a.ID, "x")
			require.NoError(t, err)
			expect("updated 1", "unblocked 2")
			require.NoError(t, other.Delete(ctx, 2))
			expect("deleted 2")
			cancel()
			for range events {
			}
		})
	}
}

// What one change costs the server: for the board's benchmark and go run
// ./bench, which measure it the same way.

package board

import (
	"context"

	"github.com/taskgraph-dev/taskgraph"
)

// ApplyChange brings the server's state up to date after a change to its
// store, as the server does by itself once per change for all its pages,
// and returns the size in bytes of the Change event every page is then
// sent (0 if nothing a page shows changed). Given the store watch's
// events of the change, it makes the state from the one before by them,
// at a cost that follows what they touch; given none, it makes the state
// anew from the store and diffs it with the one before, as the server did
// before it applied events (issue 39, item 5). Its first call makes the
// first state. It is for measuring what a change costs the server, on a
// server no page is connected to: one whose pages are connected applies
// its own watch's events.
func (s *Server) ApplyChange(ctx context.Context, events ...taskgraph.Event) (int, error) {
	for _, ev := range events {
		s.hub.queue(ev)
	}
	s.hub.stale.Store(true)
	before := s.hub.cur.Load()
	st, err := s.hub.refresh(ctx)
	if err != nil || st == before {
		return 0, err
	}
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	if before == nil || len(s.hub.recent) == 0 {
		return 0, nil // the first state: no change
	}
	return len(s.hub.recent[len(s.hub.recent)-1].data), nil
}

// Notes: a write of one task that anyone may make, whatever its status.

package pgstore

import (
	"context"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

var _ taskgraph.Noter = (*Store)(nil)

// Note implements taskgraph.Noter.
func (s *Store) Note(ctx context.Context, id taskgraph.ID, author, text string) (taskgraph.Task, error) {
	return s.holderWrite(ctx, func() error { return taskgraph.Rules.NoteArgs(author, text) }, id, func(t *taskgraph.Task, now time.Time) error {
		return taskgraph.Rules.Note(t, author, text, now)
	})
}

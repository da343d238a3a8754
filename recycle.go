// Recycled task files: under the full protocol on Linux, the version a
// write replaces is kept as a spare and a later write fills it instead of
// creating a file. Why, and why it is safe: internal/cachedir/spares.go.
// Here, what the store decides: which write's old version becomes a spare.

package taskgraph

import "github.com/taskgraph-dev/taskgraph/internal/journal"

// linkReplaced keeps the version the single-file write j is about to
// replace as a spare, under the lock and before the rename. It reports
// false if it did not (and holdReplaced may hold it instead). A deletion
// keeps nothing: it is how a full disk gets space back.
func (s *FileStore) linkReplaced(j *journal.Journal) bool {
	id, ok := s.replacedTask(j)
	if !ok || len(j.Del) > 0 {
		return false
	}
	return s.spares.Link(s.dirf, taskFileName(id))
}

// replacedTask returns the task whose file the single-file write j
// replaces or removes; a write of several files, or of a new task, replaces
// none.
func (s *FileStore) replacedTask(j *journal.Journal) (ID, bool) {
	if len(j.Put)+len(j.Del) != 1 {
		return 0, false
	}
	var id ID
	for k := range j.Put {
		id = ID(k)
	}
	for _, k := range j.Del {
		id = ID(k)
	}
	_, exists := s.stamps[id]
	return id, exists
}

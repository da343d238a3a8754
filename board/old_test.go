package board

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// oldSnapshot is Snapshot as it was before the board kept a shared state
// and sent changes (commit e832134), for BenchmarkChange to compare with.
func (s *Server) oldSnapshot(ctx context.Context) (Snapshot, error) {
	b, err := s.store.Board(ctx)
	var problem string
	if err != nil {
		if !errors.Is(err, taskgraph.ErrCorrupt) {
			return Snapshot{}, err
		}
		problem = err.Error() // the readable tasks are still on the board
	}
	if p := s.watchProblem.Load(); p != nil {
		problem = strings.TrimPrefix(problem+"; "+*p, "; ")
	}
	now := time.Now().UTC()
	snap := Snapshot{
		Version: 0, Now: now, Title: s.cfg.title, Writes: s.cfg.writes,
		Columns: make([]Column, 0, len(columns)), Problem: problem,
	}
	status := map[taskgraph.ID]taskgraph.Status{}
	n := 0
	for _, c := range columns {
		for _, t := range c.tasks(&b) {
			status[t.ID] = t.Status
			n++
		}
	}
	all := make([]taskgraph.Task, 0, n)
	for _, c := range columns {
		all = append(all, c.tasks(&b)...)
	}
	ex := oldNewExplainer(all, b.StrandedBy, now)
	walk := oldNewStrandWalk(all, b.StrandedBy)
	snap.Tasks = make([]TaskView, 0, n)
	for _, c := range columns {
		col := Column{Key: c.key, Title: c.title, IDs: []taskgraph.ID{}}
		for _, t := range c.tasks(&b) {
			col.IDs = append(col.IDs, t.ID)
			v := view(t, c.key, status, now)
			if c.key == taskgraph.StateBlocked || c.key == taskgraph.StateStranded {
				v.StrandedBy = b.StrandedBy[t.ID]
				v.Why = ex.why(t)
			}
			if c.key == taskgraph.StateFailed || c.key == taskgraph.StateCancelled {
				v.Strands = walk.from(t)
			}
			snap.Tasks = append(snap.Tasks, v)
		}
		snap.Columns = append(snap.Columns, col)
	}
	slices.SortFunc(snap.Tasks, func(a, b TaskView) int { return cmp.Compare(a.ID, b.ID) })
	if path, err := taskgraph.CriticalPath(all); err == nil {
		snap.CriticalPath = path
	}
	snap.CriticalPath = nonNil(snap.CriticalPath)
	return snap, nil
}

// explainer gives taskgraph.Explain's text for the tasks that are not
// ready. Explain is linear in the tasks it is given, and a snapshot
// explains every blocked and stranded task, so each is explained over
// only what its answer depends on: the task, its blockers, and for each
// blocker that is itself stranded, the task that strands it, given to
// Explain as that blocker's one blocker. The cause of a stranded task is
// the lowest failed or cancelled task that reaches it, which is the
// lowest of its failed or cancelled blockers and of the causes of its
// stranded blockers, so the text is the one Explain gives over the whole
// graph (TestWhyIsExplain checks it) and a snapshot stays linear.
type oldExplainer struct {
	byID       map[taskgraph.ID]*taskgraph.Task
	strandedBy map[taskgraph.ID]taskgraph.ID
	now        time.Time
	sub        []taskgraph.Task // reused from one task to the next
	in         map[taskgraph.ID]bool
}

func oldNewExplainer(all []taskgraph.Task, strandedBy map[taskgraph.ID]taskgraph.ID, now time.Time) *oldExplainer {
	byID := make(map[taskgraph.ID]*taskgraph.Task, len(all))
	for i := range all {
		byID[all[i].ID] = &all[i]
	}
	return &oldExplainer{byID: byID, strandedBy: strandedBy, now: now, in: map[taskgraph.ID]bool{}}
}

func (x *oldExplainer) why(t taskgraph.Task) string {
	sub := append(x.sub[:0], t)
	clear(x.in)
	x.in[t.ID] = true
	add := func(id, blocker taskgraph.ID) {
		if bt := x.byID[id]; bt != nil && !x.in[id] {
			x.in[id] = true
			c := *bt
			c.BlockedBy, c.Blocks = nil, nil
			if blocker != 0 {
				c.BlockedBy = []taskgraph.ID{blocker}
			}
			sub = append(sub, c)
		}
	}
	for _, b := range t.BlockedBy {
		cause := x.strandedBy[b]
		add(b, cause)
		if cause != 0 {
			add(cause, 0)
		}
	}
	x.sub = sub
	e, err := taskgraph.Explain(sub, t.ID, x.now)
	if err != nil {
		return ""
	}
	return e.Text
}

// strandWalk finds what a failed or cancelled task strands: the stranded
// tasks reachable from it along Blocks through stranded tasks only. Each
// walk visits only the tasks it returns, so a snapshot whose causes
// strand disjoint sets of tasks stays linear; a task stranded by several
// causes is visited once per cause.
type oldStrandWalk struct {
	byID     map[taskgraph.ID]*taskgraph.Task
	stranded map[taskgraph.ID]taskgraph.ID // Board.StrandedBy: the stranded tasks
	seen     map[taskgraph.ID]bool         // reused from one walk to the next
}

func oldNewStrandWalk(all []taskgraph.Task, strandedBy map[taskgraph.ID]taskgraph.ID) *oldStrandWalk {
	w := &oldStrandWalk{stranded: strandedBy, seen: map[taskgraph.ID]bool{}}
	if len(strandedBy) > 0 {
		w.byID = make(map[taskgraph.ID]*taskgraph.Task, len(strandedBy))
		for i := range all {
			if _, ok := strandedBy[all[i].ID]; ok {
				w.byID[all[i].ID] = &all[i]
			}
		}
	}
	return w
}

// from returns the ids of the tasks cause strands, sorted, or nil.
func (w *oldStrandWalk) from(cause taskgraph.Task) []taskgraph.ID {
	if len(w.stranded) == 0 {
		return nil
	}
	clear(w.seen)
	var out []taskgraph.ID
	next := cause.Blocks
	for len(next) > 0 {
		var more []taskgraph.ID
		for _, id := range next {
			t := w.byID[id]
			if t == nil || w.seen[id] {
				continue
			}
			w.seen[id] = true
			out = append(out, id)
			more = append(more, t.Blocks...)
		}
		next = more
	}
	slices.Sort(out)
	return out
}

// OldSnapshotJSON makes and encodes a snapshot as every page was sent one
// per change before: for BenchmarkChange.
func (s *Server) OldSnapshotJSON(ctx context.Context) ([]byte, error) {
	snap, err := s.oldSnapshot(ctx)
	if err != nil {
		return nil, err
	}
	return json.Marshal(snap)
}

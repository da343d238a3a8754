// The board's shared state: computed once per change for every page, kept
// between changes so that the next one can be told as a difference.

package board

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// state is the board at one version: the tasks the store returned, what
// the page derives from each, the columns and the critical path. It is
// immutable once made, and shared by every page and request.
type state struct {
	version int64
	now     time.Time
	problem string
	board   taskgraph.Board
	refs    []ref     // every task, by id
	d       []derived // of the tasks that have any (derivedOf)
	di      []int32   // parallel to refs: 1 + the task's index in d, or 0
	cols    [][]taskgraph.ID
	path    []taskgraph.ID

	fullOnce sync.Once
	full     [][]byte // the Snapshot as JSON, made on first use
}

// ref places a task in its column's list of the Board.
type ref struct {
	col int32 // index into columns
	i   int32
}

// derived is what the page is told about a task beyond the task itself.
type derived struct {
	why        string
	waitingOn  []taskgraph.ID
	strandedBy taskgraph.ID
	lapsed     bool
	rare       *rareDerived // nil while both are empty: few tasks have them
}

// rareDerived is what few tasks have derived: blockers that do not exist,
// and the tasks that a failed or cancelled one strands.
type rareDerived struct{ missing, strands []taskgraph.ID }

func (d *derived) missing() []taskgraph.ID {
	if d.rare == nil {
		return nil
	}
	return d.rare.missing
}

func (d *derived) strands() []taskgraph.ID {
	if d.rare == nil {
		return nil
	}
	return d.rare.strands
}

// more returns d.rare, made if it is nil.
func (d *derived) more() *rareDerived {
	if d.rare == nil {
		d.rare = &rareDerived{}
	}
	return d.rare
}

func (st *state) task(i int) *taskgraph.Task {
	r := st.refs[i]
	return &columns[r.col].tasks(&st.board)[r.i]
}

// find returns the index of the task id, or -1.
func (st *state) find(id taskgraph.ID) int {
	i, ok := slices.BinarySearchFunc(st.refs, id, func(r ref, id taskgraph.ID) int {
		return cmp.Compare(columns[r.col].tasks(&st.board)[r.i].ID, id)
	})
	if !ok {
		return -1
	}
	return i
}

// newState reads the store and derives everything the page shows.
func (s *Server) newState(ctx context.Context) (*state, error) {
	b, err := s.store.Board(ctx)
	var problem string
	if err != nil {
		if !errors.Is(err, taskgraph.ErrCorrupt) {
			return nil, err
		}
		problem = err.Error() // the readable tasks are still on the board
	}
	if p := s.watchProblem.Load(); p != nil {
		problem = strings.TrimPrefix(problem+"; "+*p, "; ")
	}
	st := &state{now: time.Now().UTC(), problem: problem, board: b}
	// Ready is in claim order (priority, then creation, then id), every other column by
	// id: the page keeps its columns in that order as tasks change, so
	// the server makes sure of it whatever the store returned.
	slices.SortStableFunc(b.Ready, func(x, y taskgraph.Task) int {
		return cmp.Or(cmp.Compare(x.Priority, y.Priority), cmp.Compare(x.ID, y.ID))
	})
	n := 0
	st.cols = make([][]taskgraph.ID, len(columns))
	for c := range columns {
		list := columns[c].tasks(&st.board)
		if c != 0 && !slices.IsSortedFunc(list, byID) {
			slices.SortFunc(list, byID)
		}
		n += len(list)
	}
	ids := make([]taskgraph.ID, 0, n) // the columns' ids, cut into them
	st.refs = make([]ref, 0, n)
	for c := range columns {
		start := len(ids)
		for i, t := range columns[c].tasks(&st.board) {
			ids = append(ids, t.ID)
			st.refs = append(st.refs, ref{int32(c), int32(i)})
		}
		st.cols[c] = ids[start:len(ids):len(ids)]
	}
	slices.SortFunc(st.refs, func(x, y ref) int {
		return cmp.Compare(columns[x.col].tasks(&st.board)[x.i].ID, columns[y.col].tasks(&st.board)[y.i].ID)
	})
	st.derive()
	st.path = st.criticalPath()
	return st, nil
}

func byID(x, y taskgraph.Task) int { return cmp.Compare(x.ID, y.ID) }

// derivedOf returns what is derived of task i. Read only: a task with
// nothing derived shares one empty value.
func (st *state) derivedOf(i int) *derived {
	if k := st.di[i]; k > 0 {
		return &st.d[k-1]
	}
	return &nothingDerived
}

var nothingDerived derived

// empty reports whether nothing is derived.
func (d *derived) empty() bool {
	return d.why == "" && len(d.waitingOn) == 0 && d.rare == nil && d.strandedBy == 0 && !d.lapsed
}

// derive fills st.d and st.di. Only a task in progress (a lapsed lease), a
// blocked or stranded one (what it waits on, and why) and a failed or
// cancelled one (what it strands) can have something derived; the rest of
// a big graph, completed or ready, has nothing, and st.d keeps no room
// for it (the first snapshot of 100,000 tasks allocated 10 MB for a
// derived value per task, mostly empty).
func (st *state) derive() {
	st.di = make([]int32, len(st.refs))
	n := 0
	for _, r := range st.refs {
		switch columns[r.col].key {
		case taskgraph.StateInProgress, taskgraph.StateBlocked, taskgraph.StateStranded, taskgraph.StateFailed, taskgraph.StateCancelled:
			n++
		}
	}
	st.d = make([]derived, 0, n)
	walk := newStrandWalk(st.board.StrandedBy, func(id taskgraph.ID) *taskgraph.Task {
		if i := st.find(id); i >= 0 {
			return st.task(i)
		}
		return nil
	})
	var buf []byte
	for i, r := range st.refs {
		t, d := st.task(i), &derived{}
		key := columns[r.col].key
		if t.Status == taskgraph.InProgress && !t.LeaseExpiresAt.IsZero() && !st.now.Before(t.LeaseExpiresAt) {
			d.lapsed = true
		}
		if t.Status == taskgraph.Pending {
			for _, b := range t.BlockedBy {
				j := st.find(b)
				if j < 0 || st.task(j).Status != taskgraph.Completed {
					d.waitingOn = append(d.waitingOn, b)
					if j < 0 {
						d.more().missing = append(d.more().missing, b)
					}
				}
			}
		}
		switch key {
		case taskgraph.StateBlocked, taskgraph.StateStranded:
			d.strandedBy = st.board.StrandedBy[t.ID]
			buf = st.why(buf[:0], t)
			d.why = string(buf)
		case taskgraph.StateFailed, taskgraph.StateCancelled:
			if strands := walk.from(*t); len(strands) > 0 {
				d.more().strands = strands
			}
		}
		if !d.empty() {
			st.d = append(st.d, *d)
			st.di[i] = int32(len(st.d))
		}
	}
}

// why appends taskgraph.Explain's text for a blocked or stranded task,
// from what the board already knows (taskgraph.AppendWhyNotReady).
func (st *state) why(b []byte, t *taskgraph.Task) []byte {
	return taskgraph.AppendWhyNotReady(b, t, func(id taskgraph.ID) *taskgraph.Task {
		if j := st.find(id); j >= 0 {
			return st.task(j)
		}
		return nil
	}, func(id taskgraph.ID) taskgraph.ID { return st.board.StrandedBy[id] }, st.now)
}

// criticalPath is taskgraph.CriticalPath of the board's tasks, computed
// over the board's own index (CriticalPath indexes the tasks it is given
// anew, which over 100,000 tasks allocates more than the whole snapshot):
// the longest chain of unfinished tasks that can start, each blocked by
// the one before, ending at the lowest id among the longest, each step
// taking the lowest of the blockers that give the longest chain. It is
// empty when nothing is unfinished or the unfinished tasks form a cycle.
func (st *state) criticalPath() []taskgraph.ID {
	n := len(st.refs)
	unfinished := func(i int) bool {
		s := st.task(i).Status
		return s == taskgraph.Pending || s == taskgraph.InProgress
	}
	indeg := make([]int32, n)
	depth := make([]int32, n) // 0: none (finished, stuck, or not reached)
	prev := make([]int32, n)  // index of the blocker before on the chain, or -1
	stuck := make([]bool, n)
	var queue []int32
	total := 0
	for i := range n {
		if !unfinished(i) {
			continue
		}
		total++
		for _, b := range st.task(i).BlockedBy {
			j := st.find(b)
			switch {
			case j < 0, st.task(j).Status == taskgraph.Failed, st.task(j).Status == taskgraph.Cancelled:
				stuck[i] = true
			case unfinished(j):
				indeg[i]++
			}
		}
		if indeg[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	visited := 0
	for len(queue) > 0 {
		i := int(queue[0])
		queue = queue[1:]
		visited++
		t := st.task(i)
		if !stuck[i] {
			depth[i], prev[i] = 1, -1
			var best taskgraph.ID
			for _, b := range t.BlockedBy {
				j := st.find(b)
				if j < 0 || depth[j] == 0 {
					continue
				}
				if depth[j]+1 > depth[i] || depth[j]+1 == depth[i] && b < best {
					depth[i], prev[i], best = depth[j]+1, int32(j), b
				}
			}
		}
		for _, dep := range t.Blocks {
			j := st.find(dep)
			if j < 0 || !unfinished(j) {
				continue
			}
			if stuck[i] {
				stuck[j] = true
			}
			if indeg[j]--; indeg[j] == 0 {
				queue = append(queue, int32(j))
			}
		}
	}
	if visited < total {
		return []taskgraph.ID{} // a cycle
	}
	end := -1
	for i := range n {
		if depth[i] > 0 && (end < 0 || depth[i] > depth[end]) {
			end = i // by id, so the first of the longest is the lowest
		}
	}
	var path []taskgraph.ID
	for i := end; i >= 0; i = int(prev[i]) {
		path = append(path, st.task(i).ID)
	}
	slices.Reverse(path)
	return nonNil(path)
}

// view returns the task at index i as the page is sent it.
func (st *state) view(i int) TaskView {
	t, d := st.task(i), st.derivedOf(i)
	v := view(*t, columns[st.refs[i].col].key, nil, st.now)
	v.LeaseLapsed = d.lapsed
	v.WaitingOn, v.Missing, v.StrandedBy, v.Strands, v.Why = d.waitingOn, d.missing(), d.strandedBy, d.strands(), d.why
	return v
}

// snapshot returns the state as a Snapshot.
func (st *state) snapshot(s *Server) Snapshot {
	snap := Snapshot{
		Version: st.version, Now: st.now, Title: s.cfg.title, Writes: s.cfg.writes, Problem: st.problem,
		Columns: make([]Column, len(columns)), Tasks: make([]TaskView, len(st.refs)), CriticalPath: st.path,
	}
	for c, col := range columns {
		snap.Columns[c] = Column{Key: col.key, Title: col.title, IDs: st.cols[c]}
	}
	for i := range st.refs {
		snap.Tasks[i] = st.view(i)
	}
	return snap
}

// same reports whether task i of st and task j of o are shown alike.
func same(st *state, i int, o *state, j int) bool {
	if st.refs[i].col != o.refs[j].col {
		return false
	}
	a, b := st.task(i), o.task(j)
	da, db := st.derivedOf(i), o.derivedOf(j)
	return a.ID == b.ID && a.Rev == b.Rev && a.Subject == b.Subject && a.Description == b.Description &&
		a.Status == b.Status && a.Owner == b.Owner && a.Priority == b.Priority && a.Key == b.Key &&
		a.Reason == b.Reason && a.Result == b.Result && a.PrevOwner == b.PrevOwner &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) && a.ClaimedAt.Equal(b.ClaimedAt) &&
		a.LeaseExpiresAt.Equal(b.LeaseExpiresAt) && slices.Equal(a.Labels, b.Labels) &&
		slices.Equal(a.BlockedBy, b.BlockedBy) && slices.Equal(a.Blocks, b.Blocks) && sameMetadata(a.Metadata, b.Metadata) &&
		da.lapsed == db.lapsed && da.strandedBy == db.strandedBy && da.why == db.why &&
		slices.Equal(da.waitingOn, db.waitingOn) && slices.Equal(da.missing(), db.missing()) && slices.Equal(da.strands(), db.strands())
}

// sameMetadata compares two tasks' metadata by their JSON: what the page
// is sent.
func sameMetadata(a, b map[string]any) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	x, err1 := appendJSON(nil, a)
	y, err2 := appendJSON(nil, b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// diff returns the indexes in st of the tasks whose view changed since
// old (new tasks included) and the ids of the tasks old had and st has
// not: one walk over both, which are by id.
func (st *state) diff(old *state) (changed []int, removed []taskgraph.ID) {
	i, j := 0, 0
	for i < len(st.refs) || j < len(old.refs) {
		switch {
		case j == len(old.refs) || i < len(st.refs) && st.task(i).ID < old.task(j).ID:
			changed = append(changed, i)
			i++
		case i == len(st.refs) || old.task(j).ID < st.task(i).ID:
			removed = append(removed, old.task(j).ID)
			j++
		default:
			if !same(st, i, old, j) {
				changed = append(changed, i)
			}
			i++
			j++
		}
	}
	return changed, removed
}

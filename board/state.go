// The board's shared state: computed once per change for every page, kept
// between changes so that the next one can be told as a difference, and
// made from the one before by copying only what a change touches.

package board

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// state is the board at one version: every task with its column and what
// the page derives from it, and the critical path. It is immutable once
// made, and shared by every page and request. The tasks are kept by id in
// chunks, so that the state after a change of a few tasks shares every
// chunk but theirs with the state before (next): the server's work per
// change is proportional to the change, not to the graph.
type state struct {
	version int64
	now     time.Time
	problem string
	chunks  [][]entry // every task, by id, in chunks of at most chunkLen
	counts  []int     // how many tasks each column holds
	path    []taskgraph.ID
	// strandedBy is Board.StrandedBy as of the last state made from the
	// store: next makes no change that could change it, and shares it.
	strandedBy map[taskgraph.ID]taskgraph.ID

	fullOnce sync.Once
	full     [][]byte // the Snapshot as JSON, made on first use
}

// chunkLen is the most tasks a chunk holds: a change copies the chunks of
// the tasks it touches (a few KiB each) and the list of chunks (8 bytes a
// chunk, 3 KiB at 100,000 tasks).
const chunkLen = 256

// entry is one task of a state.
type entry struct {
	t   *taskgraph.Task
	col int32    // index into columns
	d   *derived // nil when nothing is derived (most tasks)
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
	if d == nil || d.rare == nil {
		return nil
	}
	return d.rare.missing
}

func (d *derived) strands() []taskgraph.ID {
	if d == nil || d.rare == nil {
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

// of returns d, or the empty value every task with nothing derived shares.
func (d *derived) of() *derived {
	if d == nil {
		return &nothingDerived
	}
	return d
}

var nothingDerived derived

// empty reports whether nothing is derived.
func (d *derived) empty() bool {
	return d.why == "" && len(d.waitingOn) == 0 && d.rare == nil && d.strandedBy == 0 && !d.lapsed
}

// locate returns the chunk and the index in it of the task id, and
// whether it is there.
func (st *state) locate(id taskgraph.ID) (c, i int, ok bool) {
	c = sort.Search(len(st.chunks), func(k int) bool { ch := st.chunks[k]; return ch[len(ch)-1].t.ID >= id })
	if c == len(st.chunks) {
		return c, 0, false
	}
	i, ok = slices.BinarySearchFunc(st.chunks[c], id, func(e entry, id taskgraph.ID) int { return cmp.Compare(e.t.ID, id) })
	return c, i, ok
}

// find returns the task id's entry, or nil.
func (st *state) find(id taskgraph.ID) *entry {
	c, i, ok := st.locate(id)
	if !ok {
		return nil
	}
	return &st.chunks[c][i]
}

// task returns the task id, or nil.
func (st *state) task(id taskgraph.ID) *taskgraph.Task {
	if e := st.find(id); e != nil {
		return e.t
	}
	return nil
}

// all returns every entry, by id.
func (st *state) all() []*entry {
	n := 0
	for _, ch := range st.chunks {
		n += len(ch)
	}
	out := make([]*entry, 0, n)
	for _, ch := range st.chunks {
		for i := range ch {
			out = append(out, &ch[i])
		}
	}
	return out
}

// columnIDs returns the ids of column c: Ready in claim order (priority,
// then id), every other column by id. The page keeps its columns in that
// order as tasks change, so the server makes sure of it whatever the
// store returned.
func (st *state) columnIDs(c int32) []taskgraph.ID {
	ids := make([]taskgraph.ID, 0, st.counts[c])
	var prio []taskgraph.Priority
	for _, ch := range st.chunks {
		for _, e := range ch {
			if e.col == c {
				ids = append(ids, e.t.ID)
				if c == colReady {
					prio = append(prio, e.t.Priority)
				}
			}
		}
	}
	if c == colReady {
		sort.Stable(byPriority{ids, prio})
	}
	return ids
}

// byPriority sorts ids by their priorities, kept alongside.
type byPriority struct {
	ids  []taskgraph.ID
	prio []taskgraph.Priority
}

func (p byPriority) Len() int           { return len(p.ids) }
func (p byPriority) Less(i, j int) bool { return p.prio[i] < p.prio[j] }
func (p byPriority) Swap(i, j int) {
	p.ids[i], p.ids[j] = p.ids[j], p.ids[i]
	p.prio[i], p.prio[j] = p.prio[j], p.prio[i]
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
	st := &state{now: time.Now().UTC(), problem: problem, strandedBy: b.StrandedBy, counts: make([]int, len(columns))}
	n := 0
	for c := range columns {
		st.counts[c] = len(columns[c].tasks(&b))
		n += st.counts[c]
	}
	entries := make([]entry, 0, n)
	for c := range columns {
		list := columns[c].tasks(&b)
		for i := range list {
			entries = append(entries, entry{t: &list[i], col: int32(c)})
		}
	}
	slices.SortFunc(entries, func(x, y entry) int { return cmp.Compare(x.t.ID, y.t.ID) })
	st.chunks = make([][]entry, 0, (n+chunkLen-1)/chunkLen)
	for start := 0; start < n; start += chunkLen {
		end := min(start+chunkLen, n)
		st.chunks = append(st.chunks, entries[start:end:end])
	}
	st.derive()
	st.path = st.criticalPath()
	return st, nil
}

// derive sets what is derived of every task. Only a task in progress (a
// lapsed lease), a blocked or stranded one (what it waits on, and why) and
// a failed or cancelled one (what it strands) can have something derived;
// the rest of a big graph, completed or ready, has nothing, and keeps no
// room for it (the first snapshot of 100,000 tasks allocated 10 MB for a
// derived value per task, mostly empty).
func (st *state) derive() {
	n := 0
	for _, ch := range st.chunks {
		for _, e := range ch {
			switch columns[e.col].key {
			case taskgraph.StateInProgress, taskgraph.StateBlocked, taskgraph.StateStranded, taskgraph.StateFailed, taskgraph.StateCancelled:
				n++
			}
		}
	}
	ds := make([]derived, 0, n) // never grown: the entries point into it
	walk := newStrandWalk(st.strandedBy, st.task)
	var buf []byte
	for _, ch := range st.chunks {
		for i := range ch {
			e := &ch[i]
			var strands []taskgraph.ID
			if k := columns[e.col].key; k == taskgraph.StateFailed || k == taskgraph.StateCancelled {
				strands = walk.from(*e.t)
			}
			if d := st.deriveOne(e, strands, &buf); !d.empty() {
				ds = append(ds, d)
				e.d = &ds[len(ds)-1]
			}
		}
	}
}

// deriveOne returns what is derived of e, given what it strands.
func (st *state) deriveOne(e *entry, strands []taskgraph.ID, buf *[]byte) derived {
	t := e.t
	var d derived
	d.lapsed = t.Lapsed(st.now)
	if t.Status == taskgraph.Pending {
		for _, b := range t.BlockedBy {
			bt := st.task(b)
			if bt == nil || bt.Status != taskgraph.Completed {
				d.waitingOn = append(d.waitingOn, b)
				if bt == nil {
					d.more().missing = append(d.more().missing, b)
				}
			}
		}
	}
	switch columns[e.col].key {
	case taskgraph.StateBlocked, taskgraph.StateStranded:
		d.strandedBy = st.strandedBy[t.ID]
		*buf = st.why((*buf)[:0], t)
		d.why = string(*buf)
	case taskgraph.StateFailed, taskgraph.StateCancelled:
		if len(strands) > 0 {
			d.more().strands = strands
		}
	}
	return d
}

// why appends taskgraph.Explain's text for a blocked or stranded task,
// from what the board already knows (taskgraph.AppendWhyNotReady).
func (st *state) why(b []byte, t *taskgraph.Task) []byte {
	return taskgraph.AppendWhyNotReady(b, t, st.task, func(id taskgraph.ID) taskgraph.ID { return st.strandedBy[id] }, st.now)
}

// criticalPath is taskgraph.CriticalPath of the board's tasks, computed
// over the board's own index (CriticalPath indexes the tasks it is given
// anew, which over 100,000 tasks allocates more than the whole snapshot):
// the longest chain of unfinished tasks that can start, each blocked by
// the one before, ending at the lowest id among the longest, each step
// taking the lowest of the blockers that give the longest chain. It is
// empty when nothing is unfinished or the unfinished tasks form a cycle.
func (st *state) criticalPath() []taskgraph.ID {
	// Tasks are numbered in id order, chunk after chunk.
	offs := make([]int, len(st.chunks))
	n := 0
	for c, ch := range st.chunks {
		offs[c] = n
		n += len(ch)
	}
	find := func(id taskgraph.ID) int {
		c, i, ok := st.locate(id)
		if !ok {
			return -1
		}
		return offs[c] + i
	}
	at := func(i int) *taskgraph.Task {
		c := sort.Search(len(offs), func(k int) bool { return offs[k] > i }) - 1
		return st.chunks[c][i-offs[c]].t
	}
	unfinished := func(t *taskgraph.Task) bool {
		return t.Status == taskgraph.Pending || t.Status == taskgraph.InProgress
	}
	indeg := make([]int32, n)
	depth := make([]int32, n) // 0: none (finished, stuck, or not reached)
	prev := make([]int32, n)  // index of the blocker before on the chain, or -1
	stuck := make([]bool, n)
	var queue []int32
	total := 0
	for c, ch := range st.chunks {
		for k := range ch {
			i, t := offs[c]+k, ch[k].t
			if !unfinished(t) {
				continue
			}
			total++
			for _, b := range t.BlockedBy {
				j := find(b)
				switch {
				case j < 0, at(j).Status == taskgraph.Failed, at(j).Status == taskgraph.Cancelled:
					stuck[i] = true
				case unfinished(at(j)):
					indeg[i]++
				}
			}
			if indeg[i] == 0 {
				queue = append(queue, int32(i))
			}
		}
	}
	visited := 0
	for len(queue) > 0 {
		i := int(queue[0])
		queue = queue[1:]
		visited++
		t := at(i)
		if !stuck[i] {
			depth[i], prev[i] = 1, -1
			var best taskgraph.ID
			for _, b := range t.BlockedBy {
				j := find(b)
				if j < 0 || depth[j] == 0 {
					continue
				}
				if depth[j]+1 > depth[i] || depth[j]+1 == depth[i] && b < best {
					depth[i], prev[i], best = depth[j]+1, int32(j), b
				}
			}
		}
		for _, dep := range t.Blocks {
			j := find(dep)
			if j < 0 || !unfinished(at(j)) {
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
		path = append(path, at(i).ID)
	}
	slices.Reverse(path)
	return nonNil(path)
}

// view returns the task of e as the page is sent it.
func (st *state) view(e *entry) TaskView {
	d := e.d.of()
	v := view(*e.t, columns[e.col].key, nil, st.now)
	v.LeaseLapsed = d.lapsed
	v.WaitingOn, v.Missing, v.StrandedBy, v.Strands, v.Why = d.waitingOn, d.missing(), d.strandedBy, d.strands(), d.why
	return v
}

// snapshot returns the state as a Snapshot.
func (st *state) snapshot(s *Server) Snapshot {
	all := st.all()
	snap := Snapshot{
		Version: st.version, Now: st.now, Title: s.cfg.title, Writes: s.cfg.writes, Problem: st.problem,
		Columns: make([]Column, len(columns)), Tasks: make([]TaskView, len(all)), CriticalPath: st.path,
	}
	for c, col := range columns {
		snap.Columns[c] = Column{Key: col.key, Title: col.title, IDs: st.columnIDs(int32(c))}
	}
	for i, e := range all {
		snap.Tasks[i] = st.view(e)
	}
	return snap
}

// same reports whether two entries are shown alike.
func same(x, y *entry) bool {
	if x.col != y.col {
		return false
	}
	a, b := x.t, y.t
	da, db := x.d.of(), y.d.of()
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
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// diff returns the entries of st whose view changed since old (new tasks
// included) and the ids of the tasks old had and st has not: one walk
// over both, which are by id.
func (st *state) diff(old *state) (changed []*entry, removed []taskgraph.ID) {
	a, b := st.all(), old.all()
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && a[i].t.ID < b[j].t.ID:
			changed = append(changed, a[i])
			i++
		case i == len(a) || b[j].t.ID < a[i].t.ID:
			removed = append(removed, b[j].t.ID)
			j++
		default:
			if !same(a[i], b[j]) {
				changed = append(changed, a[i])
			}
			i++
			j++
		}
	}
	return changed, removed
}

// The columns next moves tasks between.
var (
	colReady      = colOf(taskgraph.StateReady)
	colDeferred   = colOf(taskgraph.StateDeferred)
	colBlocked    = colOf(taskgraph.StateBlocked)
	colStranded   = colOf(taskgraph.StateStranded)
	colInProgress = colOf(taskgraph.StateInProgress)
)

func colOf(key taskgraph.State) int32 {
	for c, col := range columns {
		if col.key == key {
			return int32(c)
		}
	}
	panic("board: no column " + key)
}

// next returns the state after events, made from st by copying only the
// chunks of the tasks they touch, and the entries whose view changed (by
// id); or nil if an event's effect may reach further than its task and
// the tasks next to it — a task created, deleted, finished or reopened,
// an edge added or removed, a stranded graph's claim or release — so that
// the state must be made anew from the store. What stays local: any edit
// of a task's fields, a claim, renewal, release or lapse, a deferral that
// comes due. The tasks next to one that changed are those it blocks (what
// they wait on, and why, name it) and those it strands (their why names
// its reason).
func (st *state) next(events []taskgraph.Event, now time.Time) (*state, []*entry) {
	nx := &state{now: now, problem: st.problem, chunks: slices.Clone(st.chunks), counts: slices.Clone(st.counts),
		path: st.path, strandedBy: st.strandedBy}
	copied := map[int]bool{}
	mut := func(id taskgraph.ID) *entry {
		c, i, ok := nx.locate(id)
		if !ok {
			return nil
		}
		if !copied[c] {
			nx.chunks[c] = slices.Clone(nx.chunks[c])
			copied[c] = true
		}
		return &nx.chunks[c][i]
	}
	touched := map[taskgraph.ID]bool{}
	for _, ev := range events {
		switch ev.Kind {
		case taskgraph.Updated, taskgraph.Unblocked, taskgraph.Lapsed, taskgraph.Undeferred:
		default:
			return nil, nil
		}
		e := mut(ev.Task.ID)
		if e == nil {
			return nil, nil
		}
		if ev.Task.Rev < e.t.Rev {
			continue // older than what the state holds: read before it was made
		}
		if !slices.Equal(ev.Task.BlockedBy, e.t.BlockedBy) {
			return nil, nil
		}
		col, ok := nx.column(e, &ev.Task)
		if !ok {
			return nil, nil
		}
		t := ev.Task
		t.Blocks = e.t.Blocks // unchanged while no edge is (a FileStore's events leave it out)
		nx.counts[e.col]--
		nx.counts[col]++
		e.t, e.col = &t, col
		touched[t.ID] = true
		for _, id := range t.Blocks {
			touched[id] = true
		}
		for _, id := range e.d.strands() {
			touched[id] = true
		}
	}
	ids := make([]taskgraph.ID, 0, len(touched))
	for id := range touched {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var changed []*entry
	var buf []byte
	for _, id := range ids {
		e := mut(id)
		if e == nil {
			continue // a blocker names a task that does not exist
		}
		if d := nx.deriveOne(e, e.d.strands(), &buf); d.empty() {
			e.d = nil
		} else {
			e.d = &d
		}
		if o := st.find(id); o == nil || !same(e, o) {
			changed = append(changed, e)
		}
	}
	return nx, changed
}

// column returns the column of t, the new version of e's task, if next
// can tell it from the tasks next to it: the rules of the store's Board,
// for the changes next makes. A pending task whose blockers are all done
// (completed, and not out of order) is deferred until its NotBefore, else
// ready; a pending task that stays pending keeps a blocked or stranded
// column, since neither its blockers nor what strands them changed. A
// claim or release of a task that a failed or cancelled one may strand
// through a blocker completed out of order, and a task that awaits
// approval or did, are told by the store.
func (st *state) column(e *entry, t *taskgraph.Task) (int32, bool) {
	was, from := e.t.Status, e.col
	if t.AwaitingApproval() || e.t.AwaitingApproval() {
		return 0, false // an approval, or a gate (a file edited by hand): told by the store
	}
	switch {
	case t.Status == was && t.Status != taskgraph.Pending:
		return from, true
	case t.Status == taskgraph.Pending && was == taskgraph.Pending && (from == colBlocked || from == colStranded):
		return from, true
	case t.Status == taskgraph.InProgress && from == colReady, t.Status == taskgraph.Pending && (was == taskgraph.InProgress || from == colReady || from == colDeferred):
		if st.strandedBy[t.ID] != 0 {
			return 0, false
		}
		for _, b := range t.BlockedBy {
			bt := st.task(b)
			if bt == nil || bt.Status != taskgraph.Completed || len(taskgraph.Rules.OutOfOrder(bt, st.status)) > 0 {
				return 0, false
			}
		}
		switch {
		case t.Status == taskgraph.InProgress:
			return colInProgress, true
		case t.Deferred(st.now):
			return colDeferred, true
		}
		return colReady, true
	}
	return 0, false
}

// status is the status of the task id, for the Rulebook.
func (st *state) status(id taskgraph.ID) (taskgraph.Status, bool) {
	if t := st.task(id); t != nil {
		return t.Status, true
	}
	return "", false
}

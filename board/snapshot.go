// The board's snapshot: the whole graph as the page shows it, by column.

package board

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// Snapshot is the whole graph as the page shows it: what GET /api/board
// returns and what each event of GET /api/events carries.
type Snapshot struct {
	// Version increases with every snapshot the server makes; a page
	// ignores one older than what it shows.
	Version int64 `json:"version"`
	// Now is the server's clock when the snapshot was made, so the page
	// can tell lease times in the server's time.
	Now    time.Time `json:"now"`
	Title  string    `json:"title,omitempty"`
	Writes bool      `json:"writes"` // the actions are allowed (with the token)
	// Columns are the board's columns in order. A page draws whatever
	// columns it is given, so a new state is one more entry on the server.
	Columns []Column `json:"columns"`
	// Tasks are every task, by id.
	Tasks []TaskView `json:"tasks"`
	// CriticalPath is taskgraph.CriticalPath of the tasks: the longest
	// chain of unfinished tasks, each blocked by the one before it; empty
	// when nothing is unfinished or the unfinished tasks form a cycle.
	CriticalPath []taskgraph.ID `json:"criticalPath"`
	// Problem reports what the store could not read (corrupt task files);
	// the tasks it could read are still listed.
	Problem string `json:"problem,omitempty"`
}

// Column is one column of the board.
type Column struct {
	Key   taskgraph.State `json:"key"` // the state of the tasks in it, e.g. "blocked"
	Title string          `json:"title"`
	IDs   []taskgraph.ID  `json:"ids"`
}

// TaskView is a task with what the page needs to explain it.
type TaskView struct {
	ID          taskgraph.ID     `json:"id"`
	Subject     string           `json:"subject"`
	Description string           `json:"description,omitempty"`
	Status      taskgraph.Status `json:"status"`
	// State is the key of the task's column (empty in the answer to a
	// write, which does not place the task on the board).
	State taskgraph.State `json:"state,omitempty"`
	Owner string          `json:"owner,omitempty"`
	// Priority is P0 (most urgent) to P4, as a number; 2 is the default.
	Priority taskgraph.Priority `json:"priority"`
	Labels   []string           `json:"labels,omitempty"`
	Key      string             `json:"key,omitempty"`
	// Reason says why a failed or cancelled task ended so; Result is what
	// a completed task recorded.
	Reason    string         `json:"reason,omitempty"`
	Result    string         `json:"result,omitempty"`
	BlockedBy []taskgraph.ID `json:"blockedBy"`
	Blocks    []taskgraph.ID `json:"blocks"`
	// WaitingOn lists the blockers that are not completed, missing ones
	// included: why a pending task is not ready.
	WaitingOn []taskgraph.ID `json:"waitingOn,omitempty"`
	// Missing lists the blockers that name no task.
	Missing []taskgraph.ID `json:"missing,omitempty"`
	// StrandedBy is, for a stranded task, the failed or cancelled task
	// that strands it (Board.StrandedBy).
	StrandedBy taskgraph.ID `json:"strandedBy,omitempty"`
	// Strands is, for a failed or cancelled task, every task it strands,
	// by id: the stranded tasks that wait on it, directly or through
	// other stranded tasks. A task stranded by two causes is in the
	// Strands of both, though its StrandedBy names only the lowest.
	Strands []taskgraph.ID `json:"strands,omitempty"`
	// Why is taskgraph.Explain's text for a blocked or stranded task: why
	// it is not ready, in one line.
	Why            string         `json:"why,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
	CreatedAt      time.Time      `json:"createdAt,omitzero"`
	UpdatedAt      time.Time      `json:"updatedAt,omitzero"`
	ClaimedAt      time.Time      `json:"claimedAt,omitzero"`
	LeaseExpiresAt time.Time      `json:"leaseExpiresAt,omitzero"`
	// LeaseLapsed is set when the claim's lease has expired: anyone may
	// claim the task, and its owner may be gone.
	LeaseLapsed bool   `json:"leaseLapsed,omitempty"`
	PrevOwner   string `json:"prevOwner,omitempty"`
	Rev         int64  `json:"rev"`
}

// The states of the board, each a column: the three states of a pending
// task, the one of a task being worked on, and the three outcomes. A new
// state is one more entry here and a colour in app.css; the page needs no
// other change.
var columns = []struct {
	key   taskgraph.State
	title string
	tasks func(b *taskgraph.Board) []taskgraph.Task
}{
	{taskgraph.StateReady, "Ready", func(b *taskgraph.Board) []taskgraph.Task { return b.Ready }},
	{taskgraph.StateBlocked, "Blocked", func(b *taskgraph.Board) []taskgraph.Task { return b.Blocked }},
	{taskgraph.StateStranded, "Stranded", func(b *taskgraph.Board) []taskgraph.Task { return b.Stranded }},
	{taskgraph.StateInProgress, "In progress", func(b *taskgraph.Board) []taskgraph.Task { return b.InProgress }},
	{taskgraph.StateCompleted, "Completed", func(b *taskgraph.Board) []taskgraph.Task { return b.Completed }},
	{taskgraph.StateFailed, "Failed", func(b *taskgraph.Board) []taskgraph.Task { return b.Failed }},
	{taskgraph.StateCancelled, "Cancelled", func(b *taskgraph.Board) []taskgraph.Task { return b.Cancelled }},
}

// Snapshot reads the store and returns the board as the page shows it.
func (s *Server) Snapshot(ctx context.Context) (Snapshot, error) {
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
		Version: s.version.Add(1), Now: now, Title: s.cfg.title, Writes: s.cfg.writes,
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
	ex := newExplainer(all, b.StrandedBy, now)
	walk := newStrandWalk(all, b.StrandedBy)
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

func view(t taskgraph.Task, state taskgraph.State, status map[taskgraph.ID]taskgraph.Status, now time.Time) TaskView {
	v := TaskView{
		ID: t.ID, Subject: t.Subject, Description: t.Description, Status: t.Status, State: state,
		Owner: t.Owner, Priority: t.Priority, Labels: t.Labels, Key: t.Key, Reason: t.Reason, Result: t.Result,
		BlockedBy: nonNil(t.BlockedBy), Blocks: nonNil(t.Blocks), Metadata: t.Metadata,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, ClaimedAt: t.ClaimedAt, LeaseExpiresAt: t.LeaseExpiresAt,
		PrevOwner: t.PrevOwner, Rev: t.Rev,
	}
	if t.Status == taskgraph.InProgress && !t.LeaseExpiresAt.IsZero() && !now.Before(t.LeaseExpiresAt) {
		v.LeaseLapsed = true
	}
	if t.Status == taskgraph.Pending && status != nil {
		for _, b := range t.BlockedBy {
			st, ok := status[b]
			if st != taskgraph.Completed {
				v.WaitingOn = append(v.WaitingOn, b)
				if !ok {
					v.Missing = append(v.Missing, b)
				}
			}
		}
	}
	return v
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
type explainer struct {
	byID       map[taskgraph.ID]*taskgraph.Task
	strandedBy map[taskgraph.ID]taskgraph.ID
	now        time.Time
	sub        []taskgraph.Task // reused from one task to the next
	in         map[taskgraph.ID]bool
}

func newExplainer(all []taskgraph.Task, strandedBy map[taskgraph.ID]taskgraph.ID, now time.Time) *explainer {
	byID := make(map[taskgraph.ID]*taskgraph.Task, len(all))
	for i := range all {
		byID[all[i].ID] = &all[i]
	}
	return &explainer{byID: byID, strandedBy: strandedBy, now: now, in: map[taskgraph.ID]bool{}}
}

func (x *explainer) why(t taskgraph.Task) string {
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
type strandWalk struct {
	byID     map[taskgraph.ID]*taskgraph.Task
	stranded map[taskgraph.ID]taskgraph.ID // Board.StrandedBy: the stranded tasks
	seen     map[taskgraph.ID]bool         // reused from one walk to the next
}

func newStrandWalk(all []taskgraph.Task, strandedBy map[taskgraph.ID]taskgraph.ID) *strandWalk {
	w := &strandWalk{stranded: strandedBy, seen: map[taskgraph.ID]bool{}}
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
func (w *strandWalk) from(cause taskgraph.Task) []taskgraph.ID {
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

func nonNil(ids []taskgraph.ID) []taskgraph.ID {
	if ids == nil {
		return []taskgraph.ID{}
	}
	return ids
}

// snapshotJSON is one snapshot as a Server-Sent Event.
func (s *Server) snapshotJSON(ctx context.Context) ([]byte, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(snap)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(data)+32)
	out = append(out, "event: snapshot\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...), nil
}

// errorEvent tells the page the store could not be read.
func errorEvent(err error) []byte {
	data, _ := json.Marshal(map[string]string{"error": err.Error()})
	return append(append([]byte("event: failure\ndata: "), data...), "\n\n"...)
}

// handleBoard answers GET /api/board with a Snapshot.
func (s *Server) handleBoard(w http.ResponseWriter, r *http.Request) {
	snap, err := s.Snapshot(r.Context())
	if err != nil {
		storeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, snap)
}

// The board's snapshot: the whole graph as the page shows it, by column.

package board

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/taskview"
)

// Snapshot is the whole graph as the page shows it: what GET /api/board
// returns and what the first event of GET /api/events carries (later
// events carry a Change from one version to the next).
type Snapshot struct {
	// Version increases by one with every change to what the page shows;
	// a Change applies to the version before it.
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

// TaskView is a task with what the page needs to explain it. Its fields
// are those of the board's JSON of a task (taskView, in encode.go), in
// its order.
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
	// LeaseLapsed is set when the claim has lapsed (taskgraph.Task.Lapse):
	// its lease expired, or its max runtime or no-progress window ran
	// out; anyone may claim the task, and its owner may be gone.
	LeaseLapsed bool `json:"leaseLapsed,omitempty"`
	// LapsesAt and Clock say, for a claim that its max runtime or its
	// no-progress window ends before its lease (Clock "runtime" or
	// "progress"), when it lapses; unset when the lease is what ends it.
	LapsesAt time.Time `json:"lapsesAt,omitzero"`
	Clock    string    `json:"clock,omitempty"`
	// MaxRuntime and ProgressWindow are the task's liveness limits, in
	// nanoseconds (taskgraph.Extra); 0 when unset.
	MaxRuntime     time.Duration `json:"maxRuntime,omitempty"`
	ProgressWindow time.Duration `json:"progressWindow,omitempty"`
	PrevOwner      string        `json:"prevOwner,omitempty"`
	Rev            int64         `json:"rev"`
	// NotBefore, Due, Attempts and MaxAttempts are the task's schedule
	// (taskgraph.Task); zero when unset.
	// Parent is the task this one is part of (taskgraph.Task.Parent).
	Parent      taskgraph.ID `json:"parent,omitempty"`
	NotBefore   time.Time    `json:"notBefore,omitzero"`
	Due         time.Time    `json:"due,omitzero"`
	Attempts    int          `json:"attempts,omitempty"`
	MaxAttempts int          `json:"maxAttempts,omitempty"`
	// Notes are the task's latest notes and History its last
	// transitions, oldest first: at most detailNotes and detailHistory of
	// them, so that a snapshot stays small however long a task has lived
	// (taskgraph history ID has them all).
	Notes   []taskgraph.Note       `json:"notes,omitempty"`
	History []taskgraph.Transition `json:"history,omitempty"`
}

// How much of a task's notes and history a snapshot carries.
const (
	detailNotes   = 3
	detailHistory = 8
)

// tail returns the last n elements of s.
func tail[T any](s []T, n int) []T { return s[max(len(s)-n, 0):] }

// The states of the board, each a column: the states of a pending task, the one of a task being worked on, and the three outcomes. A new
// state is one more entry here and a colour in app.css; the page needs no
// other change.
var columns = []struct {
	key   taskgraph.State
	title string
	tasks func(b *taskgraph.Board) []taskgraph.Task
}{
	{taskgraph.StateReady, "Ready", func(b *taskgraph.Board) []taskgraph.Task { return b.Ready }},
	{taskgraph.StateAwaitingApproval, "Awaiting approval", func(b *taskgraph.Board) []taskgraph.Task { return b.AwaitingApproval }},
	{taskgraph.StateDeferred, "Deferred", func(b *taskgraph.Board) []taskgraph.Task { return b.Deferred }},
	{taskgraph.StateLimited, "Limited", func(b *taskgraph.Board) []taskgraph.Task { return b.Limited }},
	{taskgraph.StateBlocked, "Blocked", func(b *taskgraph.Board) []taskgraph.Task { return b.Blocked }},
	{taskgraph.StateStranded, "Stranded", func(b *taskgraph.Board) []taskgraph.Task { return b.Stranded }},
	{taskgraph.StateInProgress, "In progress", func(b *taskgraph.Board) []taskgraph.Task { return b.InProgress }},
	{taskgraph.StateCompleted, "Completed", func(b *taskgraph.Board) []taskgraph.Task { return b.Completed }},
	{taskgraph.StateFailed, "Failed", func(b *taskgraph.Board) []taskgraph.Task { return b.Failed }},
	{taskgraph.StateCancelled, "Cancelled", func(b *taskgraph.Board) []taskgraph.Task { return b.Cancelled }},
}

// Snapshot returns the board as the page shows it, as of now: the shared
// state every page is sent, brought up to date first if the store
// changed since it was made.
func (s *Server) Snapshot(ctx context.Context) (Snapshot, error) {
	st, err := s.hub.current(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	return st.snapshot(s), nil
}

func view(t taskgraph.Task, state taskgraph.State, status map[taskgraph.ID]taskgraph.Status, now time.Time) TaskView {
	v := TaskView{
		ID: t.ID, Subject: t.Subject, Description: t.Description, Status: t.Status, State: state,
		Owner: t.Owner, Priority: t.Priority, Labels: t.Labels, Key: t.Key, Reason: t.Reason, Result: t.Result,
		BlockedBy: nonNil(t.BlockedBy), Blocks: nonNil(t.Blocks), Metadata: t.Metadata,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, ClaimedAt: t.ClaimedAt, LeaseExpiresAt: t.LeaseExpiresAt,
		PrevOwner: t.PrevOwner, Rev: t.Rev,
		Parent: t.Parent, NotBefore: t.NotBefore, Due: t.Due, Attempts: t.Attempts, MaxAttempts: t.MaxAttempts,
		Notes: tail(t.Notes, detailNotes), History: tail(t.History, detailHistory),
	}
	v.LeaseLapsed = t.Lapsed(now)
	v.LapsesAt, v.Clock = taskview.Clock(&t)
	if t.Extra != nil {
		v.MaxRuntime, v.ProgressWindow = t.Extra.MaxRuntime, t.Extra.ProgressWindow
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

// strandWalk finds what a failed or cancelled task strands: the stranded
// tasks reachable from it along Blocks through stranded tasks only. Each
// walk visits only the tasks it returns, so a snapshot whose causes
// strand disjoint sets of tasks stays linear; a task stranded by several
// causes is visited once per cause.
type strandWalk struct {
	get      func(taskgraph.ID) *taskgraph.Task
	stranded map[taskgraph.ID]taskgraph.ID // Board.StrandedBy: the stranded tasks
	seen     map[taskgraph.ID]bool         // reused from one walk to the next
}

func newStrandWalk(strandedBy map[taskgraph.ID]taskgraph.ID, get func(taskgraph.ID) *taskgraph.Task) *strandWalk {
	return &strandWalk{get: get, stranded: strandedBy, seen: map[taskgraph.ID]bool{}}
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
			if _, ok := w.stranded[id]; !ok || w.seen[id] {
				continue
			}
			t := w.get(id)
			if t == nil {
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

// errorEvent tells the page the store could not be read.
func errorEvent(err error) []byte {
	data, _ := json.Marshal(map[string]string{"error": err.Error()})
	return append(append([]byte("event: failure\ndata: "), data...), "\n\n"...)
}

// handleBoard answers GET /api/board with a Snapshot.
func (s *Server) handleBoard(w http.ResponseWriter, r *http.Request) {
	st, err := s.hub.current(r.Context())
	if err != nil {
		storeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	for _, chunk := range st.fullJSON(s) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

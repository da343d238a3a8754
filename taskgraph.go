// Package taskgraph is a durable task graph for AI agent harnesses.
//
// Every task is a JSON file in a directory (by convention .tasks/), tasks
// declare the tasks that block them, and any number of agents — goroutines,
// processes — can share one graph: writes are serialised by a lock on the
// directory, each one reloads and validates what it depends on, and files
// are replaced atomically and durably. The on-disk format is the one of the
// learn-claude-code s07 task system, so directories written by it open
// unchanged and files written here load in it.
//
// Callers program against the [Store] interface. [Open] returns the
// filesystem store; [NewMemStore] returns an in-memory store with the same
// contract for unit tests. [Resolve], [FindCycle] and [TopoOrder] are pure
// functions over a slice of tasks.
package taskgraph

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/taskgraph/taskgraph/internal/jsonvalue"
)

// ID identifies a task. IDs are positive, allocated in increasing order and
// never reused, even after a task is deleted.
type ID int64

// Status is the lifecycle state of a task: Pending → InProgress → Completed.
type Status string

// The three statuses of the reference design.
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
)

// Valid reports whether s is one of the three known statuses.
func (s Status) Valid() bool {
	return s == Pending || s == InProgress || s == Completed
}

// Task is one node of the graph.
//
// BlockedBy is stored; Blocks is derived from every task's BlockedBy when the
// task is read and is never stored. Completed blockers stay in BlockedBy as
// history.
type Task struct {
	ID          ID
	Subject     string
	Description string
	Status      Status
	Owner       string // "" when unowned; kept on completion as the record of who did it
	BlockedBy   []ID   // tasks that must complete before this one may start
	Blocks      []ID   // tasks that list this one in their BlockedBy (derived)
	Metadata    map[string]any
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Rev         int64 // +1 on every write; 0 for a file that no taskgraph wrote

	// ClaimedAt is when the current owner claimed the task; zero if unknown.
	ClaimedAt time.Time
	// LeaseExpiresAt is when a claim made with [WithLease] lapses; zero
	// means the claim never expires.
	LeaseExpiresAt time.Time
	// PrevOwner is the owner whose lease expired before the task was
	// claimed again.
	PrevOwner string

	// unknown holds the JSON fields of the task file that taskgraph does
	// not know, so that rewriting the file keeps them.
	unknown map[string]json.RawMessage
}

// NewTask describes a task to create.
type NewTask struct {
	Subject     string
	Description string
	Owner       string
	BlockedBy   []ID // existing tasks that block the new one
	Blocks      []ID // existing tasks that the new one blocks: their BlockedBy gains its id
	Metadata    map[string]any
}

// Patch is a partial update: nil pointers and empty slices leave a field as
// it is.
type Patch struct {
	Subject     *string
	Description *string
	Status      *Status
	Owner       *string

	AddBlockedBy    []ID
	RemoveBlockedBy []ID
	AddBlocks       []ID // the named tasks gain this task in their BlockedBy
	RemoveBlocks    []ID

	// Metadata is merged into the task's metadata; a key whose value is nil
	// is removed (as in a JSON merge patch).
	Metadata map[string]any

	// IfRev, when non-zero, makes the update fail with ErrConflict unless
	// the task's current Rev equals it (optimistic concurrency).
	IfRev int64
}

// Completion is the result of completing a task.
type Completion struct {
	Task      Task
	Unblocked []Task // tasks this completion made ready, by id; not every ready task
}

// Board partitions a graph by what can happen next.
type Board struct {
	Ready      []Task // pending, every blocker exists and is completed
	Blocked    []Task // pending, some blocker unfinished or missing
	InProgress []Task
	Completed  []Task
	// Missing maps a blocked task to the blockers it names that do not exist.
	Missing map[ID][]ID
}

// clone returns a deep copy of t that shares nothing mutable with it.
func (t Task) clone() Task {
	t.BlockedBy = slices.Clone(t.BlockedBy)
	t.Blocks = slices.Clone(t.Blocks)
	t.Metadata = jsonvalue.Clone(t.Metadata)
	return t // unknown is never modified in place, so it may be shared
}

// normalizeMetadata returns m as JSON would read it back (numbers as
// float64, slices as []any), so that a task looks the same before and after
// it is stored, in every store.
func normalizeMetadata(m map[string]any) (map[string]any, error) {
	out, err := jsonvalue.Normalize(m)
	if err != nil {
		return nil, &InvalidError{Field: "metadata", Reason: "not representable as JSON: " + err.Error()}
	}
	return out, nil
}

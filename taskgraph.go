// Package taskgraph is a durable task graph for AI agent harnesses.
//
// Every task is a JSON file in a directory (by convention .tasks/), tasks
// declare the tasks that block them, and any number of agents — goroutines,
// processes, and with the pgstore package, machines — share one graph. The
// on-disk format is the one of the learn-claude-code s07 task system, so
// directories written by it open unchanged and files written here load in
// it. Callers program against the [Store] interface: [Open] returns the
// file store, [NewMemStore] an in-memory store with the same contract for
// unit tests. [Resolve], [FindCycle] and [TopoOrder] are pure functions
// over a slice of tasks.
//
// # The design in one page
//
// Files. A task is task_<id>.json (codec.go). Beside the tasks live four
// dot-files the reference's glob never sees: .taskgraph.lock (the flock),
// .taskgraph.meta (the id high-water mark, so ids are never reused),
// .taskgraph.log (which tasks each write changed) and, only during a
// write that touches several files, .taskgraph.journal.
//
// Lock (lock.go). Every write holds an exclusive flock on .taskgraph.lock
// for its whole read-decide-write cycle; reads take it shared, so they
// never see a multi-file write half applied. One writer at a time per
// directory, across processes; a lock dies with its process.
//
// Reload, validate, rename (filestore.go, rules.go, plan.go). Under the
// lock a write first brings its view of the directory up to date, then
// asks the rulebook ([Rules]) whether the change is allowed — the same
// functions MemStore and pgstore call, so every store decides alike — and
// computes the full set of files to write. One file is written to a
// temporary name, fsynced, and renamed over the task (internal/atomicfile);
// then the directory is fsynced. The rename is the commit point.
//
// Journal (commit.go). A write of several files (a create with Blocks, a
// delete with Detach, an edge edit) first writes every new file into one
// durable .taskgraph.journal; once that is durable the write has happened,
// and the store applies the files and removes the journal. A crash in
// between leaves the journal, and the next writer or opener replays it
// after validating every entry. A write is never stored in part.
//
// Cache (cache.go). A FileStore keeps every task decoded in memory with a
// reverse-edge index and a heap of ready ids, so a write costs one durable
// write whatever the size of the graph. After each commit the writer
// appends the changed ids to .taskgraph.log; other stores read only the
// log's new tail and reload those files, and rescan the directory when the
// log was replaced or the directory changed behind their back.
//
// Errors (errors.go). An error from a write means it did not happen, except
// one matching [ErrUnknownOutcome], which says the store could not tell.
// Everything else — torn files, hostile files, full disks — is a typed
// error that names the file and what to do; see [Store].
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

// Finished reports whether no work is left: no task is pending or in
// progress. When ClaimNext returns ErrNoReady, it tells a finished graph
// from one where work is blocked or held by others.
func (b Board) Finished() bool {
	return len(b.Ready) == 0 && len(b.Blocked) == 0 && len(b.InProgress) == 0
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

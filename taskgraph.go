// Package taskgraph is a durable task graph for AI agent harnesses: every
// task is a JSON file in a directory (by convention .tasks/), tasks name the
// tasks that block them, and any number of agents — goroutines, processes,
// and with the pgstore package, machines — share one graph. Agents claim
// ready tasks, work on them and complete them; no task is claimed twice,
// and a write that returned survives a crash of the process or the machine.
//
// # Usage
//
// Open a store, create tasks with their blockers, then claim and complete:
//
//	store, err := taskgraph.Open(".tasks") // creates the directory if needed
//	if err != nil {
//		return err
//	}
//	defer store.Close()
//
//	schema, err := store.Create(ctx, taskgraph.NewTask{Subject: "setup database schema"})
//	if err != nil {
//		return err
//	}
//	_, err = store.Create(ctx, taskgraph.NewTask{
//		Subject:   "create API endpoints",
//		BlockedBy: []taskgraph.ID{schema.ID}, // ready once schema is completed
//	})
//
//	// By hand: the most urgent ready task, held for ten minutes unless renewed.
//	t, err := store.ClaimNext(ctx, "agent-1", taskgraph.WithLease(10*time.Minute))
//	if errors.Is(err, taskgraph.ErrNoReady) {
//		// nothing ready now: Await waits, without polling, until something is
//	}
//	// ... do the work ...
//	done, err := store.Complete(ctx, t.ID, "agent-1") // done.Unblocked: the tasks it made ready
//
//	// Or the whole loop in one call: claim with a lease, renew it while fn
//	// runs, complete on nil (fail, with the error as the reason, otherwise),
//	// wait for a change, and return once the graph is finished.
//	err = taskgraph.Work(ctx, store, "agent-1", func(ctx context.Context, t taskgraph.Task) error {
//		return doTheWork(ctx, t) // ctx is cancelled if the claim is lost
//	})
//	// nil: every task completed or was cancelled; errors.Is(err, taskgraph.ErrStalled):
//	// the graph is finished with failed or stranded tasks.
//
// Callers program against the [Store] interface: [Open] returns the file
// store, [NewMemStore] an in-memory store with the same contract for unit
// tests, and pgstore the same on PostgreSQL. [Work], [Await] and
// [KeepAlive] are the agent's loop and its parts; [Store.Board] says what
// can happen next. [Resolve], [FindCycle], [TopoOrder], [Waves],
// [CriticalPath] and [Explain] are pure functions over a slice of tasks.
// The on-disk format is the one of the learn-claude-code s07 task system,
// so directories written by it open unchanged and files written here load
// in it.
//
// A task ends completed, failed or cancelled; a failed or cancelled one
// strands the tasks that wait on it (see [Board]). Tasks carry a
// [Priority] and labels, which [Store.ClaimNext] honours, and may carry a
// key, which makes creates safe to retry and lets [Store.CreatePlan]
// create a whole plan at once. Every rule is a method of [Rules]; the
// rules one by one, the guarantees with the tests that prove them, and
// durability by filesystem are in the repository's docs/ (rules.md,
// guarantees.md, durability.md).
//
// # The design in one page
//
// Files. A task is task_<id>.json (codec.go). Beside the tasks live
// dot-files the reference's glob never sees: .taskgraph.lock (the flock),
// .taskgraph.meta (the id high-water mark, so ids are never reused),
// .taskgraph.ids (in a git working tree, the last id this checkout drew:
// ids.go),
// .taskgraph.log (what each write changed: the cache's feed and the redo
// log of group commit), .taskgraph.sync (how far the log is durable,
// shared by the processes) and, only during a write that touches several
// files, .taskgraph.journal.
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
// temporary name and renamed over the task (internal/atomicfile). The
// rename is the commit point.
//
// Durability (commit.go, durability.go). The new file is fsynced before
// the rename (ahead of the lock where it can be: ahead.go), and the
// directory after it, under the lock: that fsync is the write's commit
// point, so no store returns a write, or reports it to a watcher, before
// it is durable, and a read makes no fsync of its own. Group commit — a
// write made durable by its change-log record, synced once for every
// writer waiting — was removed: on the filesystems where the power-loss
// test proved it safe it wrote no faster. docs/durability.md has the whole
// protocol and the power-loss figures.
//
// Journal (commit.go). A write of several files (a create with Blocks, a
// delete with Detach, an edge edit) first writes every new file into one
// durable .taskgraph.journal; once that is durable the write has happened,
// and the store applies the files and removes the journal. A crash in
// between leaves the journal, and the next writer or opener replays it
// after validating every entry. A write is never stored in part.
//
// Cache (cache.go). A FileStore keeps every task decoded in memory with a
// reverse-edge index and a heap of ready ids, so a write costs the same
// whatever the size of the graph. After each commit the writer
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
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/jsonvalue"
	"github.com/taskgraph-dev/taskgraph/internal/slicesx"
)

// ID identifies a task. IDs are positive, below 2^53, and never reused,
// even after a task is deleted. A store allocates them in increasing
// order; a FileStore in a git working tree draws them, in each checkout but
// the one where the graph began, from a block of its own (see
// [MergeTaskFiles] and the repository's docs/git.md), so that branches
// and clones merge without two tasks sharing an id.
type ID int64

// Status is the lifecycle state of a task: Pending → InProgress →
// Completed, or one of the two other outcomes, Failed and Cancelled.
type Status string

// The statuses. The first three are the reference design's; Failed and
// Cancelled are outcomes that satisfy nothing: a task blocked by one, or by
// a task that waits on one, is stranded (see [Board]).
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
	// Failed is a task its owner gave up on (Store.Fail), with the reason
	// in Task.Reason. Reopen makes it pending again.
	Failed Status = "failed"
	// Cancelled is a task that will not be done (Store.Cancel), with the
	// reason in Task.Reason. Reopen makes it pending again.
	Cancelled Status = "cancelled"
)

// Valid reports whether s is one of the five known statuses.
func (s Status) Valid() bool {
	switch s {
	case Pending, InProgress, Completed, Failed, Cancelled:
		return true
	}
	return false
}

// Terminal reports whether s is an outcome: completed, failed or
// cancelled. Only Reopen takes a task out of one.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}

// ended reports whether s is failed or cancelled: an outcome that
// strands the task's dependents.
func (s Status) ended() bool { return s == Failed || s == Cancelled }

// Priority says how urgent a task is, in the convention of issue
// trackers: P0 is the most urgent, P4 the least. ClaimNext takes the most
// urgent ready task first, then the first created (Rules.ClaimOrder). A task created without a
// priority, or read from a file without one, has DefaultPriority.
//
// The zero value is DefaultPriority, P2: a NewTask, or a Task given to
// Loader.Load, without a Priority has the default one. Outside Go — task
// files, JSON, the tools, the command line, PostgreSQL — a priority is
// its level, 0 (P0) to 4 (P4): see Level and PriorityLevel.
type Priority int

// The five priorities, most urgent first; they order as they compare.
const (
	P0 Priority = iota - 2 // most urgent
	P1
	P2 // the zero value: DefaultPriority
	P3
	P4 // least urgent
)

// DefaultPriority is the priority of a task that was given none: the
// middle, P2, which is Priority's zero value.
const DefaultPriority = P2

// PriorityLevel returns the priority whose level is n: 0 is P0, 4 is P4.
// Other levels give a priority that is not Valid.
func PriorityLevel(n int) Priority { return P0 + Priority(n) }

// Level returns p's level, as task files, JSON and the tools write it: 0
// for P0 to 4 for P4.
func (p Priority) Level() int { return int(p - P0) }

// Valid reports whether p is one of P0 to P4.
func (p Priority) Valid() bool { return p >= P0 && p <= P4 }

// String returns "P0" to "P4".
func (p Priority) String() string { return "P" + strconv.Itoa(p.Level()) }

// MarshalJSON writes p as its level, 0 to 4.
func (p Priority) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, int64(p.Level()), 10), nil
}

// UnmarshalJSON reads a level, 0 to 4 (another number gives a priority
// that is not Valid, which a store refuses).
func (p *Priority) UnmarshalJSON(data []byte) error {
	n, err := strconv.ParseInt(string(data), 10, 32)
	if err != nil {
		return fmt.Errorf("a priority is a whole number, 0 (most urgent) to 4: %w", err)
	}
	*p = PriorityLevel(int(n))
	return nil
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
	UpdatedAt   time.Time // the last write but a lease renewal
	Rev         int64     // +1 on every write; 0 for a file that no taskgraph wrote

	// ClaimedAt is when the current owner claimed the task; zero if unknown.
	ClaimedAt time.Time
	// LeaseExpiresAt is when a claim made with [WithLease] lapses; zero
	// means the claim never expires.
	LeaseExpiresAt time.Time
	// PrevOwner is the owner whose lease expired before the task was
	// claimed again.
	PrevOwner string

	// Priority is how urgent the task is: P0 (most urgent) to P4;
	// DefaultPriority (P2) unless set.
	Priority Priority
	// Labels are short tags (e.g. "frontend") that route work: an agent
	// claims with WithLabels to take only tasks carrying all of its
	// labels. Sorted, without duplicates; see Rules.Labels for the form.
	Labels []string
	// Parent is the task this one is part of, or 0 (see family.go): the
	// parent waits on its children, which are in its BlockedBy; RollupOf
	// says what they have come to.
	Parent ID
	// Key is a name the creator gave the task, unique in its graph, or ""
	// (see Rules.Key). Creating a task whose key exists returns the
	// existing task instead, so that a create is safe to retry; plans
	// (CreatePlan) name their tasks' blockers by key.
	Key string
	// Reason says why the task failed or was cancelled; "" otherwise.
	Reason string
	// Result is what Complete recorded (WithResult): a short text for the
	// agents that come after; "" if none.
	Result string

	// Notes are what agents wrote on the task (Noter), oldest first, at
	// most MaxNotes: the hand-over memory for whoever takes it next.
	Notes []Note
	// History is every transition of the task, oldest first: who claimed
	// it and when, lapses, releases, failures with their reason, and so on
	// (see HistoryEvent), at most MaxHistory entries, the oldest
	// summarised. Its creation is CreatedAt.
	History []Transition

	// MaxAttempts is how many attempts the task gets (see attempts.go's
	// rules, Rules.Fail and Rules.Claim): a failure, or a lease that
	// lapsed, uses one; while attempts remain, a failure makes the task
	// pending again, deferred by its backoff; the failure of the last one
	// is final. 0: no limit, and a failure is final at once.
	MaxAttempts int
	// Attempts is how many attempts the task has used up: failures and
	// lapsed leases. Reopen starts it again from 0.
	Attempts int
	// Backoff is how long a retry waits after the first failed attempt;
	// the wait doubles with each further attempt, up to MaxBackoff.
	Backoff time.Duration
	// NotBefore defers the task: it is not ready until then (it is in
	// Board.Deferred), set by the creator or by a retry's backoff. Zero:
	// not deferred.
	NotBefore time.Time
	// Due is when the task should be done: shown, sorted and filtered by
	// (Overdue), never enforced. Zero: none.
	Due time.Time

	// Extra holds what few tasks set (liveness limits, an approval gate,
	// how the task was created, links), behind one pointer so that a task
	// without any costs one word; nil when none is set. See [Extra].
	Extra *Extra `json:",omitempty"`
}

// NewTask describes a task to create.
type NewTask struct {
	Subject     string
	Description string
	Owner       string
	BlockedBy   []ID // existing tasks that block the new one
	Blocks      []ID // existing tasks that the new one blocks: their BlockedBy gains its id
	Metadata    map[string]any

	// Priority is the task's priority; the zero value is DefaultPriority.
	Priority Priority
	// Labels are the task's labels, stored sorted and without duplicates.
	Labels []string
	// Key names the task, uniquely in its graph; "" for none. If a task
	// with this key exists, Create and CreatePlan return that task as it
	// is and create nothing: a retried create never makes two.
	Key string
	// Parent makes the new task a child of an existing task, which then
	// waits on it (its BlockedBy gains the new id). Under names the parent
	// by reference instead: the key of a task of the same plan
	// (CreatePlan), or an id, "#12". 0 and "": no parent.
	Parent ID
	Under  string
	// MaxAttempts, Backoff, NotBefore and Due are the task's schedule;
	// see Task. Zero values: none.
	MaxAttempts int
	Backoff     time.Duration
	NotBefore   time.Time
	Due         time.Time
	// After names the tasks that block the new one, by reference: the key
	// of a task of the same plan (CreatePlan), the key of an existing
	// task, or an existing id written "#12" or "12". They are added to
	// BlockedBy.
	After []string
	// MaxRuntime and ProgressWindow are the task's liveness limits (see
	// Extra); 0: none.
	MaxRuntime     time.Duration
	ProgressWindow time.Duration
	// NeedsApproval holds the task back until a person approves it (see
	// Approver); the graph's ApprovalPolicy may ask for it too.
	NeedsApproval bool
	// CreatedVia says how the task is created: ViaCLI, ViaTools, ViaMCP,
	// or "" — a word of at most 16 lowercase letters, digits and dashes.
	// The ApprovalPolicy may gate by it.
	CreatedVia string
	// Check names the check that must pass before the task completes,
	// and Acceptance lists what it must achieve, in words (see Extra);
	// "" and nil: none.
	Check      string
	Acceptance []string
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

	// Priority, if not nil, sets the priority.
	Priority *Priority
	// Labels, if not nil, replaces the task's labels (an empty slice
	// removes them all).
	Labels *[]string

	// NotBefore, Due, MaxAttempts and Backoff, if not nil, set the
	// task's schedule (see Task); a zero value clears it.
	NotBefore   *time.Time
	Due         *time.Time
	MaxAttempts *int
	Backoff     *time.Duration
	// MaxRuntime and ProgressWindow, if not nil, set the task's liveness
	// limits (see Extra); 0 clears one. A claim in progress is judged by
	// the new values from then on.
	MaxRuntime     *time.Duration
	ProgressWindow *time.Duration
	// AddLinks adds links (commits, pull requests, files, URLs) the task
	// does not carry yet (Extra.Links); adding one is progress, as a note
	// is (Task.Progress).
	AddLinks []string
	// Check and Acceptance, if not nil, set the task's check (by name)
	// and acceptance items (see Extra); "" and an empty slice clear them.
	Check      *string
	Acceptance *[]string

	// Parent, if not nil, makes the task a child of that task (one that
	// exists, not the task itself), or of none if it is 0: in the same
	// write the task leaves its old parent's BlockedBy and joins the new
	// one's, since a parent waits on its children (see NewTask.Parent). A
	// parent that is a descendant of the task closes a cycle, refused as
	// any edge that does (*CycleError).
	Parent *ID

	// IfRev, when non-zero, makes the update fail with ErrConflict unless
	// the task's current Rev equals it (optimistic concurrency).
	IfRev int64
}

// Completion is the result of completing a task.
type Completion struct {
	Task      Task
	Unblocked []Task // tasks this completion made ready, by id; not every ready task
}

// Board partitions a graph by what can happen next. Every task is in
// exactly one list, and each list is sorted by id.
type Board struct {
	Ready []Task // pending, every blocker exists and is completed; in claim order (Rules.ClaimOrder)
	// AwaitingApproval holds the pending tasks that wait for a person's
	// approval (Task.AwaitingApproval), whatever their blockers: no one
	// may claim them until they are approved (Approver); by id.
	AwaitingApproval []Task
	// Deferred holds the pending tasks whose blockers are all completed
	// but whose NotBefore is still to come: a deferred task, or a retry
	// waiting out its backoff. They become ready at NotBefore; by
	// NotBefore, then claim order.
	Deferred []Task
	// Limited holds the ready tasks that a concurrency limit holds back
	// (Limiter): a label they carry has as many tasks in progress as its
	// limit allows, counting the ready tasks ClaimNext would take before
	// them — of a Board filtered by labels (HasLabels) or Under, those a
	// ClaimNext with the same WithLabels or WithUnder would take. They
	// become ready as those finish; in claim order.
	Limited    []Task
	Blocked    []Task // pending, some blocker unfinished or missing, and not stranded
	InProgress []Task
	Completed  []Task
	Failed     []Task
	Cancelled  []Task
	// Stranded holds the pending tasks that cannot become ready as things
	// stand: a blocker is failed or cancelled, or is a pending task that
	// is itself stranded. Reopening the cause, or removing the edge,
	// frees them.
	Stranded []Task
	// StrandedBy maps each stranded task to the failed or cancelled task
	// that strands it (the lowest id if several do).
	StrandedBy map[ID]ID
	// Missing maps a blocked task to the blockers it names that do not exist.
	Missing map[ID][]ID
}

// Finished reports whether no work is left that can run: nothing is
// ready, awaiting approval, deferred, limited, blocked or in progress. Stranded tasks do not keep a graph
// unfinished (they cannot run until someone reopens their cause). When
// ClaimNext returns ErrNoReady, it tells a finished graph from one where
// work is blocked or held by others.
func (b Board) Finished() bool {
	return len(b.Ready) == 0 && len(b.AwaitingApproval) == 0 && len(b.Deferred) == 0 && len(b.Limited) == 0 && len(b.Blocked) == 0 && len(b.InProgress) == 0
}

// Stall returns a *StalledError (matching ErrStalled) naming the failed
// and stranded tasks when the graph is finished but not all done, and nil
// otherwise: when work is left, or every task completed or was cancelled.
func (b Board) Stall() error {
	if !b.Finished() || len(b.Failed) == 0 && len(b.Stranded) == 0 {
		return nil
	}
	id := func(t Task) ID { return t.ID }
	return &StalledError{Failed: slicesx.Map(b.Failed, id), Stranded: slicesx.Map(b.Stranded, id)}
}

// clone returns a deep copy of t that shares nothing mutable with it.
func (t Task) clone() Task {
	t.BlockedBy = slices.Clone(t.BlockedBy)
	t.Blocks = slices.Clone(t.Blocks)
	t.Metadata = jsonvalue.Clone(t.Metadata)
	t.Labels = slices.Clone(t.Labels)
	t.Notes = slices.Clone(t.Notes)
	t.History = slices.Clone(t.History)
	if t.Extra != nil {
		x := *t.Extra // its unknown fields and acceptance items are never modified in place, so they may be shared
		x.Links = slices.Clone(x.Links)
		t.Extra = &x
	}
	return t
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

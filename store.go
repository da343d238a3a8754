// The Store contract, and ops: the one implementation of its methods
// that the local stores share.

package taskgraph

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Store is a task graph that many agents may share. Every method is safe for
// concurrent use. Implementations: *FileStore (a directory of JSON files),
// *MemStore (memory only, for tests), and any backend that passes the
// taskgraphtest conformance suite.
//
// The outcome of a write: if a write returns nil, it happened (and, for a
// durable store, survives a crash). If it returns an error that does not
// match ErrUnknownOutcome, it did not happen: nothing of it is stored, and
// it may be retried as it is. An error matching ErrUnknownOutcome means
// the store could not tell — the write became visible but could not be
// made durable — and the caller must re-read before deciding to write
// again. A write is never stored in part.
//
// The commit point. Every write has one step whose failure leaves its
// outcome unknowable; before it a failure means the write did not happen
// (an error), and after it the write has happened (success), whatever
// fails: what is left is finished by the next operation, whose replay is
// idempotent. In a FileStore the commit point is the sync that makes the
// write durable: for a write of one file, the change log's fdatasync with
// group commit (and, for a new file, the directory's fsync before its
// record), the directory's fsync with the full protocol; for a write of
// several files, the directory's fsync that makes its journal durable —
// applying its files and removing the journal come after, and a store
// that cannot do them reads through the journal and refuses other writes,
// saying why. In pgstore it is the COMMIT. Only a failure of that step is
// ErrUnknownOutcome.
//
// Staleness is bounded: a read reflects every write that had returned,
// in any store of any process on the same graph, by the time the read
// began — and every write that got past its commit point in a process
// that died before returning. A long-lived store is as current as a fresh
// one. The one exception is a FileStore directory edited by a program that
// does not take its lock (a text editor, the reference's Python code): an
// edit in place of a task file reaches a long-lived store's List and Board
// only once an operation decides on that task (Get, Claim, Update and the
// other writes re-check the files they decide on) or the store rescans the
// directory for another reason; a file created, renamed or removed that
// way is seen by the next operation, unless it happened within the same
// tick of the filesystem's clock (a few milliseconds) as a write that
// takes the lock.
type Store interface {
	// Create adds a pending task and returns it with its new id. Every id in
	// BlockedBy and Blocks must exist, and every reference in After must
	// name an existing task; an edge that would close a cycle is refused
	// with a *CycleError and nothing is written. If NewTask.Key names an
	// existing task, Create returns that task as it is and writes nothing
	// (its fields are not compared): a create is safe to retry.
	Create(ctx context.Context, t NewTask) (Task, error)
	// CreatePlan creates many tasks at once, all or nothing, and returns
	// them in input order. Every task of a plan needs a Key, and names its
	// blockers in After by the keys of other tasks of the plan (or of
	// existing tasks, or by existing ids, "#12"); the new tasks get
	// consecutive ids in input order. The plan is checked for cycles as a
	// whole. A task whose key already exists is returned as it is and not
	// created again, so a plan is safe to retry; the others may name it.
	CreatePlan(ctx context.Context, tasks []NewTask) ([]Task, error)
	// Get returns one task.
	Get(ctx context.Context, id ID) (Task, error)
	// List returns the tasks that match every filter (all tasks without
	// one), by id, at most Limit of them.
	List(ctx context.Context, filters ...Filter) ([]Task, error)
	// Update applies a partial update. No task may enter InProgress or
	// Completed while a blocker is unfinished; a task enters Failed or
	// Cancelled only by Fail or Cancel, and leaves them only for Pending.
	Update(ctx context.Context, id ID, p Patch) (Task, error)
	// Claim moves a ready pending task to InProgress with owner. Claiming a
	// task someone else holds fails with a *ClaimedError, a blocked one
	// with a *BlockedError, a deferred one with a *DeferredError, one a
	// label's limit holds back with a *LimitError. Claiming a task one
	// already holds succeeds. A task whose lease lapsed may be claimed by
	// anyone; with MaxAttempts, the lapse uses an attempt, and if it used
	// the last, the task is failed instead and Claim returns a
	// *GaveUpError: the one error after which a write (the failure) has
	// happened.
	Claim(ctx context.Context, id ID, owner string, opts ...ClaimOption) (Task, error)
	// ClaimNext atomically claims the most urgent ready task (lowest
	// Priority), the first created among equals, then the lowest id
	// (Rules.ClaimOrder); if there is none, the first in that order whose
	// lease has expired. With WithLabels it considers only tasks that carry
	// all the labels, with WithUnder only the tasks under one; it passes
	// over deferred tasks and those a label's limit holds back. It returns
	// ErrNoReady when there is no such task. A lapsed task whose lapse
	// used its last attempt is failed on the way, durably, whatever
	// ClaimNext then returns.
	ClaimNext(ctx context.Context, owner string, opts ...ClaimOption) (Task, error)
	// Renew extends the lease of a task owner holds to ttl from now.
	Renew(ctx context.Context, id ID, owner string, ttl time.Duration) (Task, error)
	// Complete moves an InProgress task to Completed and reports the tasks
	// this made ready. If owner is not "", it must be the task's owner.
	// WithResult records a short text on the task for those who come
	// after.
	Complete(ctx context.Context, id ID, owner string, opts ...CompleteOption) (Completion, error)
	// Fail moves an InProgress task to Failed, recording why; reason must
	// not be empty. If owner is not "", it must be the task's owner. The
	// tasks that depend on it, directly or through other pending tasks,
	// become stranded (see Board) until it is reopened.
	Fail(ctx context.Context, id ID, owner, reason string) (Task, error)
	// Cancel moves a Pending or InProgress task to Cancelled, recording
	// why; reason must not be empty. Its dependents become stranded, as
	// with Fail.
	Cancel(ctx context.Context, id ID, reason string) (Task, error)
	// Reopen returns a Failed, Cancelled or Completed task to Pending,
	// clearing its owner, lease, reason and result. A completed task is
	// not reopened while a task it blocks is in progress or completed:
	// no task is started before its blockers are finished.
	Reopen(ctx context.Context, id ID) (Task, error)
	// Release returns an InProgress task to Pending and clears its owner.
	// If owner is not "", it must be the task's owner.
	Release(ctx context.Context, id ID, owner string) (Task, error)
	// Delete removes a task. It refuses while other tasks list it in
	// BlockedBy, unless Detach is given.
	Delete(ctx context.Context, id ID, opts ...DeleteOption) error
	// Board partitions the graph into ready, blocked, stranded,
	// in-progress, completed, failed and cancelled tasks. Filters select
	// the tasks each list shows (readiness is always judged on the whole
	// graph), and Limit caps each list.
	Board(ctx context.Context, filters ...Filter) (Board, error)
	// Close releases the store's resources. Later calls return ErrClosed.
	Close() error
}

// Loader is implemented by stores that can take tasks with the ids they
// already have: for import, and for moving a plan between stores with Copy.
type Loader interface {
	// Load adds tasks as they are — ids, statuses, owners, edges and
	// metadata kept — all or nothing. Every id must be higher than any id
	// the store has ever allocated, and every blocker must be among tasks
	// or already in the store; a cycle is refused with a *CycleError.
	Load(ctx context.Context, tasks []Task) error
}

// Copy copies every task of src into dst with its id and edges intact. dst
// is typically empty; see Loader for the rules.
func Copy(ctx context.Context, dst Loader, src Store) error {
	tasks, err := src.List(ctx)
	if err != nil {
		return fmt.Errorf("taskgraph: copy: %w", err)
	}
	return dst.Load(ctx, tasks)
}

// ClaimOption configures Claim and ClaimNext.
type ClaimOption func(*claimConfig)

type claimConfig struct {
	lease  time.Duration
	labels []string
	under  ID
}

// WithLease makes a claim lapse ttl after it is made unless the owner calls
// Renew: an agent that dies holding a task then does not hold it forever.
// Once the lease has expired anyone may claim the task; the previous owner
// is recorded in Task.PrevOwner. Claims without a lease never expire; a
// negative ttl is refused (Rules.Lease).
func WithLease(ttl time.Duration) ClaimOption {
	return func(c *claimConfig) { c.lease = ttl }
}

// WithLabels makes ClaimNext consider only tasks that carry every one of
// labels, so that an agent takes only the work meant for it. Given more
// than once, the labels add up. Claim, which names its task, does not
// select by them, but refuses malformed ones as ClaimNext does
// (Rules.ClaimOptions).
//
// Cost: without labels, ClaimNext in the in-memory graph (MemStore,
// FileStore) pops a heap, O(log n); with labels it scans the ready tasks,
// O(ready). pgstore runs one indexed statement either way.
func WithLabels(labels ...string) ClaimOption {
	return func(c *claimConfig) { c.labels = append(c.labels, labels...) }
}

// WithUnder makes ClaimNext consider only the tasks under parent: its
// children, their children, and so on (Task.Parent), so that an agent
// works inside one epic. A parent that does not exist is an error
// matching ErrNotFound, in every store.
func WithUnder(parent ID) ClaimOption {
	return func(c *claimConfig) { c.under = parent }
}

// ClaimSettings is what a set of ClaimOptions asks for, validated (see
// Rules.ClaimOptions): for Store implementations outside this package.
type ClaimSettings struct {
	Lease  time.Duration // 0: no lease
	Labels []string      // all of these, sorted; ClaimNext only
	Under  ID            // only tasks under this one (WithUnder); 0: any; ClaimNext only
}

// CompleteOption configures Complete.
type CompleteOption func(*completeConfig)

type completeConfig struct {
	result   string
	evidence *Evidence
	skip     bool
}

// WithResult records text on the completed task, in Task.Result: a short
// account of what was done, for the agents that take the tasks it
// unblocks.
func WithResult(text string) CompleteOption {
	return func(c *completeConfig) { c.result = text }
}

// CompleteSettings is what a set of CompleteOptions asks for, validated
// (see Rules.CompleteOptions): for Store implementations outside this
// package.
type CompleteSettings struct {
	Result    string    // "": none
	Evidence  *Evidence // the run of the task's check (WithEvidence); nil: none
	SkipCheck bool      // complete a task with a check without evidence (SkipCheck)
}

// Filter selects tasks for List and Board. Filters combine: a task is
// listed if it matches all of them.
type Filter func(*filterConfig)

type filterConfig struct {
	under     ID
	now       time.Time
	limits    map[string]int
	statuses  []Status
	owner     *string
	labels    []string
	readyOnly bool
	limit     int
}

// WithStatus selects the tasks in one of statuses. Given more than once,
// the statuses add up.
func WithStatus(statuses ...Status) Filter {
	return func(c *filterConfig) { c.statuses = append(c.statuses, statuses...) }
}

// WithOwner selects the tasks whose owner is owner; WithOwner("") selects
// the tasks that have none.
func WithOwner(owner string) Filter {
	return func(c *filterConfig) { c.owner = &owner }
}

// HasLabels selects the tasks that carry every one of labels. (The same
// selection for ClaimNext is the ClaimOption WithLabels.)
func HasLabels(labels ...string) Filter {
	return func(c *filterConfig) { c.labels = append(c.labels, labels...) }
}

// ReadyOnly selects the ready tasks: pending, with every blocker
// completed.
func ReadyOnly() Filter {
	return func(c *filterConfig) { c.readyOnly = true }
}

// Limit caps what List returns, and each list of a Board, at n tasks: the
// lowest ids, but for Board.Ready the first in claim order (the ones
// ClaimNext would take first); n <= 0 means no limit. A capped list says nothing of what it
// left out: count with a List without the limit.
func Limit(n int) Filter {
	return func(c *filterConfig) { c.limit = max(n, 0) }
}

// Under selects the tasks under parent: its children, their children,
// and so on (Task.Parent). A store's Board and List refuse a parent that
// does not exist (ErrNotFound), which would otherwise select nothing and
// read as all done; Resolve, which has no store to ask, selects nothing.
func Under(parent ID) Filter {
	return func(c *filterConfig) { c.under = parent }
}

// AsOf makes Board (and Resolve) judge which pending tasks are deferred
// (Task.NotBefore) as of t, instead of the store's clock: for Store
// implementations that keep time elsewhere (pgstore passes the
// database's) and for tests. It selects nothing by itself.
func AsOf(t time.Time) Filter {
	return func(c *filterConfig) { c.now = t }
}

// Selection is what a set of filters selects, validated (see
// Rules.Filters): for Store implementations outside this package, which
// run the selection in their own query language.
type Selection struct {
	Statuses  []Status // any of these; none: any status
	Owner     *string  // nil: any owner
	Labels    []string // all of these, sorted
	ReadyOnly bool
	Limit     int // 0: no limit
	// Now is when deferral is judged (AsOf); zero: the store's clock, and
	// for Resolve, time.Now.
	Now time.Time
	// Limits are the concurrency limits Board holds ready tasks back by
	// (WithLimits); nil: the store's own.
	Limits map[string]int
	// Under selects the tasks under this one (Under); 0: any. Match
	// cannot judge it alone: the stores walk the Parent links.
	Under ID
}

// Empty reports whether the selection selects every task.
func (s Selection) Empty() bool {
	return len(s.Statuses) == 0 && s.Owner == nil && len(s.Labels) == 0 && !s.ReadyOnly && s.Limit == 0 && s.Under == 0
}

// Match reports whether task t, which is ready or not, is selected
// (regardless of Limit).
func (s Selection) Match(t *Task, ready bool) bool {
	if len(s.Statuses) > 0 && !slices.Contains(s.Statuses, t.Status) {
		return false
	}
	if s.Owner != nil && t.Owner != *s.Owner {
		return false
	}
	if s.ReadyOnly && !ready {
		return false
	}
	return hasLabels(t.Labels, s.Labels)
}

// hasLabels reports whether the sorted set have holds every label of the
// sorted set want.
func hasLabels(have, want []string) bool {
	i := 0
	for _, w := range want {
		for i < len(have) && have[i] < w {
			i++
		}
		if i == len(have) || have[i] != w {
			return false
		}
	}
	return true
}

// DeleteOption configures Delete.
type DeleteOption func(*deleteConfig)

type deleteConfig struct{ detach bool }

// Detach lets Delete remove a task that others depend on: the deleted id is
// removed from their BlockedBy in the same all-or-nothing write.
func Detach() DeleteOption {
	return func(c *deleteConfig) { c.detach = true }
}

// DeleteSettings is what a set of DeleteOptions asks for (see
// Rules.DeleteOptions): for Store implementations outside this package.
type DeleteSettings struct {
	Detach bool
}

// engine runs plans against a graph under whatever exclusion a store has.
type engine interface {
	// write makes a plan under the write lock, persists and applies it, and
	// calls done under the same lock with the updated graph. kind says
	// whether the plan can be a write of one existing task, which a
	// FileStore may decide ahead of the lock (ahead.go).
	write(ctx context.Context, kind writeKind, mk func(g *graph, now time.Time) (*plan, error), done func(g *graph, p *plan)) error
	// read calls fn with a current graph under at least a shared lock;
	// the tasks named in check are re-checked against their files first.
	read(ctx context.Context, check []ID, fn func(g *graph) error) error
	// now is the store's clock (WithClock).
	now() time.Time
}

// writeKind says what a write can be.
type writeKind int

const (
	writeAny     writeKind = iota // creates, plans, deletes, loads
	writeOneTask                  // at most one existing task changed
)

// ops implements the Store methods once, over any engine, so that every
// store has exactly the same rules and errors.
type ops struct{ e engine }

var (
	_ Store   = (*FileStore)(nil)
	_ Loader  = (*FileStore)(nil)
	_ Watcher = (*FileStore)(nil)
	_ Store   = (*MemStore)(nil)
	_ Loader  = (*MemStore)(nil)
	_ Watcher = (*MemStore)(nil)
	_ Noter   = (*FileStore)(nil)
	_ Noter   = (*MemStore)(nil)
	_ Limiter = (*FileStore)(nil)
	_ Limiter = (*MemStore)(nil)
)

// checked makes a plan with mk, records the write key of ctx in it
// (recordKey) and runs Rules.Stored on every task it stores: every write
// goes through it. The files it encoded to check them
// stay with the plan (plan.files).
func checked(ctx context.Context, mk func(g *graph, now time.Time) (*plan, error)) func(g *graph, now time.Time) (*plan, error) {
	return func(g *graph, now time.Time) (*plan, error) {
		p, err := mk(g, now)
		if err != nil {
			return nil, err
		}
		if err := recordKey(ctx, p, now); err != nil {
			return nil, err
		}
		p.files = make([][]byte, len(p.put))
		for i, t := range p.put {
			if p.files[i], err = storedFile(t); err != nil {
				return nil, err
			}
		}
		return p, nil
	}
}

func (o ops) Create(ctx context.Context, nt NewTask) (Task, error) {
	return o.writeTask(ctx, writeAny, func(g *graph, now time.Time) (*plan, error) { return g.planCreate(nt, now) })
}

func (o ops) Get(ctx context.Context, id ID) (Task, error) {
	var t Task
	err := o.e.read(ctx, []ID{id}, func(g *graph) error {
		if _, err := g.get(id); err != nil {
			return err
		}
		t = g.view(id)
		return nil
	})
	return t, err
}

func (o ops) CreatePlan(ctx context.Context, nts []NewTask) ([]Task, error) {
	var out []Task
	err := o.e.write(ctx, writeAny, checked(ctx, func(g *graph, now time.Time) (*plan, error) {
		return g.planCreatePlan(nts, now)
	}), func(g *graph, p *plan) {
		out = make([]Task, len(p.ids))
		for i, id := range p.ids {
			out[i] = g.view(id)
		}
	})
	return out, err
}

func (o ops) List(ctx context.Context, filters ...Filter) ([]Task, error) {
	return readSelection(ctx, o, filters, (*graph).list)
}

// readSelection validates filters, then reads what view returns of the
// tasks they select.
func readSelection[T any](ctx context.Context, o ops, filters []Filter, view func(*graph, Selection) T) (T, error) {
	var out T
	sel, err := Rules.Filters(filters)
	if err != nil {
		return out, err
	}
	if sel.Now.IsZero() {
		sel.Now = o.e.now()
	}
	err = o.e.read(ctx, nil, func(g *graph) error {
		if err := g.parent(sel.Under); err != nil {
			return err
		}
		out = view(g, sel)
		return g.brokenErr()
	})
	return out, err
}

func (o ops) Update(ctx context.Context, id ID, p Patch) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planUpdate(id, p, now) })
}

func (o ops) Claim(ctx context.Context, id ID, owner string, opts ...ClaimOption) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) {
		set, err := Rules.ClaimOptions(opts)
		if err != nil {
			return nil, err
		}
		return g.planClaim(id, owner, set.Lease, now)
	})
}

func (o ops) ClaimNext(ctx context.Context, owner string, opts ...ClaimOption) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) {
		set, err := Rules.ClaimOptions(opts)
		if err != nil {
			return nil, err
		}
		return g.planClaimNext(owner, set.Lease, set.Labels, set.Under, now)
	})
}

func (o ops) Renew(ctx context.Context, id ID, owner string, ttl time.Duration) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planRenew(id, owner, ttl, now) })
}

func (o ops) Complete(ctx context.Context, id ID, owner string, opts ...CompleteOption) (Completion, error) {
	var c Completion
	err := o.e.write(ctx, writeOneTask, checked(ctx, func(g *graph, now time.Time) (*plan, error) {
		set, err := Rules.CompleteOptions(opts)
		if err != nil {
			return nil, err
		}
		return g.planComplete(id, owner, set, now)
	}), func(g *graph, p *plan) {
		c.Task = g.view(id)
		for _, d := range g.dependents[id] {
			if g.isReady(d) {
				c.Unblocked = append(c.Unblocked, g.view(d))
			}
		}
	})
	return c, err
}

func (o ops) Fail(ctx context.Context, id ID, owner, reason string) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planFail(id, owner, reason, now) })
}

func (o ops) Cancel(ctx context.Context, id ID, reason string) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planCancel(id, reason, now) })
}

func (o ops) Reopen(ctx context.Context, id ID) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planReopen(id, now) })
}

func (o ops) Note(ctx context.Context, id ID, author, text string) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planNote(id, author, text, now) })
}

func (o ops) Release(ctx context.Context, id ID, owner string) (Task, error) {
	return o.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planRelease(id, owner, now) })
}

func (o ops) Delete(ctx context.Context, id ID, opts ...DeleteOption) error {
	return o.e.write(ctx, writeAny, checked(ctx, func(g *graph, now time.Time) (*plan, error) {
		set, err := Rules.DeleteOptions(opts)
		if err != nil {
			return nil, err
		}
		return g.planDelete(id, set.Detach, now)
	}), func(*graph, *plan) {})
}

func (o ops) Load(ctx context.Context, tasks []Task) error {
	return o.e.write(ctx, writeAny, checked(ctx, func(g *graph, now time.Time) (*plan, error) {
		return g.planLoad(tasks, now)
	}), func(*graph, *plan) {})
}

func (o ops) Board(ctx context.Context, filters ...Filter) (Board, error) {
	return readSelection(ctx, o, filters, (*graph).board)
}

func (o ops) writeTask(ctx context.Context, kind writeKind, mk func(g *graph, now time.Time) (*plan, error)) (Task, error) {
	var t Task
	var after error
	err := o.e.write(ctx, kind, checked(ctx, mk), func(g *graph, p *plan) { t, after = g.view(p.result), p.after })
	if err == nil && after != nil {
		return Task{}, after
	}
	return t, err
}

// applyOptions returns the configuration that opts set.
func applyOptions[C any, O ~func(*C)](opts []O) C {
	var c C
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Event is a change to a task graph seen by Watch, or the end of a watch.
type Event struct {
	Kind EventKind
	Task Task // the task as it is now; for Deleted, as it was last seen
	// Err says why a watch ended, on its last event, of kind Ended: it
	// matches ErrClosed if the store was closed, and is the failure that
	// stopped the watch otherwise. It is nil on every other event.
	Err error
}

// EventKind says what happened to a task.
type EventKind string

// The kinds of Event.
const (
	Created   EventKind = "created"
	Updated   EventKind = "updated"
	Deleted   EventKind = "deleted"
	Unblocked EventKind = "unblocked" // became ready: pending with every blocker completed
	// Lapsed reports that a claim lapsed — its lease expired, or its max
	// runtime or no-progress window ran out, which Task.Lapse of the
	// event's task names — and anyone may now claim the task. Nothing was
	// written; the watcher computes it from the task.
	Lapsed EventKind = "lapsed"
	// Undeferred reports that a deferred task's NotBefore has come (a
	// deferral, or a retry's backoff): it is ready now unless a blocker
	// keeps it waiting. Nothing was written; the watcher computes it.
	Undeferred EventKind = "undeferred"
	// Ended is the last event of a watch that ended for a reason other
	// than its context: Event.Err says why, and Task is empty. A watch
	// whose context is done sends no Ended event (ctx.Err() says why).
	Ended EventKind = "ended"
)

// Watcher is implemented by stores that can report changes as they happen,
// including changes made by other processes.
type Watcher interface {
	// Watch reports every change to the graph until ctx is done, the
	// store is closed, or the watch fails; then it closes the channel.
	// Unless ctx is done, the last event before the close is of kind
	// Ended, with the reason in Event.Err (ErrClosed when the store was
	// closed). Watch on a closed store returns ErrClosed.
	Watch(ctx context.Context) (<-chan Event, error)
}

package taskgraph

import (
	"context"
	"fmt"
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
	// BlockedBy and Blocks must exist; an edge that would close a cycle is
	// refused with a *CycleError and nothing is written.
	Create(ctx context.Context, t NewTask) (Task, error)
	// Get returns one task.
	Get(ctx context.Context, id ID) (Task, error)
	// List returns every task, by id.
	List(ctx context.Context) ([]Task, error)
	// Update applies a partial update. No task may enter InProgress or
	// Completed while a blocker is unfinished.
	Update(ctx context.Context, id ID, p Patch) (Task, error)
	// Claim moves a ready pending task to InProgress with owner. Claiming a
	// task someone else holds fails with a *ClaimedError, a blocked one
	// with a *BlockedError. Claiming a task one already holds succeeds.
	Claim(ctx context.Context, id ID, owner string, opts ...ClaimOption) (Task, error)
	// ClaimNext atomically claims the ready task with the lowest id; if
	// there is none, the task with the lowest id whose lease has expired.
	// It returns ErrNoReady when there is neither.
	ClaimNext(ctx context.Context, owner string, opts ...ClaimOption) (Task, error)
	// Renew extends the lease of a task owner holds to ttl from now.
	Renew(ctx context.Context, id ID, owner string, ttl time.Duration) (Task, error)
	// Complete moves an InProgress task to Completed and reports the tasks
	// this made ready. If owner is not "", it must be the task's owner.
	Complete(ctx context.Context, id ID, owner string) (Completion, error)
	// Release returns an InProgress task to Pending and clears its owner.
	// If owner is not "", it must be the task's owner.
	Release(ctx context.Context, id ID, owner string) (Task, error)
	// Delete removes a task. It refuses while other tasks list it in
	// BlockedBy, unless Detach is given.
	Delete(ctx context.Context, id ID, opts ...DeleteOption) error
	// Board partitions the graph into ready, blocked, in-progress and
	// completed tasks.
	Board(ctx context.Context) (Board, error)
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

type claimConfig struct{ lease time.Duration }

// WithLease makes a claim lapse ttl after it is made unless the owner calls
// Renew: an agent that dies holding a task then does not hold it forever.
// Once the lease has expired anyone may claim the task; the previous owner
// is recorded in Task.PrevOwner. Claims without a lease never expire.
func WithLease(ttl time.Duration) ClaimOption {
	return func(c *claimConfig) { c.lease = ttl }
}

// LeaseOf returns the lease that opts ask for, or 0 for none. It is for
// Store implementations outside this package.
func LeaseOf(opts []ClaimOption) time.Duration { return applyOptions[claimConfig](opts).lease }

// DeleteOption configures Delete.
type DeleteOption func(*deleteConfig)

type deleteConfig struct{ detach bool }

// Detach lets Delete remove a task that others depend on: the deleted id is
// removed from their BlockedBy in the same all-or-nothing write.
func Detach() DeleteOption {
	return func(c *deleteConfig) { c.detach = true }
}

// DetachOf reports whether opts include Detach. It is for Store
// implementations outside this package.
func DetachOf(opts []DeleteOption) bool { return applyOptions[deleteConfig](opts).detach }

// engine runs plans against a graph under whatever exclusion a store has.
type engine interface {
	// write makes a plan under the write lock, persists and applies it, and
	// calls done under the same lock with the updated graph.
	write(ctx context.Context, mk func(g *graph, now time.Time) (*plan, error), done func(g *graph, p *plan)) error
	// read calls fn with a current graph under at least a shared lock;
	// the tasks named in check are re-checked against their files first.
	read(ctx context.Context, check []ID, fn func(g *graph) error) error
}

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
)

// checked makes a plan with mk and runs Rules.Stored on every task it
// stores: every write goes through it.
func checked(mk func(g *graph, now time.Time) (*plan, error)) func(g *graph, now time.Time) (*plan, error) {
	return func(g *graph, now time.Time) (*plan, error) {
		p, err := mk(g, now)
		if err != nil {
			return nil, err
		}
		for _, t := range p.put {
			if err := Rules.Stored(t); err != nil {
				return nil, err
			}
		}
		return p, nil
	}
}

func (o ops) Create(ctx context.Context, nt NewTask) (Task, error) {
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planCreate(nt, now) })
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

func (o ops) List(ctx context.Context) ([]Task, error) {
	var ts []Task
	err := o.e.read(ctx, nil, func(g *graph) error {
		ts = g.list()
		return g.brokenErr()
	})
	return ts, err
}

func (o ops) Update(ctx context.Context, id ID, p Patch) (Task, error) {
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planUpdate(id, p, now) })
}

func (o ops) Claim(ctx context.Context, id ID, owner string, opts ...ClaimOption) (Task, error) {
	c := applyOptions[claimConfig](opts)
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planClaim(id, owner, c.lease, now) })
}

func (o ops) ClaimNext(ctx context.Context, owner string, opts ...ClaimOption) (Task, error) {
	c := applyOptions[claimConfig](opts)
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planClaimNext(owner, c.lease, now) })
}

func (o ops) Renew(ctx context.Context, id ID, owner string, ttl time.Duration) (Task, error) {
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planRenew(id, owner, ttl, now) })
}

func (o ops) Complete(ctx context.Context, id ID, owner string) (Completion, error) {
	var c Completion
	err := o.e.write(ctx, checked(func(g *graph, now time.Time) (*plan, error) {
		return g.planComplete(id, owner, now)
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

func (o ops) Release(ctx context.Context, id ID, owner string) (Task, error) {
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planRelease(id, owner, now) })
}

func (o ops) Delete(ctx context.Context, id ID, opts ...DeleteOption) error {
	detach := DetachOf(opts)
	return o.e.write(ctx, checked(func(g *graph, now time.Time) (*plan, error) {
		return g.planDelete(id, detach, now)
	}), func(*graph, *plan) {})
}

func (o ops) Load(ctx context.Context, tasks []Task) error {
	return o.e.write(ctx, checked(func(g *graph, now time.Time) (*plan, error) {
		return g.planLoad(tasks, now)
	}), func(*graph, *plan) {})
}

func (o ops) Board(ctx context.Context) (Board, error) {
	var b Board
	err := o.e.read(ctx, nil, func(g *graph) error {
		b = g.board()
		return g.brokenErr()
	})
	return b, err
}

func (o ops) writeTask(ctx context.Context, mk func(g *graph, now time.Time) (*plan, error)) (Task, error) {
	var t Task
	err := o.e.write(ctx, checked(mk), func(g *graph, p *plan) { t = g.view(p.result) })
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
	// Lapsed reports that a claim's lease expired: anyone may now claim the
	// task. Nothing was written; the watcher computes it from the lease.
	Lapsed EventKind = "lapsed"
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

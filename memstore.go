// MemStore: the in-memory Store, for tests of code that takes a Store.

package taskgraph

import (
	"context"
	"sync"
	"time"
)

// MemStore is a Store that keeps the graph in memory only, with exactly the
// rules and errors of FileStore. Use it in the unit tests of code that takes
// a Store.
type MemStore struct {
	cfg    config
	mu     sync.Mutex
	g      *graph
	closed bool
	done   chan struct{} // closed by Close, ending every Watch
	hub    hub
	approvals
}

// NewMemStore returns an empty in-memory store. Only WithClock affects it.
func NewMemStore(opts ...Option) *MemStore {
	m := &MemStore{cfg: newConfig(opts), g: newGraph(), done: make(chan struct{})}
	m.approvals = approvals{e: m, setPolicy: func(ctx context.Context, p ApprovalPolicy) error {
		return m.read(ctx, nil, func(g *graph) error { g.approval = p; return nil })
	}}
	return m
}

func (m *MemStore) write(ctx context.Context, _ writeKind, mk func(*graph, time.Time) (*plan, error), done func(*graph, *plan)) error {
	return m.read(ctx, nil, func(g *graph) error {
		p, err := mk(g, m.cfg.now().UTC())
		if err != nil {
			return err
		}
		m.hub.change(g, p.changedIDs(), func() { g.apply(p) })
		done(g, p)
		return nil
	})
}

func (m *MemStore) now() time.Time { return m.cfg.now().UTC() }

func (m *MemStore) read(ctx context.Context, _ []ID, fn func(*graph) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	return fn(m.g)
}

// Close discards the graph.
func (m *MemStore) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.closed {
		m.closed = true
		close(m.done)
	}
	return nil
}

// Watch reports every change to the graph, and every lease that lapses,
// until ctx is done or the store is closed; then it closes the channel. A
// task written several times while the receiver is busy is reported once,
// with its latest content. See [Watcher].
func (m *MemStore) Watch(ctx context.Context) (<-chan Event, error) {
	var ch <-chan Event
	err := m.read(ctx, nil, func(g *graph) error {
		// Subscribed under the lock: no write falls between the
		// starting view and the first event.
		ch, _ = m.hub.watch(ctx, g.timedTasks(), m.cfg.now, m.done)
		return nil
	})
	return ch, err
}

// The Store methods of MemStore. Each runs the shared implementation (ops) under the store's mutex.

// Create adds a pending task; see [Store.Create].
func (m *MemStore) Create(ctx context.Context, nt NewTask) (Task, error) {
	return ops{m}.Create(ctx, nt)
}

// Get returns one task; see [Store.Get].
func (m *MemStore) Get(ctx context.Context, id ID) (Task, error) { return ops{m}.Get(ctx, id) }

// CreatePlan creates many tasks at once, all or nothing; see [Store.CreatePlan].
func (m *MemStore) CreatePlan(ctx context.Context, tasks []NewTask) ([]Task, error) {
	return ops{m}.CreatePlan(ctx, tasks)
}

// List returns the tasks that match filters, by id; see [Store.List].
func (m *MemStore) List(ctx context.Context, filters ...Filter) ([]Task, error) {
	return ops{m}.List(ctx, filters...)
}

// Update applies a partial update; see [Store.Update].
func (m *MemStore) Update(ctx context.Context, id ID, p Patch) (Task, error) {
	return ops{m}.Update(ctx, id, p)
}

// Claim moves a ready task to InProgress under owner; see [Store.Claim].
func (m *MemStore) Claim(ctx context.Context, id ID, owner string, opts ...ClaimOption) (Task, error) {
	return ops{m}.Claim(ctx, id, owner, opts...)
}

// ClaimNext claims the first ready task in claim order
// ([Rulebook.ClaimOrder]); see [Store.ClaimNext] and [WithLabels].
func (m *MemStore) ClaimNext(ctx context.Context, owner string, opts ...ClaimOption) (Task, error) {
	return ops{m}.ClaimNext(ctx, owner, opts...)
}

// SetLimit caps the tasks carrying label that may be in progress at once;
// see [Limiter].
func (m *MemStore) SetLimit(ctx context.Context, label string, n int) error {
	if err := Rules.LimitArgs(label, n); err != nil {
		return err
	}
	return m.read(ctx, nil, func(g *graph) error {
		limits := copyLimits(g.limits)
		if n == 0 {
			delete(limits, label)
		} else {
			limits[label] = n
		}
		g.limits = limits
		return nil
	})
}

// Limits returns the concurrency limits by label; see [Limiter].
func (m *MemStore) Limits(ctx context.Context) (map[string]int, error) {
	var out map[string]int
	err := m.read(ctx, nil, func(g *graph) error {
		out = copyLimits(g.limits)
		return nil
	})
	return out, err
}

// SetLivenessDefault sets label's default liveness; see
// [LivenessDefaulter].
func (m *MemStore) SetLivenessDefault(ctx context.Context, label string, d LivenessDefault) error {
	if err := Rules.LivenessDefaultArgs(label, d); err != nil {
		return err
	}
	return m.read(ctx, nil, func(g *graph) error {
		g.liveness = withDefault(g.liveness, label, d)
		return nil
	})
}

// LivenessDefaults returns the liveness defaults by label; see
// [LivenessDefaulter].
func (m *MemStore) LivenessDefaults(ctx context.Context) (map[string]LivenessDefault, error) {
	var out map[string]LivenessDefault
	err := m.read(ctx, nil, func(g *graph) error {
		out = copyLiveness(g.liveness)
		return nil
	})
	return out, err
}

// Note appends a note to a task; see [Noter].
func (m *MemStore) Note(ctx context.Context, id ID, author, text string) (Task, error) {
	return ops{m}.Note(ctx, id, author, text)
}

// Renew extends the lease of a task owner holds; see [Store.Renew].
func (m *MemStore) Renew(ctx context.Context, id ID, owner string, ttl time.Duration) (Task, error) {
	return ops{m}.Renew(ctx, id, owner, ttl)
}

// Complete finishes a task and reports what it unblocked; see [Store.Complete].
func (m *MemStore) Complete(ctx context.Context, id ID, owner string, opts ...CompleteOption) (Completion, error) {
	return ops{m}.Complete(ctx, id, owner, opts...)
}

// Fail records that a task in progress failed; see [Store.Fail].
func (m *MemStore) Fail(ctx context.Context, id ID, owner, reason string) (Task, error) {
	return ops{m}.Fail(ctx, id, owner, reason)
}

// Cancel records that a task will not be done; see [Store.Cancel].
func (m *MemStore) Cancel(ctx context.Context, id ID, reason string) (Task, error) {
	return ops{m}.Cancel(ctx, id, reason)
}

// Reopen returns a finished task to Pending; see [Store.Reopen].
func (m *MemStore) Reopen(ctx context.Context, id ID) (Task, error) {
	return ops{m}.Reopen(ctx, id)
}

// Release returns a claimed task to Pending; see [Store.Release].
func (m *MemStore) Release(ctx context.Context, id ID, owner string) (Task, error) {
	return ops{m}.Release(ctx, id, owner)
}

// Delete removes a task; see [Store.Delete].
func (m *MemStore) Delete(ctx context.Context, id ID, opts ...DeleteOption) error {
	return ops{m}.Delete(ctx, id, opts...)
}

// Board partitions the graph by state; see [Store.Board].
func (m *MemStore) Board(ctx context.Context, filters ...Filter) (Board, error) {
	return ops{m}.Board(ctx, filters...)
}

// Load adds tasks with their ids, all or nothing; see [Loader].
func (m *MemStore) Load(ctx context.Context, tasks []Task) error { return ops{m}.Load(ctx, tasks) }

package taskgraph

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/gofrs/flock"
)

// Store is a task graph that many agents may share. Every method is safe for
// concurrent use. Implementations: *FileStore (a directory of JSON files),
// *MemStore (memory only, for tests), and any backend that passes the
// taskgraphtest conformance suite.
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
func LeaseOf(opts []ClaimOption) time.Duration { return claimOptions(opts).lease }

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
func DetachOf(opts []DeleteOption) bool { return deleteOptions(opts).detach }

func deleteOptions(opts []DeleteOption) deleteConfig {
	var c deleteConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Option configures Open and NewMemStore.
type Option func(*config)

type config struct {
	now      func() time.Time
	noSync   bool
	filePerm uint32
}

func newConfig(opts []Option) config {
	c := config{now: time.Now, filePerm: 0o644}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithClock replaces time.Now, for tests of leases and timestamps.
func WithClock(now func() time.Time) Option {
	return func(c *config) { c.now = now }
}

// WithoutSync skips every fsync. Writes stay atomic (a reader never sees a
// half-written file) but are no longer durable: a power loss or kernel crash
// may lose or reorder recent writes. Use it for tests and throwaway plans.
func WithoutSync() Option {
	return func(c *config) { c.noSync = true }
}

// WithFilePerm sets the permission bits of new task files (default 0644,
// reduced by the umask).
func WithFilePerm(perm uint32) Option {
	return func(c *config) { c.filePerm = perm & 0o777 }
}

// plan is a validated mutation: the new versions of the tasks it writes and
// the ids it deletes. read lists the tasks whose current content the
// decision depended on, so a FileStore can prove them current first.
type plan struct {
	put    []*Task
	del    []ID
	read   []ID
	result ID
}

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
	c := claimOptions(opts)
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planClaim(id, owner, c.lease, now) })
}

func (o ops) ClaimNext(ctx context.Context, owner string, opts ...ClaimOption) (Task, error) {
	c := claimOptions(opts)
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planClaimNext(owner, c.lease, now) })
}

func (o ops) Renew(ctx context.Context, id ID, owner string, ttl time.Duration) (Task, error) {
	return o.writeTask(ctx, func(g *graph, now time.Time) (*plan, error) { return g.planRenew(id, owner, ttl, now) })
}

func (o ops) Complete(ctx context.Context, id ID, owner string) (Completion, error) {
	var c Completion
	err := o.e.write(ctx, func(g *graph, now time.Time) (*plan, error) {
		return g.planComplete(id, owner, now)
	}, func(g *graph, p *plan) {
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
	return o.e.write(ctx, func(g *graph, now time.Time) (*plan, error) {
		return g.planDelete(id, detach, now)
	}, func(*graph, *plan) {})
}

func (o ops) Load(ctx context.Context, tasks []Task) error {
	return o.e.write(ctx, func(g *graph, now time.Time) (*plan, error) {
		return g.planLoad(tasks, now)
	}, func(*graph, *plan) {})
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
	err := o.e.write(ctx, mk, func(g *graph, p *plan) { t = g.view(p.result) })
	return t, err
}

func claimOptions(opts []ClaimOption) claimConfig {
	var c claimConfig
	for _, o := range opts {
		o(&c)
	}
	return c
}

// The rules. Each plan function validates against the graph as it is and
// returns the new versions of the tasks to write; it never changes g.

func (g *graph) get(id ID) (*Task, error) {
	if t := g.tasks[id]; t != nil {
		return t, nil
	}
	if err := g.broken[id]; err != nil {
		return nil, err
	}
	if id <= 0 {
		return nil, &InvalidError{Field: "id", Reason: fmt.Sprintf("%d is not a positive task id", id)}
	}
	return nil, &NotFoundError{ID: id}
}

// brokenErr reports every corrupt file, or nil.
func (g *graph) brokenErr() error {
	if len(g.broken) == 0 {
		return nil
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(g.broken)) {
		errs = append(errs, g.broken[id])
	}
	return errors.Join(errs...)
}

// edit returns a copy of task id to modify, with Rev and UpdatedAt advanced.
func (g *graph) edit(id ID, now time.Time) (*Task, error) {
	t, err := g.get(id)
	if err != nil {
		return nil, err
	}
	c := t.clone()
	c.Rev++
	c.UpdatedAt = now
	return &c, nil
}

// checkEdges validates the blockers named by a write.
func (g *graph) checkEdges(self ID, field string, ids []ID) error {
	for _, b := range ids {
		if b == self {
			return &InvalidError{Field: field, Reason: fmt.Sprintf("task %d cannot block itself", self)}
		}
		if _, err := g.get(b); err != nil {
			return err
		}
	}
	return nil
}

func (g *graph) planCreate(nt NewTask, now time.Time) (*plan, error) {
	if nt.Subject == "" {
		return nil, &InvalidError{Field: "subject", Reason: "must not be empty"}
	}
	id := g.maxID + 1
	meta, err := normalizeMetadata(nt.Metadata)
	if err != nil {
		return nil, err
	}
	if err := g.checkEdges(id, "blockedBy", nt.BlockedBy); err != nil {
		return nil, err
	}
	if err := g.checkEdges(id, "blocks", nt.Blocks); err != nil {
		return nil, err
	}
	t := &Task{
		ID: id, Subject: nt.Subject, Description: nt.Description, Status: Pending, Owner: nt.Owner,
		BlockedBy: addIDs(nil, nt.BlockedBy), Metadata: meta,
		CreatedAt: now, UpdatedAt: now, Rev: 1,
	}
	p := &plan{put: []*Task{t}, read: slices.Clone(nt.BlockedBy), result: id}
	for _, d := range nt.Blocks {
		dt, _ := g.edit(d, now)
		dt.BlockedBy = addIDs(dt.BlockedBy, []ID{id})
		p.put = append(p.put, dt)
		p.read = append(p.read, d)
	}
	return p, newOverlay(g, p.put, nil).checkNewEdges()
}

func (g *graph) planUpdate(id ID, pa Patch, now time.Time) (*plan, error) {
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	if pa.IfRev != 0 && pa.IfRev != t.Rev-1 {
		return nil, &ConflictError{ID: id, Want: pa.IfRev, Got: t.Rev - 1}
	}
	p := &plan{put: []*Task{t}, read: []ID{id}, result: id}
	if pa.Subject != nil {
		if *pa.Subject == "" {
			return nil, &InvalidError{Field: "subject", Reason: "must not be empty"}
		}
		t.Subject = *pa.Subject
	}
	if pa.Description != nil {
		t.Description = *pa.Description
	}
	if pa.Owner != nil {
		t.Owner = *pa.Owner
	}
	if err := g.checkEdges(id, "addBlockedBy", pa.AddBlockedBy); err != nil {
		return nil, err
	}
	if err := g.checkEdges(id, "addBlocks", pa.AddBlocks); err != nil {
		return nil, err
	}
	t.BlockedBy = addIDs(t.BlockedBy, pa.AddBlockedBy)
	t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b ID) bool { return slices.Contains(pa.RemoveBlockedBy, b) })
	others := map[ID]*Task{}
	other := func(d ID) (*Task, error) {
		if ot := others[d]; ot != nil {
			return ot, nil
		}
		ot, err := g.edit(d, now)
		if err != nil {
			return nil, err
		}
		others[d] = ot
		p.put = append(p.put, ot)
		p.read = append(p.read, d)
		return ot, nil
	}
	for _, d := range pa.AddBlocks {
		ot, _ := other(d)
		ot.BlockedBy = addIDs(ot.BlockedBy, []ID{id})
	}
	for _, d := range pa.RemoveBlocks {
		if dt := g.tasks[d]; dt == nil || !slices.Contains(dt.BlockedBy, id) {
			continue
		}
		ot, err := other(d)
		if err != nil {
			return nil, err
		}
		ot.BlockedBy = slices.DeleteFunc(ot.BlockedBy, func(b ID) bool { return b == id })
	}
	if pa.Metadata != nil {
		if t.Metadata == nil {
			t.Metadata = map[string]any{}
		}
		set, err := normalizeMetadata(pa.Metadata)
		if err != nil {
			return nil, err
		}
		for k := range pa.Metadata {
			if v := set[k]; v == nil {
				delete(t.Metadata, k)
			} else {
				t.Metadata[k] = v
			}
		}
		if len(t.Metadata) == 0 {
			t.Metadata = nil
		}
	}
	entering := false
	if pa.Status != nil && *pa.Status != t.Status {
		st := *pa.Status
		entering = st != Pending
		if !st.Valid() {
			return nil, &InvalidError{Field: "status", Reason: fmt.Sprintf("%q is not pending, in_progress or completed", st)}
		}
		if st == InProgress && t.Owner == "" {
			return nil, &InvalidError{Field: "owner", Reason: "an in_progress task needs an owner: use Claim, or set Owner in the same patch"}
		}
		if st == Pending && pa.Owner == nil {
			t.Owner = ""
		}
		if st == InProgress && t.Status == Pending {
			t.ClaimedAt = now
		}
		if st != InProgress {
			t.LeaseExpiresAt = time.Time{}
		}
		t.Status = st
	}
	if entering {
		// Checked against the patched edges: the blockers that count are
		// the ones the task has after this patch. Edges added to a task
		// already past pending record an ordering, not a transition.
		if err := g.checkBlockers(t); err != nil {
			return nil, err
		}
	}
	p.read = append(p.read, t.BlockedBy...)
	return p, newOverlay(g, p.put, nil).checkNewEdges()
}

func (g *graph) planClaim(id ID, owner string, lease time.Duration, now time.Time) (*plan, error) {
	if owner == "" {
		return nil, &InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if lease < 0 {
		return nil, &InvalidError{Field: "lease", Reason: "must not be negative"}
	}
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	switch t.Status {
	case Completed:
		return nil, &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already completed", id)}
	case InProgress:
		expired := !t.LeaseExpiresAt.IsZero() && !now.Before(t.LeaseExpiresAt)
		switch {
		case t.Owner == owner && lease == 0:
			return &plan{read: []ID{id}, result: id}, nil // already ours: nothing to write
		case t.Owner == owner:
		case expired:
			t.PrevOwner = t.Owner
		default:
			return nil, &ClaimedError{ID: id, Owner: t.Owner}
		}
	}
	if err := g.checkBlockers(t); err != nil {
		return nil, err
	}
	if t.Status != InProgress || t.Owner != owner {
		t.ClaimedAt = now
	}
	t.Status, t.Owner = InProgress, owner
	t.LeaseExpiresAt = time.Time{}
	if lease > 0 {
		t.LeaseExpiresAt = now.Add(lease)
	}
	return &plan{put: []*Task{t}, read: append([]ID{id}, t.BlockedBy...), result: id}, nil
}

func (g *graph) planClaimNext(owner string, lease time.Duration, now time.Time) (*plan, error) {
	if owner == "" {
		return nil, &InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if id, ok := g.nextReady(); ok {
		return g.planClaim(id, owner, lease, now)
	}
	// Tasks whose lease lapsed come after every never-claimed ready task.
	var expired []ID
	for id := range g.leased {
		t := g.tasks[id]
		if by, _ := g.unfinished(t); len(by) == 0 && !now.Before(t.LeaseExpiresAt) {
			expired = append(expired, id)
		}
	}
	if len(expired) == 0 {
		return nil, ErrNoReady
	}
	return g.planClaim(slices.Min(expired), owner, lease, now)
}

func (g *graph) planRenew(id ID, owner string, ttl time.Duration, now time.Time) (*plan, error) {
	if ttl <= 0 {
		return nil, &InvalidError{Field: "ttl", Reason: "must be positive"}
	}
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	if err := checkHolder(t, owner, true); err != nil {
		return nil, err
	}
	t.LeaseExpiresAt = now.Add(ttl)
	return &plan{put: []*Task{t}, read: []ID{id}, result: id}, nil
}

// checkBlockers refuses to start or finish t while a blocker is unfinished.
// A task on a cycle (one a human wrote into the files) can never start; it
// gets a *CycleError naming the cycle rather than a *BlockedError.
func (g *graph) checkBlockers(t *Task) error {
	by, missing := g.unfinished(t)
	if len(by) == 0 {
		return nil
	}
	if g.backward > 0 { // without a backward edge there is no cycle
		o := newOverlay(g, []*Task{t}, nil)
		for _, b := range t.BlockedBy {
			if path := o.pathBetween(t.ID, b); path != nil {
				return &CycleError{Path: append(path, t.ID)}
			}
		}
	}
	return &BlockedError{ID: t.ID, By: by, Missing: missing}
}

// checkHolder requires t to be InProgress and, if owner is given (or
// required), held by owner.
func checkHolder(t *Task, owner string, required bool) error {
	switch t.Status {
	case Completed:
		return &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already completed", t.ID)}
	case Pending:
		return &InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is pending, not in_progress: claim it first", t.ID)}
	}
	if required && owner == "" {
		return &InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if owner != "" && owner != t.Owner {
		return &ClaimedError{ID: t.ID, Owner: t.Owner}
	}
	return nil
}

func (g *graph) planComplete(id ID, owner string, now time.Time) (*plan, error) {
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	if err := checkHolder(t, owner, false); err != nil {
		return nil, err
	}
	if err := g.checkBlockers(t); err != nil {
		return nil, err
	}
	t.Status = Completed
	t.LeaseExpiresAt = time.Time{}
	return &plan{put: []*Task{t}, read: append([]ID{id}, t.BlockedBy...), result: id}, nil
}

func (g *graph) planRelease(id ID, owner string, now time.Time) (*plan, error) {
	t, err := g.edit(id, now)
	if err != nil {
		return nil, err
	}
	if err := checkHolder(t, owner, false); err != nil {
		return nil, err
	}
	t.Status, t.Owner = Pending, ""
	t.ClaimedAt, t.LeaseExpiresAt = time.Time{}, time.Time{}
	return &plan{put: []*Task{t}, read: []ID{id}, result: id}, nil
}

func (g *graph) planDelete(id ID, detach bool, now time.Time) (*plan, error) {
	if _, err := g.get(id); err != nil {
		return nil, err
	}
	p := &plan{del: []ID{id}, read: []ID{id}, result: id}
	deps := g.dependents[id] // tasks that exist: remove drops the edges of a task it removes
	if len(deps) > 0 && !detach {
		return nil, &InvalidError{Field: "id", Reason: fmt.Sprintf("tasks %v depend on task %d: remove those edges first, or delete with taskgraph.Detach()", deps, id)}
	}
	for _, d := range deps {
		dt, err := g.edit(d, now)
		if err != nil {
			return nil, err
		}
		dt.BlockedBy = slices.DeleteFunc(dt.BlockedBy, func(b ID) bool { return b == id })
		p.put = append(p.put, dt)
		p.read = append(p.read, d)
	}
	return p, nil
}

func (g *graph) planLoad(tasks []Task, now time.Time) (*plan, error) {
	p := &plan{}
	batch := make(map[ID]bool, len(tasks))
	for i := range tasks {
		t := tasks[i].clone()
		field := fmt.Sprintf("tasks[%d]", i)
		switch {
		case t.ID <= g.maxID:
			return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("id %d is not above %d, the highest id this store has allocated", t.ID, g.maxID)}
		case batch[t.ID]:
			return nil, &InvalidError{Field: field, Reason: fmt.Sprintf("id %d appears twice", t.ID)}
		case t.Subject == "":
			return nil, &InvalidError{Field: field + ".subject", Reason: "must not be empty"}
		case !t.Status.Valid():
			return nil, &InvalidError{Field: field + ".status", Reason: fmt.Sprintf("%q is not pending, in_progress or completed", t.Status)}
		}
		batch[t.ID] = true
		var err error
		if t.Metadata, err = normalizeMetadata(t.Metadata); err != nil {
			return nil, err
		}
		t.Blocks = nil
		t.BlockedBy = addIDs(nil, t.BlockedBy)
		t.Rev++
		if t.CreatedAt.IsZero() {
			t.CreatedAt = now
		}
		if t.UpdatedAt.IsZero() {
			t.UpdatedAt = now
		}
		p.put = append(p.put, &t)
	}
	for _, t := range p.put {
		for _, b := range t.BlockedBy {
			if b == t.ID {
				return nil, &InvalidError{Field: "blockedBy", Reason: fmt.Sprintf("task %d cannot block itself", b)}
			}
			if !batch[b] {
				if _, err := g.get(b); err != nil {
					return nil, err
				}
			}
		}
	}
	return p, newOverlay(g, p.put, nil).checkNewEdges()
}

// apply makes a persisted plan part of the graph.
func (g *graph) apply(p *plan) {
	for _, id := range p.del {
		g.remove(id)
		g.maxID = max(g.maxID, id)
	}
	for _, t := range p.put {
		g.put(t)
	}
}

// addIDs appends the ids of add that are not already in s.
func addIDs(s, add []ID) []ID {
	if s == nil {
		s = []ID{}
	}
	for _, id := range add {
		if !slices.Contains(s, id) {
			s = append(s, id)
		}
	}
	return s
}

// MemStore is a Store that keeps the graph in memory only, with exactly the
// rules and errors of FileStore. Use it in the unit tests of code that takes
// a Store.
type MemStore struct {
	ops
	cfg    config
	mu     sync.Mutex
	g      *graph
	closed bool
}

// NewMemStore returns an empty in-memory store. Only WithClock affects it.
func NewMemStore(opts ...Option) *MemStore {
	m := &MemStore{cfg: newConfig(opts), g: newGraph()}
	m.ops = ops{e: m}
	return m
}

func (m *MemStore) write(ctx context.Context, mk func(*graph, time.Time) (*plan, error), done func(*graph, *plan)) error {
	return m.read(ctx, nil, func(g *graph) error {
		p, err := mk(g, m.cfg.now().UTC())
		if err != nil {
			return err
		}
		g.apply(p)
		done(g, p)
		return nil
	})
}

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
	m.closed = true
	return nil
}

// Names of the files a FileStore keeps beside the task files. They start
// with a dot so that the reference's glob task_*.json never matches them.
const (
	metaFileName    = ".taskgraph.meta"    // the id high-water mark
	journalFileName = ".taskgraph.journal" // a multi-file write in progress
	logFileName     = ".taskgraph.log"     // which tasks each write changed
	maxLogSize      = 8 << 20
	taskFilePrefix  = "task_"
	taskFileSuffix  = ".json"
)

// FileStore is a Store on a directory of task files, shared safely by every
// process and goroutine that opens the same directory.
//
// Every write takes an exclusive flock on the directory, brings its cache up
// to date (see below), re-checks the files the decision depends on, and
// replaces files atomically: renameio writes a temporary file in the
// directory, fsyncs it and renames it over the old one, then the directory is
// fsynced so the rename itself survives a power loss. A write that touches
// several files first writes a journal holding all of them, so after a crash
// either all or none of it is visible; the next writer replays it.
//
// The cache: each write appends the ids it changed to a small change log
// (.taskgraph.log) and records the directory's mtime there. Before any
// operation a store reads only the log records it has not seen and reloads
// just those tasks; a directory mtime the log does not explain (a file
// created, renamed or removed by something that does not take the lock)
// makes it rescan the directory. The files an operation reads to decide are
// also compared with their last-seen inode, size and mtime, so an edit made
// by hand in place is never overwritten blindly.
type FileStore struct {
	ops
	dir  string
	cfg  config
	root *os.Root
	dirf *os.File // the directory, for fsync and stat
	lock *dirLock
	sem  chan struct{} // serialises this store's goroutines

	// Guarded by sem.
	closed   bool
	scanned  bool
	g        *graph
	stamps   map[ID]stamp
	hwm      ID // high-water mark in the meta file
	log      *os.File
	logIno   uint64
	logOff   int64
	dirMtime int64 // directory mtime that the cache accounts for

	// fault, when set by a test, fails the writes it returns an error for.
	fault func(name string) error
}

// stamp identifies one version of a file.
type stamp struct {
	ino   uint64
	size  int64
	mtime int64
}

func stampOf(fi os.FileInfo) stamp {
	return stamp{ino: fileID(fi), size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// Open opens the task directory dir, creating it if it does not exist. It
// returns errors.ErrUnsupported on Windows. The directory is read lazily, by
// the first operation, under the lock.
func Open(dir string, opts ...Option) (*FileStore, error) {
	if errPlatform != nil {
		return nil, fmt.Errorf("taskgraph: open %s: %w (atomic file replacement is available on Linux and macOS)", dir, errPlatform)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("taskgraph: open: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("taskgraph: open: %w", err)
	}
	dirf, err := root.Open(".")
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("taskgraph: open: %w", err)
	}
	s := &FileStore{
		dir:    dir,
		cfg:    newConfig(opts),
		root:   root,
		dirf:   dirf,
		lock:   newDirLock(filepath.Join(dir, lockFileName)),
		sem:    make(chan struct{}, 1),
		g:      newGraph(),
		stamps: make(map[ID]stamp),
	}
	s.ops = ops{e: s}
	return s, nil
}

// Dir returns the directory the store was opened on.
func (s *FileStore) Dir() string { return s.dir }

// Close releases the store's descriptors. Tasks are already on disk.
func (s *FileStore) Close() error {
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.log != nil {
		s.log.Close()
	}
	s.dirf.Close()
	s.lock.close()
	return s.root.Close()
}

// acquire takes the store's semaphore and the directory lock, replays a
// pending journal and brings the cache up to date.
func (s *FileStore) acquire(ctx context.Context, exclusive bool) (release func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.closed {
		<-s.sem
		return nil, ErrClosed
	}
	unlock, err := s.lock.lock(ctx, exclusive)
	if err != nil {
		<-s.sem
		return nil, err
	}
	release = func() { unlock(); <-s.sem }
	if _, err := s.root.Lstat(journalFileName); err == nil {
		if !exclusive {
			// Finishing another writer's journal is a write.
			unlock()
			if unlock, err = s.lock.lock(ctx, true); err != nil {
				<-s.sem
				return nil, err
			}
			release = func() { unlock(); <-s.sem }
		}
		if err := s.replayJournal(); err != nil {
			release()
			return nil, err
		}
	}
	if err := s.refresh(); err != nil {
		release()
		return nil, err
	}
	return release, nil
}

func (s *FileStore) read(ctx context.Context, check []ID, fn func(*graph) error) error {
	release, err := s.acquire(ctx, false)
	if err != nil {
		return err
	}
	defer release()
	if _, err := s.verify(check); err != nil {
		return err
	}
	return fn(s.g)
}

func (s *FileStore) write(ctx context.Context, mk func(*graph, time.Time) (*plan, error), done func(*graph, *plan)) error {
	release, err := s.acquire(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	for attempt := 0; ; attempt++ {
		p, err := mk(s.g, s.cfg.now().UTC())
		if err != nil {
			return err
		}
		// Prove that what the decision read is what is on disk; if a
		// writer that bypasses the lock changed it, decide again.
		changed, err := s.verify(p.read)
		if err != nil {
			return err
		}
		if changed {
			if attempt < 3 {
				continue
			}
			return fmt.Errorf("taskgraph: task files keep changing under the lock (a program writing .tasks without taking it?): %w", ErrConflict)
		}
		if err := s.commit(p); err != nil {
			return withHint(err)
		}
		s.g.apply(p)
		done(s.g, p)
		return nil
	}
}

// withHint adds what to do to the errors a full or read-only disk gives.
func withHint(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fmt.Errorf("%w (the disk is full: free space and retry; nothing was half written)", err)
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w (is the directory writable?)", err)
	}
	return err
}

func taskFileName(id ID) string {
	return taskFilePrefix + strconv.FormatInt(int64(id), 10) + taskFileSuffix
}

// parseTaskFileName returns the id of a canonical task file name.
func parseTaskFileName(name string) (ID, bool) {
	s, ok := strings.CutPrefix(name, taskFilePrefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, taskFileSuffix); !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return ID(n), true
}

// verify reloads every listed task whose file changed since it was cached,
// and reports whether any had.
func (s *FileStore) verify(ids []ID) (bool, error) {
	changed := false
	for _, id := range ids {
		fi, err := s.root.Lstat(taskFileName(id))
		old, cached := s.stamps[id]
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if !cached {
				continue
			}
		case err != nil:
			return false, fmt.Errorf("taskgraph: %w", err)
		case cached && stampOf(fi) == old:
			continue
		}
		changed = true
		s.reload(id)
	}
	return changed, nil
}

// reload reads one task file into the cache, or drops it if it is gone.
func (s *FileStore) reload(id ID) {
	fi, t, err := s.load(id)
	s.install(id, fi, t, err)
}

func (s *FileStore) install(id ID, fi os.FileInfo, t *Task, err error) {
	// An id that was ever seen was allocated, even if its task is gone by
	// now: it must never be allocated again.
	s.g.maxID = max(s.g.maxID, id)
	switch {
	case fi == nil:
		s.g.remove(id)
		delete(s.stamps, id)
	case err != nil:
		s.g.markBroken(id, err)
		s.stamps[id] = stampOf(fi)
	default:
		s.g.put(t)
		s.stamps[id] = stampOf(fi)
	}
}

// load reads and decodes one task file. fi is nil if the file does not
// exist; a file that exists but cannot be used yields a *CorruptError.
func (s *FileStore) load(id ID) (os.FileInfo, *Task, error) {
	return loadTaskFile(s.root, s.dir, id)
}

func loadTaskFile(root *os.Root, dir string, id ID) (os.FileInfo, *Task, error) {
	name := taskFileName(id)
	path := filepath.Join(dir, name)
	// One open, fstat and read, as os.ReadFile does; the open refuses to
	// follow a symlink, so a task file is always the file itself.
	f, err := openNoFollow(path)
	if err != nil {
		fi, lerr := root.Lstat(name)
		switch {
		case errors.Is(lerr, fs.ErrNotExist):
			return nil, nil, nil
		case lerr != nil:
			return nil, nil, lerr
		case !fi.Mode().IsRegular():
			return fi, nil, &CorruptError{Path: path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
		}
		return fi, nil, &CorruptError{Path: path, Err: err}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return fi, nil, &CorruptError{Path: path, Err: fmt.Errorf("not a regular file (%s)", fi.Mode().Type())}
	}
	if fi.Size() > maxFileSize {
		return fi, nil, &CorruptError{Path: path, Err: fmt.Errorf("file is %d bytes, over the %d-byte limit", fi.Size(), maxFileSize)}
	}
	data := make([]byte, fi.Size()+1) // +1 sees a file that grew since the stat
	n, err := io.ReadFull(f, data)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return fi, nil, &CorruptError{Path: path, Err: err}
	}
	t, err := decodeTask(id, data[:n])
	if err != nil {
		return fi, nil, &CorruptError{Path: path, Err: err}
	}
	return fi, t, nil
}

// refresh brings the cache up to date with the directory.
func (s *FileStore) refresh() error {
	if !s.scanned {
		return s.scan()
	}
	fi, err := s.root.Lstat(logFileName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("taskgraph: %w", err)
	case fileID(fi) != s.logIno:
		// A new log (created or compacted): records may have been lost
		// in between.
		return s.scan()
	case fi.Size() > s.logOff:
		if err := s.readLog(fi.Size()); err != nil {
			return err
		}
	}
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	if dfi.ModTime().UnixNano() != s.dirMtime {
		return s.scan()
	}
	return nil
}

// readLog applies the log records between the last offset read and size.
func (s *FileStore) readLog(size int64) error {
	if err := s.openLog(); err != nil {
		return err
	}
	buf := make([]byte, size-s.logOff)
	n, err := s.log.ReadAt(buf, s.logOff)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("taskgraph: read change log: %w", err)
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n')
	if end < 0 {
		return nil
	}
	s.logOff += int64(end + 1)
	for line := range strings.Lines(string(buf[:end+1])) {
		s.applyRecord(strings.TrimSuffix(line, "\n"))
	}
	return nil
}

// applyRecord applies one change-log line:
//
//	P <id> <ino> <size> <mtime> <task JSON>   task id was written, as this
//	D <id>                                    task id was deleted
//	M <mtime>                                 the directory's mtime after a write
//
// A P record carries the file's new content and stamp, so following another
// process's writes costs no file reads. A garbled line (a writer killed in
// mid-append) only costs a reload from the file, which is always safe.
func (s *FileStore) applyRecord(line string) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "M":
		if m, err := strconv.ParseInt(rest, 10, 64); err == nil {
			s.dirMtime = m
		}
	case "D":
		if n, err := strconv.ParseInt(rest, 10, 64); err == nil && n > 0 {
			s.reload(ID(n))
		}
	case "P":
		f := strings.SplitN(rest, " ", 5)
		if len(f) < 1 {
			return
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 {
			return
		}
		id := ID(n)
		if len(f) == 5 {
			ino, e1 := strconv.ParseUint(f[1], 10, 64)
			size, e2 := strconv.ParseInt(f[2], 10, 64)
			mtime, e3 := strconv.ParseInt(f[3], 10, 64)
			if t, err := decodeTask(id, []byte(f[4])); e1 == nil && e2 == nil && e3 == nil && err == nil {
				s.g.maxID = max(s.g.maxID, id)
				s.g.put(t)
				s.stamps[id] = stamp{ino: ino, size: size, mtime: mtime}
				return
			}
		}
		s.reload(id)
	}
}

// openLog opens (creating if needed) the change log the directory has now.
func (s *FileStore) openLog() error {
	if s.log != nil {
		if fi, err := s.root.Lstat(logFileName); err == nil && fileID(fi) == s.logIno {
			return nil
		}
		s.log.Close()
		s.log = nil
	}
	f, err := s.root.OpenFile(logFileName, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("taskgraph: open change log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("taskgraph: open change log: %w", err)
	}
	s.log, s.logIno = f, fileID(fi)
	return nil
}

// scan reads the whole directory: it loads every task file whose stamp
// differs from the cache and drops the ones that are gone.
func (s *FileStore) scan() error {
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	if fi, err := s.root.Lstat(logFileName); err == nil {
		s.logIno, s.logOff = fileID(fi), fi.Size()
	}
	d, err := s.root.Open(".")
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return fmt.Errorf("taskgraph: read %s: %w", s.dir, err)
	}
	present := make(map[ID]bool, len(names))
	var ids []ID
	for _, name := range names {
		if id, ok := parseTaskFileName(name); ok {
			present[id] = true
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range slices.Collect(maps.Keys(s.stamps)) {
		if !present[id] {
			s.g.remove(id)
			delete(s.stamps, id)
		}
	}
	type loaded struct {
		fi  os.FileInfo
		t   *Task
		err error
	}
	results := make([]loaded, len(ids))
	skip := make([]bool, len(ids))
	// Loading is parallel; installing into the graph is sequential and in
	// id order, which keeps the sorted index appends cheap.
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), 8)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(ids); i += workers {
				id := ids[i]
				if old, cached := s.stamps[id]; cached {
					fi, err := s.root.Lstat(taskFileName(id))
					if err == nil && stampOf(fi) == old {
						skip[i] = true
						continue
					}
				}
				r := &results[i]
				r.fi, r.t, r.err = s.load(id)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		if skip[i] {
			continue
		}
		r := results[i]
		if r.err != nil && r.fi == nil {
			return fmt.Errorf("taskgraph: %w", r.err)
		}
		s.install(id, r.fi, r.t, r.err)
	}
	if err := s.readMeta(); err != nil {
		return err
	}
	s.dirMtime = dfi.ModTime().UnixNano()
	s.scanned = true
	return nil
}

type meta struct {
	HighWater ID `json:"highWater"`
}

func (s *FileStore) readMeta() error {
	data, err := s.root.ReadFile(metaFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var m meta
	if err == nil {
		err = json.Unmarshal(data, &m)
	}
	if err != nil {
		return &CorruptError{Path: filepath.Join(s.dir, metaFileName), Err: err}
	}
	s.hwm = m.HighWater
	s.g.maxID = max(s.g.maxID, m.HighWater)
	return nil
}

// raiseHighWater durably records that ids up to id have been used, before
// the file of id is deleted, so that id is never allocated again.
func (s *FileStore) raiseHighWater(id ID) error {
	if id <= s.hwm {
		return nil
	}
	data, _ := json.Marshal(meta{HighWater: id})
	if err := s.writeFile(metaFileName, append(data, '\n')); err != nil {
		return err
	}
	s.hwm = id
	return nil
}

func (s *FileStore) writeFile(name string, data []byte) error {
	perm := os.FileMode(s.cfg.filePerm)
	var err error
	if s.fault != nil {
		err = s.fault(name)
	}
	if err != nil {
	} else if s.cfg.noSync {
		err = writeAtomicNoSync(s.root, name, data, perm)
	} else {
		err = writeDurable(s.root, name, data, perm)
	}
	if err != nil {
		return fmt.Errorf("taskgraph: write %s: %w", filepath.Join(s.dir, name), err)
	}
	return nil
}

// writeAtomicNoSync replaces name atomically without fsync (WithoutSync).
func writeAtomicNoSync(root *os.Root, name string, data []byte, perm os.FileMode) error {
	tmp := "." + name + strconv.FormatInt(time.Now().UnixNano(), 36)
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}

func (s *FileStore) syncDir() error {
	if s.cfg.noSync {
		return nil
	}
	if err := s.dirf.Sync(); err != nil {
		return fmt.Errorf("taskgraph: fsync %s: %w", s.dir, err)
	}
	return nil
}

// journal is a multi-file write, stored before any of its files is touched.
type journal struct {
	Put       map[ID]string `json:"put"`
	Del       []ID          `json:"del"`
	HighWater ID            `json:"highWater"`
}

// commit persists a plan: one file directly, several through the journal.
func (s *FileStore) commit(p *plan) error {
	if len(p.put)+len(p.del) == 0 {
		return nil
	}
	if err := s.prepareLog(); err != nil {
		return err
	}
	j := journal{Put: make(map[ID]string, len(p.put)), Del: p.del}
	for _, t := range p.put {
		data, err := encodeTask(t)
		if err != nil {
			return &InvalidError{Field: "metadata", Reason: err.Error()}
		}
		j.Put[t.ID] = string(data)
	}
	for _, id := range p.del {
		j.HighWater = max(j.HighWater, id)
	}
	var err error
	if len(p.put)+len(p.del) == 1 {
		err = s.apply(&j)
	} else {
		err = s.writeJournal(&j)
	}
	if err != nil {
		return err
	}
	return s.appendLog(&j)
}

// apply performs the writes of j and fsyncs the directory once.
func (s *FileStore) apply(j *journal) error {
	if err := s.raiseHighWater(j.HighWater); err != nil {
		return err
	}
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		if err := s.writeFile(taskFileName(id), []byte(j.Put[id])); err != nil {
			return err
		}
	}
	for _, id := range j.Del {
		if err := s.root.Remove(taskFileName(id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("taskgraph: delete task %d: %w", id, err)
		}
	}
	return s.syncDir()
}

// writeJournal stores j durably, applies it, and removes it. If the process
// dies before the removal is durable, the next writer replays j, which
// rewrites the same contents: replay is idempotent.
func (s *FileStore) writeJournal(j *journal) error {
	data, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("taskgraph: encode journal: %w", err)
	}
	if err := s.writeFile(journalFileName, data); err != nil {
		return err
	}
	if err := s.syncDir(); err != nil {
		return err
	}
	if err := s.apply(j); err != nil {
		return err
	}
	if err := s.root.Remove(journalFileName); err != nil {
		return fmt.Errorf("taskgraph: remove journal: %w", err)
	}
	return s.syncDir()
}

// replayJournal finishes the multi-file write of a writer that died.
func (s *FileStore) replayJournal() error {
	data, err := s.root.ReadFile(journalFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var j journal
	if err == nil {
		err = json.Unmarshal(data, &j)
	}
	if err != nil {
		return &CorruptError{Path: filepath.Join(s.dir, journalFileName), Err: err}
	}
	if err := s.prepareLog(); err != nil {
		return err
	}
	if err := s.apply(&j); err != nil {
		return err
	}
	if err := s.root.Remove(journalFileName); err != nil {
		return fmt.Errorf("taskgraph: remove journal: %w", err)
	}
	if err := s.syncDir(); err != nil {
		return err
	}
	if err := s.appendLog(&j); err != nil {
		return err
	}
	// The cache predates the replay.
	for id := range j.Put {
		s.reload(id)
	}
	for _, id := range j.Del {
		s.reload(id)
	}
	return nil
}

// prepareLog opens the change log, compacting it first if it has grown
// large. It runs before a commit's files are written so that creating or
// replacing the log is part of the directory change the commit records.
func (s *FileStore) prepareLog() error {
	if err := s.openLog(); err != nil {
		return err
	}
	if s.logOff < maxLogSize {
		return nil
	}
	// Replace the log with an empty one. Other stores see its new inode
	// and rescan; this store is current, so it only starts over at 0.
	if err := writeAtomicNoSync(s.root, logFileName, nil, 0o644); err != nil {
		return fmt.Errorf("taskgraph: compact change log: %w", err)
	}
	s.log.Close()
	s.log = nil
	if err := s.openLog(); err != nil {
		return err
	}
	s.logOff = 0
	return nil
}

// appendLog records which tasks j changed and the directory mtime after it.
// The log is a cache hint, not a source of truth, so it is not fsynced.
func (s *FileStore) appendLog(j *journal) error {
	var rec []byte
	lfi, err := s.log.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: change log: %w", err)
	}
	if lfi.Size() > s.logOff {
		// A writer died in mid-append: end its line so ours stays whole.
		rec = append(rec, '\n')
	}
	for _, id := range slices.Sorted(maps.Keys(j.Put)) {
		fi, err := s.root.Lstat(taskFileName(id))
		if err != nil {
			return fmt.Errorf("taskgraph: %w", err)
		}
		st := stampOf(fi)
		s.stamps[id] = st
		rec = fmt.Appendf(rec, "P %d %d %d %d ", id, st.ino, st.size, st.mtime)
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(j.Put[id])); err != nil {
			return fmt.Errorf("taskgraph: change log: %w", err)
		}
		rec = append(append(rec, compact.Bytes()...), '\n')
	}
	for _, id := range j.Del {
		delete(s.stamps, id)
		rec = fmt.Appendf(rec, "D %d\n", id)
	}
	dfi, err := s.dirf.Stat()
	if err != nil {
		return fmt.Errorf("taskgraph: %w", err)
	}
	s.dirMtime = dfi.ModTime().UnixNano()
	rec = fmt.Appendf(rec, "M %d\n", s.dirMtime)
	if _, err := s.log.Write(rec); err != nil {
		return fmt.Errorf("taskgraph: append change log: %w", err)
	}
	s.logOff = lfi.Size() + int64(len(rec))
	return nil
}

// Problem is one thing Check found wrong with a task directory.
type Problem struct {
	Kind    ProblemKind
	Path    string // the file concerned
	ID      ID     // the task concerned, or 0
	Message string
}

func (p Problem) String() string { return fmt.Sprintf("%s: %s: %s", p.Path, p.Kind, p.Message) }

// ProblemKind classifies a Problem.
type ProblemKind string

// The kinds of problem Check reports.
const (
	ProblemCorrupt      ProblemKind = "corrupt"       // a task file that cannot be used
	ProblemDangling     ProblemKind = "dangling"      // blockedBy names a task that does not exist
	ProblemCycle        ProblemKind = "cycle"         // tasks that block each other
	ProblemExpiredLease ProblemKind = "expired-lease" // a claim whose lease has lapsed
	ProblemNoOwner      ProblemKind = "no-owner"      // in_progress with no owner
	ProblemTempFile     ProblemKind = "temp-file"     // left by a writer that died
	ProblemJournal      ProblemKind = "journal"       // a multi-file write waiting to be finished
	ProblemIgnored      ProblemKind = "ignored"       // looks like a task file but is not named like one
)

// Check reads the task directory dir without changing anything in it and
// returns every problem it finds, by path. It takes the directory's lock
// shared, if the directory has one, so it sees no write half done. Only
// WithClock affects it (to judge leases).
func Check(ctx context.Context, dir string, opts ...Option) ([]Problem, error) {
	cfg := newConfig(opts)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("taskgraph: check: %w", err)
	}
	defer root.Close()
	if _, err := root.Lstat(lockFileName); err == nil {
		l := &dirLock{path: filepath.Join(dir, lockFileName), fl: flock.New(filepath.Join(dir, lockFileName), flock.SetFlag(os.O_RDONLY))}
		unlock, err := l.lock(ctx, false)
		if err != nil {
			return nil, err
		}
		defer unlock()
	}
	d, err := root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("taskgraph: check: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, fmt.Errorf("taskgraph: check: %w", err)
	}
	slices.Sort(names)
	var problems []Problem
	add := func(kind ProblemKind, name string, id ID, format string, args ...any) {
		problems = append(problems, Problem{Kind: kind, Path: filepath.Join(dir, name), ID: id, Message: fmt.Sprintf(format, args...)})
	}
	g := newGraph()
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id, ok := parseTaskFileName(name)
		switch {
		case ok:
			_, t, err := loadTaskFile(root, dir, id)
			var ce *CorruptError
			switch {
			case errors.As(err, &ce):
				add(ProblemCorrupt, name, id, "%v", ce.Err)
			case err != nil:
				return nil, fmt.Errorf("taskgraph: check: %w", err)
			case t != nil:
				g.put(t)
			}
		case name == journalFileName:
			add(ProblemJournal, name, 0, "an interrupted multi-file write; the next write to the directory finishes it")
		case name == metaFileName:
			var m meta
			if data, err := root.ReadFile(name); err != nil || json.Unmarshal(data, &m) != nil {
				add(ProblemCorrupt, name, 0, "the id high-water mark is unreadable")
			}
		case strings.HasPrefix(name, "."+taskFilePrefix) || (strings.HasPrefix(name, ".taskgraph.") && name != lockFileName && name != logFileName):
			add(ProblemTempFile, name, 0, "a temporary file left by a writer that died; safe to delete")
		case strings.HasPrefix(name, taskFilePrefix) && strings.HasSuffix(name, taskFileSuffix):
			add(ProblemIgnored, name, 0, "not named task_<id>.json with a canonical positive id, so taskgraph ignores it")
		}
	}
	now := cfg.now()
	for _, id := range g.ids {
		t := g.tasks[id]
		name := taskFileName(id)
		for _, b := range t.BlockedBy {
			if g.tasks[b] == nil && g.broken[b] == nil && !fileExists(root, taskFileName(b)) {
				add(ProblemDangling, name, id, "blockedBy names task %d, which does not exist; the task stays blocked", b)
			}
		}
		if t.Status == InProgress && t.Owner == "" {
			add(ProblemNoOwner, name, id, "in_progress with no owner; release it or set an owner")
		}
		if t.Status == InProgress && !t.LeaseExpiresAt.IsZero() && !now.Before(t.LeaseExpiresAt) {
			add(ProblemExpiredLease, name, id, "the lease of %q expired at %s; anyone may claim the task", t.Owner, t.LeaseExpiresAt.Format(time.RFC3339))
		}
	}
	// Report each cycle once, then cut it and look again.
	for range 1000 {
		path := g.findCycle()
		if path == nil {
			break
		}
		add(ProblemCycle, taskFileName(path[0]), path[0], "tasks block each other: %s; remove one of these edges", formatPath(path))
		last, first := path[len(path)-2], path[len(path)-1]
		t := g.tasks[first].clone()
		t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b ID) bool { return b == last })
		g.put(&t)
	}
	return problems, nil
}

func fileExists(root *os.Root, name string) bool {
	_, err := root.Lstat(name)
	return err == nil
}

// Event is a change to a task graph seen by Watch.
type Event struct {
	Kind EventKind
	Task Task // the task as it is now; for Deleted, as it was last seen
}

// EventKind says what happened to a task.
type EventKind string

// The kinds of Event.
const (
	Created   EventKind = "created"
	Updated   EventKind = "updated"
	Deleted   EventKind = "deleted"
	Unblocked EventKind = "unblocked" // became ready: pending with every blocker completed
)

// Watcher is implemented by stores that can report changes as they happen,
// including changes made by other processes.
type Watcher interface {
	Watch(ctx context.Context) (<-chan Event, error)
}

// watchPollOnly makes Watch poll, to test the fallback.
var watchPollOnly = false

// watchPoll is how often Watch looks at the directory when inotify is not
// available.
const watchPoll = 250 * time.Millisecond

// Watch reports every change to the graph, by this or any other process,
// until ctx is done; then it closes the channel. Event.Task has every field
// but Blocks. It uses inotify (through
// fsnotify) and falls back to polling where that is unavailable. Changes
// that happen while the receiver is busy are coalesced: a task written three
// times may be reported once, with its latest content. An agent that waits
// for work can block on Unblocked events instead of polling.
func (s *FileStore) Watch(ctx context.Context) (<-chan Event, error) {
	type seen struct {
		stamp stamp
		task  Task
		ready bool
	}
	snapshot := func() (map[ID]seen, error) {
		snap := map[ID]seen{}
		err := s.read(ctx, nil, func(g *graph) error {
			for id, t := range g.tasks {
				snap[id] = seen{stamp: s.stamps[id], task: *t, ready: g.isReady(id)}
			}
			return nil
		})
		return snap, err
	}
	prev, err := snapshot()
	if err != nil {
		return nil, err
	}
	wake := make(chan struct{}, 1)
	poke := func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	w, werr := fsnotify.NewWatcher()
	if werr == nil && watchPollOnly {
		w.Close()
		werr = errors.New("polling forced")
	}
	if werr == nil {
		if werr = w.Add(s.dir); werr != nil {
			w.Close()
		}
	}
	if werr == nil {
		go func() {
			for {
				select {
				case _, ok := <-w.Events:
					if !ok {
						return
					}
					poke()
				case _, ok := <-w.Errors:
					if !ok {
						return
					}
					poke() // an overflow lost events: look at everything
				}
			}
		}()
	} else {
		go func() {
			tick := time.NewTicker(watchPoll)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					poke()
				}
			}
		}()
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		if werr == nil {
			defer w.Close()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			next, err := snapshot()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				continue
			}
			var events []Event
			for id, n := range next {
				p, existed := prev[id]
				switch {
				case !existed:
					events = append(events, Event{Kind: Created, Task: n.task})
				case p.stamp != n.stamp:
					events = append(events, Event{Kind: Updated, Task: n.task})
				}
				if n.ready && (!existed || !p.ready) {
					events = append(events, Event{Kind: Unblocked, Task: n.task})
				}
			}
			for id, p := range prev {
				if _, ok := next[id]; !ok {
					events = append(events, Event{Kind: Deleted, Task: p.task})
				}
			}
			prev = next
			slices.SortStableFunc(events, func(a, b Event) int {
				if c := cmp.Compare(a.Task.ID, b.Task.ID); c != 0 {
					return c
				}
				return strings.Compare(eventOrder[a.Kind], eventOrder[b.Kind])
			})
			for _, e := range events {
				e.Task = e.Task.clone()
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

var eventOrder = map[EventKind]string{Created: "0", Updated: "1", Unblocked: "2", Deleted: "3"}

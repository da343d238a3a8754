// The graph taskgraph mcp serves: opened when it exists, created by the
// first task written when --dir or $TASKGRAPH_DIR names it, and the leases
// of the server's claims renewed for as long as the server lives.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
)

// defaultMCPLease is the lease of every claim made through taskgraph mcp
// unless --lease says otherwise. The server renews it while it runs, so
// it only bounds how long the tasks of a server that died stay claimed.
const defaultMCPLease = 5 * time.Minute

// mcpGraph is the task graph of an MCP server, which starts whether or not
// the graph exists yet: a client shows a server that exits at start as
// one that failed to connect, with no reason the model can act on.
//
// While there is no graph, the tools answer with an error that names the
// command creating it (taskgraph init), and the server opens the graph as
// soon as it exists. When --dir or $TASKGRAPH_DIR names the directory,
// the tools see an empty graph instead, and the first task written creates
// the directory as taskgraph init does.
type mcpGraph struct {
	e     *env
	mu    sync.Mutex
	s     store               // nil until the graph is open
	pool  *pgxpool.Pool       // for a --store graph
	empty *taskgraph.MemStore // the empty graph a named directory shows until it exists
}

// newMCPGraph returns the graph of e, opened if it exists.
func newMCPGraph(e *env) (*mcpGraph, error) {
	g := &mcpGraph{e: e, empty: taskgraph.NewMemStore()}
	if _, err := g.open(e.ctx, false); err != nil && !errors.As(err, new(noGraphError)) && !errors.Is(err, errNotYet) {
		g.Close()
		return nil, err
	}
	return g, nil
}

// errNotYet reports that the directory --dir or $TASKGRAPH_DIR names does
// not exist yet.
var errNotYet = errors.New("the task directory does not exist yet")

// open returns the graph, opening it if it has come to exist. With create,
// a directory named by --dir or $TASKGRAPH_DIR that does not exist is
// created first, by taskgraph init's own code. Without a graph it returns
// errNotYet for a named directory, else a noGraphError that says what to
// run.
func (g *mcpGraph) open(ctx context.Context, create bool) (store, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.s != nil {
		return g.s, nil
	}
	e := g.e
	if e.isHub() {
		c, err := e.openHub()
		if err != nil {
			return nil, err
		}
		g.s = c
		return c, nil
	}
	if e.storeURL != "" {
		if g.pool == nil {
			pool, err := pgxpool.New(e.ctx, e.storeURL)
			if err != nil {
				return nil, fmt.Errorf("--store: %w", err)
			}
			g.pool = pool
		}
		s, err := openGraph(ctx, g.pool, e.graph, false)
		if errors.Is(err, taskgraph.ErrNotFound) {
			return nil, noGraphError{fmt.Sprintf("there is no graph %q in the --store database yet: run `taskgraph init` with the same --store and --graph, then call again", e.graph)}
		}
		if err != nil {
			return nil, err
		}
		g.s = s
		return s, nil
	}
	var dir string
	if e.dirFrom != "" {
		if _, err := os.Stat(e.dir); errors.Is(err, fs.ErrNotExist) {
			if !create {
				return nil, errNotYet
			}
			if err := g.initDir(); err != nil {
				return nil, err
			}
		} else if err != nil {
			return nil, err
		}
		dir = e.dir
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if dir, err = gitrepo.FindDir(wd); err != nil {
			return nil, err
		}
		if dir == "" {
			return nil, noGraphError{fmt.Sprintf("there is no task graph yet (no %s in %s or a parent): run `taskgraph init` in the project, then call again", dirName, wd)}
		}
	}
	s, err := openDir(dir, false)
	if err != nil {
		return nil, err
	}
	g.s = s
	return s, nil
}

// initDir creates the named task directory as taskgraph init does, by its
// code, with what init prints sent to stderr: stdout carries the protocol.
func (g *mcpGraph) initDir() error {
	e := *g.e
	e.stdout, e.args, e.json = e.stderr, nil, false
	if err := cmdInit(&e); err != nil {
		return fmt.Errorf("creating the task directory %s: %w", e.dir, err)
	}
	return nil
}

// read returns the store to read from: the graph, or the empty graph of a
// named directory that does not exist yet.
func (g *mcpGraph) read(ctx context.Context) (taskgraph.Store, error) {
	s, err := g.open(ctx, false)
	if errors.Is(err, errNotYet) {
		return g.empty, nil
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// write returns the store to add tasks to, creating a named directory.
func (g *mcpGraph) write(ctx context.Context) (taskgraph.Store, error) {
	return g.open(ctx, true)
}

// Close closes the graph, if it was opened.
func (g *mcpGraph) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var err error
	if g.s != nil {
		err = g.s.Close()
	}
	if g.pool != nil {
		g.pool.Close()
	}
	g.empty.Close()
	return err
}

// The methods that add tasks create a named directory; the others act on
// the graph as it is (an empty one has no task to act on).

func (g *mcpGraph) Create(ctx context.Context, t taskgraph.NewTask) (taskgraph.Task, error) {
	s, err := g.write(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Create(ctx, t)
}

func (g *mcpGraph) CreatePlan(ctx context.Context, tasks []taskgraph.NewTask) ([]taskgraph.Task, error) {
	s, err := g.write(ctx)
	if err != nil {
		return nil, err
	}
	return s.CreatePlan(ctx, tasks)
}

func (g *mcpGraph) Get(ctx context.Context, id taskgraph.ID) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Get(ctx, id)
}

func (g *mcpGraph) List(ctx context.Context, filters ...taskgraph.Filter) ([]taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return nil, err
	}
	return s.List(ctx, filters...)
}

func (g *mcpGraph) Update(ctx context.Context, id taskgraph.ID, p taskgraph.Patch) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Update(ctx, id, p)
}

func (g *mcpGraph) Claim(ctx context.Context, id taskgraph.ID, owner string, opts ...taskgraph.ClaimOption) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Claim(ctx, id, owner, opts...)
}

func (g *mcpGraph) ClaimNext(ctx context.Context, owner string, opts ...taskgraph.ClaimOption) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.ClaimNext(ctx, owner, opts...)
}

func (g *mcpGraph) Renew(ctx context.Context, id taskgraph.ID, owner string, ttl time.Duration) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Renew(ctx, id, owner, ttl)
}

func (g *mcpGraph) Complete(ctx context.Context, id taskgraph.ID, owner string, opts ...taskgraph.CompleteOption) (taskgraph.Completion, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Completion{}, err
	}
	return s.Complete(ctx, id, owner, opts...)
}

func (g *mcpGraph) Fail(ctx context.Context, id taskgraph.ID, owner, reason string) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Fail(ctx, id, owner, reason)
}

func (g *mcpGraph) Cancel(ctx context.Context, id taskgraph.ID, reason string) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Cancel(ctx, id, reason)
}

func (g *mcpGraph) Reopen(ctx context.Context, id taskgraph.ID) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Reopen(ctx, id)
}

func (g *mcpGraph) Release(ctx context.Context, id taskgraph.ID, owner string) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.Release(ctx, id, owner)
}

func (g *mcpGraph) Note(ctx context.Context, id taskgraph.ID, author, text string) (taskgraph.Task, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return s.(taskgraph.Noter).Note(ctx, id, author, text) // a FileStore, or the empty MemStore
}

func (g *mcpGraph) Delete(ctx context.Context, id taskgraph.ID, opts ...taskgraph.DeleteOption) error {
	s, err := g.read(ctx)
	if err != nil {
		return err
	}
	return s.Delete(ctx, id, opts...)
}

func (g *mcpGraph) Board(ctx context.Context, filters ...taskgraph.Filter) (taskgraph.Board, error) {
	s, err := g.read(ctx)
	if err != nil {
		return taskgraph.Board{}, err
	}
	return s.Board(ctx, filters...)
}

// Watch watches the graph (task_wait waits on it). On the empty graph of a
// named directory it reports nothing until ctx is done.
func (g *mcpGraph) Watch(ctx context.Context) (<-chan taskgraph.Event, error) {
	s, err := g.read(ctx)
	if err != nil {
		return nil, err
	}
	w, ok := s.(taskgraph.Watcher)
	if !ok {
		return nil, fmt.Errorf("this store cannot be watched: %w", errors.ErrUnsupported)
	}
	return w.Watch(ctx)
}

// defaultProgressWindow is how long taskgraph mcp renews its claims
// after the session's last tool call (--progress-window).
const defaultProgressWindow = 60 * time.Minute

// lastCall is when the MCP session last called a tool; nil records
// nothing.
type lastCall struct{ at atomic.Int64 }

// newLastCall returns a lastCall that counts from now: the session's
// start is its first sign of life.
func newLastCall() *lastCall {
	c := &lastCall{}
	c.touch()
	return c
}

func (c *lastCall) touch() {
	if c != nil {
		c.at.Store(time.Now().UnixNano())
	}
}

// since is how long ago the last call was.
func (c *lastCall) since() time.Duration { return time.Since(time.Unix(0, c.at.Load())) }

// noteIdle leaves a note on each task owner holds, saying why its lease
// is no longer renewed: the history then tells whoever takes the task
// over why it came back. A failure leaves the task as it is: the lease
// lapses all the same.
func noteIdle(ctx context.Context, s taskgraph.Store, owner string, window time.Duration) {
	n, ok := s.(taskgraph.Noter)
	if !ok {
		return
	}
	tasks, err := s.List(ctx, taskgraph.WithStatus(taskgraph.InProgress), taskgraph.WithOwner(owner))
	if err != nil {
		return
	}
	for _, t := range tasks {
		if t.Owner == owner && !t.LeaseExpiresAt.IsZero() {
			_, _ = n.Note(ctx, t.ID, owner, fmt.Sprintf("taskgraph mcp: this session made no tool call for %v (--progress-window), so its lease is no longer renewed and lapses at %s", window, t.LeaseExpiresAt.UTC().Format(time.RFC3339)))
		}
	}
}

// keepClaims renews, every third of ttl until ctx is done, the lease of
// every task owner holds on s whose lease would end within ttl: a server
// that lives never loses a claim to a lapsed lease, and the tasks of one
// that dies are free again within ttl. A task owner no longer holds —
// completed, failed, released, or taken after its lease lapsed — is not
// in progress under owner any more, and is left alone; a claim made
// without a lease is not given one; a longer lease is not shortened.
//
// With lastSeen (a hub's MCP sessions, where the server outlives its
// clients), it renews only while owner's client was seen within ttl:
// the tasks of a client that vanished are free again within two ttl.
//
// Once the session has made no tool call for window (if not 0), it stops
// renewing, and says so on log once: a session whose model hangs — its
// client connected, calling nothing — holds its tasks no longer than the
// window and one lease. The next call renews again.
func keepClaims(ctx context.Context, s taskgraph.Store, owner string, ttl time.Duration, lastSeen func() time.Time, calls *lastCall, window time.Duration, log io.Writer) {
	tick := time.NewTicker(max(ttl/3, time.Millisecond))
	defer tick.Stop()
	idle := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if lastSeen != nil && time.Since(lastSeen()) > ttl {
			continue
		}
		if window > 0 {
			since := calls.since()
			if was := idle; since >= window {
				idle = true
				if !was {
					fmt.Fprintf(log, "taskgraph mcp: no tool call for %v (--progress-window %v): the server stops renewing the leases of %q, so its tasks come back when they lapse; a tool call renews them again\n", since.Round(time.Second), window, owner)
					noteIdle(ctx, s, owner, window)
				}
				continue
			}
			idle = false
		}
		tasks, err := s.List(ctx, taskgraph.WithStatus(taskgraph.InProgress), taskgraph.WithOwner(owner))
		if readFailed(err) {
			continue // no graph yet, or a passing failure: the next tick tries again
		}
		now := time.Now()
		for _, t := range tasks {
			if t.Owner == owner && !t.LeaseExpiresAt.IsZero() && t.LeaseExpiresAt.Before(now.Add(ttl)) {
				// An error is a claim lost meanwhile (nothing to do) or a
				// passing failure (the lease still runs; the next tick
				// tries again).
				_, _ = s.Renew(ctx, t.ID, owner, ttl)
			}
		}
	}
}

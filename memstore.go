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

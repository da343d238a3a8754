package pgstore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph/taskgraph"
)

// Get implements taskgraph.Store. It is one query, outside a transaction.
func (s *Store) Get(ctx context.Context, id taskgraph.ID) (taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Task{}, err
	}
	var t taskgraph.Task
	err := retry(ctx, func() (err error) {
		t, err = scanView(s.pool.QueryRow(ctx, `SELECT `+columns+`, `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = $2`, s.graph, id))
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return taskgraph.Task{}, taskgraph.Rules.Missing(id)
	}
	if err != nil {
		return taskgraph.Task{}, err
	}
	return t, nil
}

// List implements taskgraph.Store.
func (s *Store) List(ctx context.Context) ([]taskgraph.Task, error) {
	var out []taskgraph.Task
	err := s.begin(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+columns+` FROM taskgraph_tasks WHERE graph = $1 ORDER BY id`, s.graph)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (taskgraph.Task, error) { return scanTask(r) })
		return err
	})
	if err != nil {
		return nil, err
	}
	index := make(map[taskgraph.ID]int, len(out))
	for i, t := range out {
		index[t.ID] = i
	}
	for _, t := range out { // in id order, so every Blocks comes out sorted
		for _, b := range t.BlockedBy {
			if i, ok := index[b]; ok {
				out[i].Blocks = append(out[i].Blocks, t.ID)
			}
		}
	}
	return out, nil
}

// Board implements taskgraph.Store.
func (s *Store) Board(ctx context.Context) (taskgraph.Board, error) {
	tasks, err := s.List(ctx)
	if err != nil {
		return taskgraph.Board{}, err
	}
	return taskgraph.Resolve(tasks), nil
}

// Reading the graph: one task (Get), a filtered list (List), the board.

package pgstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
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

// List implements taskgraph.Store. Without filters it reads every row
// and derives Blocks in memory; with filters it selects the rows in SQL
// (ReadyOnly by the ready condition ClaimNext uses), up to the limit, and
// reads each one's Blocks from the index on blocked_by.
func (s *Store) List(ctx context.Context, filters ...taskgraph.Filter) ([]taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	sel, err := taskgraph.Rules.Filters(filters) // before any SQL
	if err != nil {
		return nil, err
	}
	if sel.ReadyOnly || sel.Under != 0 {
		// A limit may hold back ready tasks, and which depends on the
		// claim order of them all; "under" follows the parent links:
		// judged on the whole graph, as Board.
		limits, err := s.Limits(ctx)
		if err != nil {
			return nil, err
		}
		if len(limits) > 0 || sel.Under != 0 {
			return s.listByBoard(ctx, sel, limits)
		}
	}
	if !sel.Empty() {
		return s.listSelected(ctx, sel)
	}
	var out []taskgraph.Task
	err = s.begin(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+columns+` FROM taskgraph_tasks WHERE graph = $1 ORDER BY id`, s.graph)
		if err != nil {
			return err
		}
		// Room for as many tasks as the last whole list had: grown row by
		// row, the slice was copied a dozen times (a tenth of a Board's
		// time at 1,000 tasks).
		out, err = pgx.AppendRows(make([]taskgraph.Task, 0, s.listed.Load()), rows, newTaskRow().collect)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.listed.Store(int64(len(out)))
	if cap(out) > 2*len(out)+64 {
		// The graph shrank: do not hand out the room of the larger one.
		out = slices.Clone(out)
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

// listByBoard is List with what only the whole graph decides (ReadyOnly
// under limits, Under): the tasks of the board the selection selects, by
// id, at most sel.Limit.
func (s *Store) listByBoard(ctx context.Context, sel taskgraph.Selection, limits map[string]int) ([]taskgraph.Task, error) {
	filters := []taskgraph.Filter{taskgraph.WithLimits(limits), taskgraph.WithStatus(sel.Statuses...), taskgraph.HasLabels(sel.Labels...), taskgraph.Under(sel.Under)}
	if sel.ReadyOnly {
		filters = append(filters, taskgraph.ReadyOnly())
	}
	if sel.Owner != nil {
		filters = append(filters, taskgraph.WithOwner(*sel.Owner))
	}
	if !sel.Now.IsZero() {
		filters = append(filters, taskgraph.AsOf(sel.Now))
	}
	b, err := s.Board(ctx, filters...)
	if err != nil {
		return nil, err
	}
	var out []taskgraph.Task
	for _, l := range b.Lists() {
		out = append(out, l.Tasks...)
	}
	slices.SortFunc(out, func(a, b taskgraph.Task) int { return cmp.Compare(a.ID, b.ID) })
	if sel.Limit > 0 && len(out) > sel.Limit {
		out = out[:sel.Limit]
	}
	return out, nil
}

// listSelected is List with filters, in one statement.
func (s *Store) listSelected(ctx context.Context, sel taskgraph.Selection) ([]taskgraph.Task, error) {
	statuses := make([]string, len(sel.Statuses))
	for i, st := range sel.Statuses {
		statuses[i] = string(st)
	}
	labels := sel.Labels
	if labels == nil {
		labels = []string{}
	}
	var limit *int64
	if sel.Limit > 0 {
		n := int64(sel.Limit)
		limit = &n
	}
	at := s.at() // deferral as of the database's clock, unless AsOf says
	if !sel.Now.IsZero() {
		at = &sel.Now
	}
	var out []taskgraph.Task
	err := retry(ctx, func() error {
		rows, err := s.pool.Query(ctx, `SELECT `+columns+`, `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1
			AND (cardinality($2::text[]) = 0 OR status = ANY($2))
			AND ($3::text IS NULL OR owner = $3)
			AND labels @> $4::text[]
			AND (NOT $5 OR status = 'pending' AND `+readyCondition+` AND `+undeferred(7)+`)
			ORDER BY id LIMIT $6`, s.graph, statuses, sel.Owner, labels, sel.ReadyOnly, limit, at)
		if err != nil {
			return err
		}
		out, err = collectTasks(rows, newViewRow())
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Board implements taskgraph.Store: every row, partitioned in memory by
// taskgraph.Resolve, which then applies the filters.
func (s *Store) Board(ctx context.Context, filters ...taskgraph.Filter) (taskgraph.Board, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Board{}, err
	}
	sel, err := taskgraph.Rules.Filters(filters) // before any SQL
	if err != nil {
		return taskgraph.Board{}, err
	}
	tasks, err := s.List(ctx)
	if err != nil {
		return taskgraph.Board{}, err
	}
	if sel.Under != 0 { // tasks are in id order
		if _, found := slices.BinarySearchFunc(tasks, sel.Under, func(t taskgraph.Task, id taskgraph.ID) int { return cmp.Compare(t.ID, id) }); !found {
			return taskgraph.Board{}, taskgraph.Rules.Missing(sel.Under)
		}
	}
	if sel.Limits == nil {
		var limits map[string]int
		if err := retry(ctx, func() (err error) { limits, err = s.limits(ctx, s.pool); return err }); err != nil {
			return taskgraph.Board{}, err
		}
		filters = append(filters, taskgraph.WithLimits(limits))
	}
	if sel.Now.IsZero() { // deferral is judged by the database's clock, as claims are
		var now time.Time
		if err := retry(ctx, func() error { return s.pool.QueryRow(ctx, `SELECT `+nowSQL(1), s.at()).Scan(&now) }); err != nil {
			return taskgraph.Board{}, err
		}
		filters = append(filters, taskgraph.AsOf(now))
	}
	return taskgraph.Resolve(tasks, filters...), nil
}

// Package pgstore is a taskgraph.Store on PostgreSQL, for agents spread
// over several machines: the graph lives in a database every machine
// reaches, and the database, not a file lock, enforces the rules.
//
// Several named graphs share one database; the graph name plays the role
// of the task directory. The schema is created by versioned migrations
// embedded in the package, applied by Open (or Migrate) under an advisory
// lock, so many processes may start at once.
//
// Concurrency: every operation is one transaction. Claims and completions
// lock only the rows they touch, and ClaimNext picks the lowest ready id with
// FOR UPDATE SKIP LOCKED, so workers run in parallel without ever claiming
// one task twice. Writes that add edges or delete tasks serialise per graph
// with a transaction-scoped advisory lock, so two concurrent edits can never
// close a cycle between them. Leases expire by the database's clock.
package pgstore

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph/taskgraph"
)

//go:embed migrations/*.sql
var migrations embed.FS

// migrateLockID is the advisory lock that serialises migrations.
const migrateLockID = 0x7461736b67726170 // "taskgrap"

// Migrate brings the schema up to date. It is safe to run from many
// processes at once; Open calls it.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrateLockID)); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrateLockID))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS taskgraph_schema_migrations (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM taskgraph_schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("pgstore: migrate: %w", err)
	}
	files, _ := migrations.ReadDir("migrations")
	for _, f := range files { // named NNN_what.sql, in order
		var version int
		if _, err := fmt.Sscanf(f.Name(), "%d_", &version); err != nil || version <= current {
			continue
		}
		sql, _ := migrations.ReadFile("migrations/" + f.Name())
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, string(sql)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO taskgraph_schema_migrations (version) VALUES ($1)`, version)
			return err
		})
		if err != nil {
			return fmt.Errorf("pgstore: migration %s: %w", f.Name(), err)
		}
	}
	return nil
}

// Store is a taskgraph.Store on one named graph of a PostgreSQL database.
type Store struct {
	pool   *pgxpool.Pool
	graph  string
	lockID int64 // advisory lock of this graph's edge edits
	closed atomic.Bool
}

var (
	_ taskgraph.Store   = (*Store)(nil)
	_ taskgraph.Loader  = (*Store)(nil)
	_ taskgraph.Watcher = (*Store)(nil)
)

// Open migrates the schema if needed and returns the store of graph, which
// is created empty if it does not exist. The pool stays the caller's: Close
// does not close it.
func Open(ctx context.Context, pool *pgxpool.Pool, graph string) (*Store, error) {
	if graph == "" || strings.ContainsAny(graph, "\t\n\x00") {
		return nil, &taskgraph.InvalidError{Field: "graph", Reason: fmt.Sprintf("%q: want a non-empty name without tabs or newlines", graph)}
	}
	if err := Migrate(ctx, pool); err != nil {
		return nil, err
	}
	if _, err := pool.Exec(ctx, `INSERT INTO taskgraph_graphs (name) VALUES ($1) ON CONFLICT DO NOTHING`, graph); err != nil {
		return nil, fmt.Errorf("pgstore: open %q: %w", graph, err)
	}
	h := fnv.New64a()
	h.Write([]byte("taskgraph:" + graph))
	return &Store{pool: pool, graph: graph, lockID: int64(h.Sum64())}, nil
}

// Graph returns the name of the store's graph.
func (s *Store) Graph() string { return s.graph }

// Close makes later calls return taskgraph.ErrClosed. The pool is not
// closed.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

const columns = `id, subject, description, status, owner, blocked_by, metadata, created_at, updated_at, rev, claimed_at, lease_expires_at, prev_owner`

func scanTask(row pgx.Row, extra ...any) (taskgraph.Task, error) {
	var t taskgraph.Task
	var id int64
	var by []int64
	var meta []byte
	var claimed, lease *time.Time
	var status string
	dest := append([]any{&id, &t.Subject, &t.Description, &status, &t.Owner, &by, &meta, &t.CreatedAt, &t.UpdatedAt, &t.Rev, &claimed, &lease, &t.PrevOwner}, extra...)
	if err := row.Scan(dest...); err != nil {
		return t, err
	}
	t.ID, t.Status = taskgraph.ID(id), taskgraph.Status(status)
	for _, b := range by {
		t.BlockedBy = append(t.BlockedBy, taskgraph.ID(b))
	}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &t.Metadata); err != nil {
			return t, err
		}
	}
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	if claimed != nil {
		t.ClaimedAt = claimed.UTC()
	}
	if lease != nil {
		t.LeaseExpiresAt = lease.UTC()
	}
	return t, nil
}

// begin checks the store and ctx, and runs fn in a transaction, retrying it
// when PostgreSQL resolves a deadlock or serialisation failure by aborting it.
func (s *Store) begin(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if s.closed.Load() {
		return taskgraph.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") && attempt < 20 {
			continue
		}
		return err
	}
}

// serialise takes the graph's advisory lock until the transaction ends.
func (s *Store) serialise(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.lockID)
	return err
}

// lock reads task id for update, with the database's current time.
func (s *Store) lock(ctx context.Context, tx pgx.Tx, id taskgraph.ID) (taskgraph.Task, time.Time, error) {
	if id <= 0 {
		return taskgraph.Task{}, time.Time{}, &taskgraph.InvalidError{Field: "id", Reason: fmt.Sprintf("%d is not a positive task id", id)}
	}
	var now time.Time
	t, err := scanTask(tx.QueryRow(ctx, `SELECT `+columns+`, clock_timestamp() FROM taskgraph_tasks WHERE graph = $1 AND id = $2 FOR UPDATE`, s.graph, id), &now)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, now, &taskgraph.NotFoundError{ID: id}
	}
	return t, now.UTC(), err
}

// statuses returns the status of each existing id, locking the rows shared
// so that none of them changes or disappears before the transaction ends.
func (s *Store) statuses(ctx context.Context, tx pgx.Tx, ids []taskgraph.ID) (map[taskgraph.ID]taskgraph.Status, error) {
	out := map[taskgraph.ID]taskgraph.Status{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, status FROM taskgraph_tasks WHERE graph = $1 AND id = ANY($2) ORDER BY id FOR SHARE`, s.graph, int64s(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			return nil, err
		}
		out[taskgraph.ID(id)] = taskgraph.Status(st)
	}
	return out, rows.Err()
}

// checkEdges validates the blockers a write names, as the file store does.
func (s *Store) checkEdges(ctx context.Context, tx pgx.Tx, self taskgraph.ID, field string, ids []taskgraph.ID) error {
	st, err := s.statuses(ctx, tx, ids)
	if err != nil {
		return err
	}
	for _, b := range ids {
		switch _, ok := st[b]; {
		case b == self:
			return &taskgraph.InvalidError{Field: field, Reason: fmt.Sprintf("task %d cannot block itself", self)}
		case b <= 0:
			return &taskgraph.InvalidError{Field: "id", Reason: fmt.Sprintf("%d is not a positive task id", b)}
		case !ok:
			return &taskgraph.NotFoundError{ID: b}
		}
	}
	return nil
}

// blocked returns a *BlockedError if any blocker of t is unfinished.
func (s *Store) blocked(ctx context.Context, tx pgx.Tx, t taskgraph.Task) error {
	st, err := s.statuses(ctx, tx, t.BlockedBy)
	if err != nil {
		return err
	}
	var by, missing []taskgraph.ID
	for _, b := range t.BlockedBy {
		status, ok := st[b]
		if !ok || status != taskgraph.Completed {
			by = append(by, b)
			if !ok {
				missing = append(missing, b)
			}
		}
	}
	if len(by) > 0 {
		return &taskgraph.BlockedError{ID: t.ID, By: by, Missing: missing}
	}
	return nil
}

// blocks returns the ids of the tasks that list id in their blockedBy.
func (s *Store) blocks(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, id taskgraph.ID) ([]taskgraph.ID, error) {
	rows, err := q.Query(ctx, `SELECT id FROM taskgraph_tasks WHERE graph = $1 AND blocked_by @> ARRAY[$2::bigint] ORDER BY id`, s.graph, id)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	var out []taskgraph.ID
	for _, i := range ids {
		out = append(out, taskgraph.ID(i))
	}
	return out, err
}

// blocksOf selects the ids of the tasks blocked by the row t, in order.
const blocksOf = `ARRAY(SELECT d.id FROM taskgraph_tasks d WHERE d.graph = t.graph AND d.blocked_by @> ARRAY[t.id] ORDER BY d.id)`

// save writes t (whose Rev is already advanced) and fills in its Blocks.
func (s *Store) save(ctx context.Context, tx pgx.Tx, t *taskgraph.Task, now time.Time) error {
	meta, err := metadataJSON(t.Metadata)
	if err != nil {
		return err
	}
	t.UpdatedAt = now
	var blocks []int64
	err = tx.QueryRow(ctx, `UPDATE taskgraph_tasks t SET subject = $3, description = $4, status = $5, owner = $6, blocked_by = $7,
		metadata = $8, updated_at = $9, rev = $10, claimed_at = $11, lease_expires_at = $12, prev_owner = $13
		WHERE graph = $1 AND id = $2 RETURNING `+blocksOf,
		s.graph, t.ID, t.Subject, t.Description, string(t.Status), t.Owner, int64s(t.BlockedBy), meta, now,
		t.Rev, nullTime(t.ClaimedAt), nullTime(t.LeaseExpiresAt), t.PrevOwner).Scan(&blocks)
	t.Blocks = ids(blocks)
	return err
}

func ids(ns []int64) []taskgraph.ID {
	var out []taskgraph.ID
	for _, n := range ns {
		out = append(out, taskgraph.ID(n))
	}
	return out
}

// backward counts the edges of t whose blocker has the higher id.
func backward(id taskgraph.ID, blockedBy []taskgraph.ID) int64 {
	n := int64(0)
	for _, b := range blockedBy {
		if b > id {
			n++
		}
	}
	return n
}

// addBackward records a change in the graph's count of backward edges and
// returns the count before it.
func (s *Store) addBackward(ctx context.Context, tx pgx.Tx, delta int64) (int64, error) {
	var before int64
	err := tx.QueryRow(ctx, `UPDATE taskgraph_graphs SET backward_edges = backward_edges + $2 WHERE name = $1 RETURNING backward_edges - $2`, s.graph, delta).Scan(&before)
	return before, err
}

func (s *Store) withBlocks(ctx context.Context, tx pgx.Tx, t taskgraph.Task) (taskgraph.Task, error) {
	var err error
	t.Blocks, err = s.blocks(ctx, tx, t.ID)
	return t, err
}

func metadataJSON(m map[string]any) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, &taskgraph.InvalidError{Field: "metadata", Reason: "not representable as JSON: " + err.Error()}
	}
	return data, nil
}

// normalize returns m as JSON reads it back, as every store does.
func normalize(m map[string]any) (map[string]any, error) {
	data, err := metadataJSON(m)
	if err != nil || data == nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(data, &out)
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func int64s(ids []taskgraph.ID) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

func addIDs(s, add []taskgraph.ID) []taskgraph.ID {
	if s == nil {
		s = []taskgraph.ID{}
	}
	for _, id := range add {
		if !slices.Contains(s, id) {
			s = append(s, id)
		}
	}
	return s
}

// Create implements taskgraph.Store.
func (s *Store) Create(ctx context.Context, nt taskgraph.NewTask) (taskgraph.Task, error) {
	if nt.Subject == "" {
		return taskgraph.Task{}, &taskgraph.InvalidError{Field: "subject", Reason: "must not be empty"}
	}
	meta, err := normalize(nt.Metadata)
	if err != nil {
		return taskgraph.Task{}, err
	}
	var t taskgraph.Task
	err = s.begin(ctx, func(tx pgx.Tx) error {
		if len(nt.Blocks) > 0 {
			if err := s.serialise(ctx, tx); err != nil {
				return err
			}
		}
		// The id is taken in the transaction: a refused create rolls it
		// back, an accepted one can never be allocated again.
		var next int64
		if err := tx.QueryRow(ctx, `UPDATE taskgraph_graphs SET high_water = high_water + 1 WHERE name = $1 RETURNING high_water`, s.graph).Scan(&next); err != nil {
			return err
		}
		id := taskgraph.ID(next)
		if err := s.checkEdges(ctx, tx, id, "blockedBy", nt.BlockedBy); err != nil {
			return err
		}
		if err := s.checkEdges(ctx, tx, id, "blocks", nt.Blocks); err != nil {
			return err
		}
		by := addIDs(nil, nt.BlockedBy)
		blocks := slices.Sorted(slices.Values(addIDs(nil, nt.Blocks)))
		if len(blocks) > 0 {
			// The new task blocks tasks with lower ids: backward edges.
			if _, err := s.addBackward(ctx, tx, int64(len(blocks))); err != nil {
				return err
			}
			// A cycle needs a path from the new task, through a task it
			// blocks, to one that blocks it.
			extra := map[taskgraph.ID][]taskgraph.ID{id: blocks}
			for _, b := range slices.Sorted(slices.Values(by)) {
				if path, err := s.path(ctx, tx, id, b, extra, nil); err != nil || path != nil {
					if err == nil {
						err = &taskgraph.CycleError{Path: append(path, id)}
					}
					return err
				}
			}
		}
		data, err := metadataJSON(meta)
		if err != nil {
			return err
		}
		t, err = scanTask(tx.QueryRow(ctx, `INSERT INTO taskgraph_tasks (graph, id, subject, description, status, owner, blocked_by, metadata, created_at, updated_at, rev)
			SELECT $1, $2, $3, $4, 'pending', $5, $6, $7, c.t, c.t, 1 FROM (SELECT clock_timestamp() AS t) c RETURNING `+columns,
			s.graph, id, nt.Subject, nt.Description, nt.Owner, int64s(by), data))
		if err != nil {
			return err
		}
		if len(blocks) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE taskgraph_tasks SET blocked_by = array_append(blocked_by, $2), rev = rev + 1, updated_at = clock_timestamp()
				WHERE graph = $1 AND id = ANY($3)`, s.graph, id, int64s(blocks)); err != nil {
				return err
			}
			t.Blocks = blocks
		}
		return nil
	})
	return t, err
}

// path searches forward from "from" along dependents for "to", with extra
// edges (blocker -> dependents) added and the edges of the tasks in
// replaced taken from their new BlockedBy. It returns from ... to, or nil.
func (s *Store) path(ctx context.Context, tx pgx.Tx, from, to taskgraph.ID, extra map[taskgraph.ID][]taskgraph.ID, replaced map[taskgraph.ID][]taskgraph.ID) ([]taskgraph.ID, error) {
	parent := map[taskgraph.ID]taskgraph.ID{from: from}
	frontier := []taskgraph.ID{from}
	for len(frontier) > 0 {
		rows, err := tx.Query(ctx, `SELECT id, blocked_by FROM taskgraph_tasks WHERE graph = $1 AND blocked_by && $2 ORDER BY id`, s.graph, int64s(frontier))
		if err != nil {
			return nil, err
		}
		next := map[taskgraph.ID][]taskgraph.ID{} // dependent -> its blockers in the frontier
		for rows.Next() {
			var id int64
			var by []int64
			if err := rows.Scan(&id, &by); err != nil {
				rows.Close()
				return nil, err
			}
			if _, ok := replaced[taskgraph.ID(id)]; ok {
				continue
			}
			for _, b := range by {
				next[taskgraph.ID(id)] = append(next[taskgraph.ID(id)], taskgraph.ID(b))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		for d, by := range replaced {
			next[d] = by
		}
		inFrontier := map[taskgraph.ID]bool{}
		for _, f := range frontier {
			inFrontier[f] = true
			for _, d := range extra[f] {
				next[d] = append(next[d], f)
			}
		}
		var level []taskgraph.ID
		for _, d := range slices.Sorted(mapKeys(next)) {
			if _, seen := parent[d]; seen {
				continue
			}
			for _, b := range next[d] {
				if inFrontier[b] {
					parent[d] = b
					level = append(level, d)
					break
				}
			}
			if d == to && parent[d] != 0 {
				var p []taskgraph.ID
				for n := to; n != from; n = parent[n] {
					p = append(p, n)
				}
				p = append(p, from)
				slices.Reverse(p)
				return p, nil
			}
		}
		frontier = level
	}
	return nil, nil
}

func mapKeys[V any](m map[taskgraph.ID]V) func(func(taskgraph.ID) bool) {
	return func(yield func(taskgraph.ID) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// Get implements taskgraph.Store. It is one query, outside a transaction.
func (s *Store) Get(ctx context.Context, id taskgraph.ID) (taskgraph.Task, error) {
	if s.closed.Load() {
		return taskgraph.Task{}, taskgraph.ErrClosed
	}
	if id <= 0 {
		return taskgraph.Task{}, &taskgraph.InvalidError{Field: "id", Reason: fmt.Sprintf("%d is not a positive task id", id)}
	}
	var blocks []int64
	t, err := scanTask(s.pool.QueryRow(ctx, `SELECT `+columns+`, `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = $2`, s.graph, id), &blocks)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, &taskgraph.NotFoundError{ID: id}
	}
	t.Blocks = ids(blocks)
	return t, err
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

// Update implements taskgraph.Store.
func (s *Store) Update(ctx context.Context, id taskgraph.ID, p taskgraph.Patch) (taskgraph.Task, error) {
	var t taskgraph.Task
	err := s.begin(ctx, func(tx pgx.Tx) error {
		edges := len(p.AddBlockedBy)+len(p.AddBlocks)+len(p.RemoveBlockedBy)+len(p.RemoveBlocks) > 0
		if edges {
			if err := s.serialise(ctx, tx); err != nil {
				return err
			}
		}
		var now time.Time
		var err error
		if t, now, err = s.lock(ctx, tx, id); err != nil {
			return err
		}
		if p.IfRev != 0 && p.IfRev != t.Rev {
			return &taskgraph.ConflictError{ID: id, Want: p.IfRev, Got: t.Rev}
		}
		t.Rev++
		if p.Subject != nil {
			if *p.Subject == "" {
				return &taskgraph.InvalidError{Field: "subject", Reason: "must not be empty"}
			}
			t.Subject = *p.Subject
		}
		if p.Description != nil {
			t.Description = *p.Description
		}
		if p.Owner != nil {
			t.Owner = *p.Owner
		}
		if err := s.checkEdges(ctx, tx, id, "addBlockedBy", p.AddBlockedBy); err != nil {
			return err
		}
		if err := s.checkEdges(ctx, tx, id, "addBlocks", p.AddBlocks); err != nil {
			return err
		}
		oldBy := t.BlockedBy
		delta := -backward(id, oldBy)
		t.BlockedBy = addIDs(t.BlockedBy, p.AddBlockedBy)
		t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b taskgraph.ID) bool { return slices.Contains(p.RemoveBlockedBy, b) })
		// The other tasks whose blockedBy this patch edits.
		others := map[taskgraph.ID]*taskgraph.Task{}
		other := func(d taskgraph.ID) (*taskgraph.Task, error) {
			if o := others[d]; o != nil {
				return o, nil
			}
			o, _, err := s.lock(ctx, tx, d)
			if err != nil {
				return nil, err
			}
			o.Rev++
			delta -= backward(d, o.BlockedBy)
			others[d] = &o
			return &o, nil
		}
		for _, d := range p.AddBlocks {
			o, err := other(d)
			if err != nil {
				return err
			}
			o.BlockedBy = addIDs(o.BlockedBy, []taskgraph.ID{id})
		}
		for _, d := range p.RemoveBlocks {
			o := others[d]
			if o == nil {
				cur, _, err := s.lock(ctx, tx, d)
				if errors.Is(err, taskgraph.ErrNotFound) || errors.Is(err, taskgraph.ErrInvalid) || !slices.Contains(cur.BlockedBy, id) {
					continue // no such edge: nothing to write
				}
				if err != nil {
					return err
				}
				if o, err = other(d); err != nil {
					return err
				}
			}
			o.BlockedBy = slices.DeleteFunc(o.BlockedBy, func(b taskgraph.ID) bool { return b == id })
		}
		if p.Metadata != nil {
			set, err := normalize(p.Metadata)
			if err != nil {
				return err
			}
			if t.Metadata == nil {
				t.Metadata = map[string]any{}
			}
			for k := range p.Metadata {
				if v := set[k]; v == nil {
					delete(t.Metadata, k)
				} else {
					t.Metadata[k] = v
				}
			}
		}
		entering := false
		if p.Status != nil && *p.Status != t.Status {
			st := *p.Status
			if !st.Valid() {
				return &taskgraph.InvalidError{Field: "status", Reason: fmt.Sprintf("%q is not pending, in_progress or completed", st)}
			}
			if st == taskgraph.InProgress && t.Owner == "" {
				return &taskgraph.InvalidError{Field: "owner", Reason: "an in_progress task needs an owner: use Claim, or set Owner in the same patch"}
			}
			if st == taskgraph.Pending && p.Owner == nil {
				t.Owner = ""
			}
			if st == taskgraph.InProgress && t.Status == taskgraph.Pending {
				t.ClaimedAt = now
			}
			if st != taskgraph.InProgress {
				t.LeaseExpiresAt = time.Time{}
			}
			entering = st != taskgraph.Pending
			t.Status = st
		}
		if entering {
			if err := s.blocked(ctx, tx, t); err != nil {
				return err
			}
		}
		// New edges must not close a cycle: b -> id for each new blocker,
		// id -> d for each task it now blocks.
		replaced := map[taskgraph.ID][]taskgraph.ID{id: t.BlockedBy}
		delta += backward(id, t.BlockedBy)
		for d, o := range others {
			replaced[d] = o.BlockedBy
			delta += backward(d, o.BlockedBy)
		}
		before := int64(-1)
		if edges {
			if before, err = s.addBackward(ctx, tx, delta); err != nil {
				return err
			}
		}
		type edge struct{ from, to taskgraph.ID }
		var added []edge
		for _, b := range t.BlockedBy {
			if !slices.Contains(oldBy, b) {
				added = append(added, edge{b, id})
			}
		}
		for _, d := range p.AddBlocks {
			added = append(added, edge{id, d})
		}
		sort.Slice(added, func(i, j int) bool {
			if added[i].from != added[j].from {
				return added[i].from < added[j].from
			}
			return added[i].to < added[j].to
		})
		forwardOnly := before == 0
		for _, e := range added {
			forwardOnly = forwardOnly && e.from < e.to
		}
		if forwardOnly {
			added = nil // ids are a topological order, and stay one
		}
		for _, e := range added {
			path, err := s.path(ctx, tx, e.to, e.from, nil, replaced)
			if err != nil {
				return err
			}
			if path != nil {
				return &taskgraph.CycleError{Path: append(path, e.to)}
			}
		}
		if len(t.Metadata) == 0 {
			t.Metadata = nil
		}
		if err := s.save(ctx, tx, &t, now); err != nil {
			return err
		}
		if len(others) == 0 {
			return nil
		}
		for _, d := range slices.Sorted(mapKeys(others)) {
			if err := s.save(ctx, tx, others[d], now); err != nil {
				return err
			}
		}
		// Blocks reflects the other tasks as saved.
		var blocks []int64
		err = tx.QueryRow(ctx, `SELECT `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = $2`, s.graph, id).Scan(&blocks)
		t.Blocks = ids(blocks)
		return err
	})
	return t, err
}

// Claim implements taskgraph.Store.
func (s *Store) Claim(ctx context.Context, id taskgraph.ID, owner string, opts ...taskgraph.ClaimOption) (taskgraph.Task, error) {
	var t taskgraph.Task
	err := s.begin(ctx, func(tx pgx.Tx) error {
		var err error
		t, err = s.claim(ctx, tx, id, owner, taskgraph.LeaseOf(opts))
		return err
	})
	return t, err
}

func (s *Store) claim(ctx context.Context, tx pgx.Tx, id taskgraph.ID, owner string, lease time.Duration) (taskgraph.Task, error) {
	if owner == "" {
		return taskgraph.Task{}, &taskgraph.InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if lease < 0 {
		return taskgraph.Task{}, &taskgraph.InvalidError{Field: "lease", Reason: "must not be negative"}
	}
	t, now, err := s.lock(ctx, tx, id)
	if err != nil {
		return t, err
	}
	switch t.Status {
	case taskgraph.Completed:
		return t, &taskgraph.InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already completed", id)}
	case taskgraph.InProgress:
		expired := !t.LeaseExpiresAt.IsZero() && !now.Before(t.LeaseExpiresAt)
		switch {
		case t.Owner == owner && lease == 0:
			return s.withBlocks(ctx, tx, t) // already ours: nothing to write
		case t.Owner == owner:
		case expired:
			t.PrevOwner = t.Owner
		default:
			return t, &taskgraph.ClaimedError{ID: id, Owner: t.Owner}
		}
	}
	if err := s.blocked(ctx, tx, t); err != nil {
		return t, err
	}
	if t.Status != taskgraph.InProgress || t.Owner != owner {
		t.ClaimedAt = now
	}
	t.Status, t.Owner, t.Rev = taskgraph.InProgress, owner, t.Rev+1
	t.LeaseExpiresAt = time.Time{}
	if lease > 0 {
		t.LeaseExpiresAt = now.Add(lease)
	}
	err = s.save(ctx, tx, &t, now)
	return t, err
}

// readyCondition holds for a task whose every blocker exists and is
// completed.
const readyCondition = `(t.blocked_by = '{}' OR NOT EXISTS (SELECT 1 FROM unnest(t.blocked_by) AS b(id) WHERE NOT EXISTS (
	SELECT 1 FROM taskgraph_tasks x WHERE x.graph = t.graph AND x.id = b.id AND x.status = 'completed')))`

// ClaimNext implements taskgraph.Store. Claiming the lowest ready task is
// one statement: concurrent callers skip the rows others have locked instead
// of waiting for them, and none can claim a row another has claimed.
func (s *Store) ClaimNext(ctx context.Context, owner string, opts ...taskgraph.ClaimOption) (taskgraph.Task, error) {
	if owner == "" {
		return taskgraph.Task{}, &taskgraph.InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	lease := taskgraph.LeaseOf(opts)
	if lease < 0 {
		return taskgraph.Task{}, &taskgraph.InvalidError{Field: "lease", Reason: "must not be negative"}
	}
	if s.closed.Load() {
		return taskgraph.Task{}, taskgraph.ErrClosed
	}
	var blocks []int64
	t, err := scanTask(s.pool.QueryRow(ctx, `UPDATE taskgraph_tasks t SET status = 'in_progress', owner = $2, claimed_at = c.now,
			lease_expires_at = CASE WHEN $3::bigint > 0 THEN c.now + $3::bigint * interval '1 microsecond' END,
			rev = rev + 1, updated_at = c.now
		FROM (SELECT clock_timestamp() AS now) c
		WHERE graph = $1 AND id = (SELECT id FROM taskgraph_tasks t WHERE graph = $1 AND status = 'pending' AND `+readyCondition+`
			ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
		RETURNING `+qualified("t")+`, `+blocksOf, s.graph, owner, lease.Microseconds()), &blocks)
	if err == nil {
		t.Blocks = ids(blocks)
		return t, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return t, err
	}
	// No ready task: the lowest one whose lease has lapsed, by database time.
	err = s.begin(ctx, func(tx pgx.Tx) error {
		var id int64
		err := tx.QueryRow(ctx, `SELECT id FROM taskgraph_tasks t WHERE graph = $1 AND status = 'in_progress'
			AND lease_expires_at <= clock_timestamp() AND `+readyCondition+`
			ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED`, s.graph).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return taskgraph.ErrNoReady
		}
		if err != nil {
			return err
		}
		t, err = s.claim(ctx, tx, taskgraph.ID(id), owner, lease)
		return err
	})
	return t, err
}

// qualified prefixes every column with a table alias.
func qualified(alias string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// checkHolder mirrors the file store: the task must be in progress and, if
// owner is given (or required), held by owner.
func checkHolder(t taskgraph.Task, owner string, required bool) error {
	switch t.Status {
	case taskgraph.Completed:
		return &taskgraph.InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is already completed", t.ID)}
	case taskgraph.Pending:
		return &taskgraph.InvalidError{Field: "status", Reason: fmt.Sprintf("task %d is pending, not in_progress: claim it first", t.ID)}
	}
	if required && owner == "" {
		return &taskgraph.InvalidError{Field: "owner", Reason: "must not be empty"}
	}
	if owner != "" && owner != t.Owner {
		return &taskgraph.ClaimedError{ID: t.ID, Owner: t.Owner}
	}
	return nil
}

// Renew implements taskgraph.Store.
func (s *Store) Renew(ctx context.Context, id taskgraph.ID, owner string, ttl time.Duration) (taskgraph.Task, error) {
	if ttl <= 0 {
		return taskgraph.Task{}, &taskgraph.InvalidError{Field: "ttl", Reason: "must be positive"}
	}
	return s.holderWrite(ctx, id, owner, true, func(t *taskgraph.Task, now time.Time) {
		t.LeaseExpiresAt = now.Add(ttl)
	})
}

// holderWrite changes a task that must be in progress and, if owner is
// given (or required), held by owner.
func (s *Store) holderWrite(ctx context.Context, id taskgraph.ID, owner string, required bool, change func(t *taskgraph.Task, now time.Time)) (taskgraph.Task, error) {
	var t taskgraph.Task
	err := s.begin(ctx, func(tx pgx.Tx) error {
		var now time.Time
		var err error
		if t, now, err = s.lock(ctx, tx, id); err != nil {
			return err
		}
		if err := checkHolder(t, owner, required); err != nil {
			return err
		}
		change(&t, now)
		t.Rev++
		return s.save(ctx, tx, &t, now)
	})
	return t, err
}

// Complete implements taskgraph.Store. The dependents are locked with the
// task, so that of two blockers of one task completed at once, the second
// to commit sees the first and reports the task as unblocked.
func (s *Store) Complete(ctx context.Context, id taskgraph.ID, owner string) (taskgraph.Completion, error) {
	var c taskgraph.Completion
	err := s.begin(ctx, func(tx pgx.Tx) error {
		if id <= 0 {
			return &taskgraph.InvalidError{Field: "id", Reason: fmt.Sprintf("%d is not a positive task id", id)}
		}
		rows, err := tx.Query(ctx, `SELECT `+columns+`, clock_timestamp() FROM taskgraph_tasks
			WHERE graph = $1 AND (id = $2 OR blocked_by @> ARRAY[$2::bigint]) ORDER BY id FOR UPDATE`, s.graph, id)
		if err != nil {
			return err
		}
		var t taskgraph.Task
		var now time.Time
		found := false
		var deps []taskgraph.ID
		for rows.Next() {
			var n time.Time
			r, err := scanTask(rows, &n)
			if err != nil {
				rows.Close()
				return err
			}
			if r.ID == id {
				t, now, found = r, n.UTC(), true
			} else {
				deps = append(deps, r.ID)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if !found {
			return &taskgraph.NotFoundError{ID: id}
		}
		if err := checkHolder(t, owner, false); err != nil {
			return err
		}
		if err := s.blocked(ctx, tx, t); err != nil {
			return err
		}
		t.Status, t.Rev = taskgraph.Completed, t.Rev+1
		t.LeaseExpiresAt = time.Time{}
		if err := s.save(ctx, tx, &t, now); err != nil {
			return err
		}
		c.Task, c.Unblocked = t, nil
		if len(deps) == 0 {
			return nil
		}
		rows, err = tx.Query(ctx, `SELECT `+columns+`, `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = ANY($2)
			AND status = 'pending' AND `+readyCondition+` ORDER BY id`, s.graph, int64s(deps))
		if err != nil {
			return err
		}
		c.Unblocked, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (taskgraph.Task, error) {
			var blocks []int64
			u, err := scanTask(r, &blocks)
			u.Blocks = ids(blocks)
			return u, err
		})
		return err
	})
	return c, err
}

// Release implements taskgraph.Store.
func (s *Store) Release(ctx context.Context, id taskgraph.ID, owner string) (taskgraph.Task, error) {
	return s.holderWrite(ctx, id, owner, false, func(t *taskgraph.Task, _ time.Time) {
		t.Status, t.Owner = taskgraph.Pending, ""
		t.ClaimedAt, t.LeaseExpiresAt = time.Time{}, time.Time{}
	})
}

// Delete implements taskgraph.Store.
func (s *Store) Delete(ctx context.Context, id taskgraph.ID, opts ...taskgraph.DeleteOption) error {
	detach := taskgraph.DetachOf(opts)
	return s.begin(ctx, func(tx pgx.Tx) error {
		if err := s.serialise(ctx, tx); err != nil {
			return err
		}
		t, _, err := s.lock(ctx, tx, id)
		if err != nil {
			return err
		}
		deps, err := s.blocks(ctx, tx, id)
		if err != nil {
			return err
		}
		if len(deps) > 0 && !detach {
			return &taskgraph.InvalidError{Field: "id", Reason: fmt.Sprintf("tasks %v depend on task %d: remove those edges first, or delete with taskgraph.Detach()", deps, id)}
		}
		if _, err := tx.Exec(ctx, `UPDATE taskgraph_tasks SET blocked_by = array_remove(blocked_by, $2), rev = rev + 1, updated_at = clock_timestamp()
			WHERE graph = $1 AND blocked_by @> ARRAY[$2::bigint]`, s.graph, id); err != nil {
			return err
		}
		if _, err = tx.Exec(ctx, `DELETE FROM taskgraph_tasks WHERE graph = $1 AND id = $2`, s.graph, id); err != nil {
			return err
		}
		gone := backward(id, t.BlockedBy)
		for _, d := range deps {
			if id > d {
				gone++
			}
		}
		_, err = s.addBackward(ctx, tx, -gone)
		return err
	})
}

// Load implements taskgraph.Loader. After a large load it refreshes the
// table's statistics, so that the planner keeps using the indexes.
func (s *Store) Load(ctx context.Context, tasks []taskgraph.Task) error {
	if err := s.load(ctx, tasks); err != nil {
		return err
	}
	if len(tasks) >= 1000 {
		if _, err := s.pool.Exec(ctx, `ANALYZE taskgraph_tasks`); err != nil {
			return fmt.Errorf("pgstore: analyze after load: %w", err)
		}
	}
	return nil
}

func (s *Store) load(ctx context.Context, tasks []taskgraph.Task) error {
	return s.begin(ctx, func(tx pgx.Tx) error {
		if err := s.serialise(ctx, tx); err != nil {
			return err
		}
		var high int64
		if err := tx.QueryRow(ctx, `SELECT high_water FROM taskgraph_graphs WHERE name = $1 FOR UPDATE`, s.graph).Scan(&high); err != nil {
			return err
		}
		batch := map[taskgraph.ID]bool{}
		var outside []taskgraph.ID
		for i, t := range tasks {
			field := fmt.Sprintf("tasks[%d]", i)
			switch {
			case int64(t.ID) <= high:
				return &taskgraph.InvalidError{Field: field, Reason: fmt.Sprintf("id %d is not above %d, the highest id this store has allocated", t.ID, high)}
			case batch[t.ID]:
				return &taskgraph.InvalidError{Field: field, Reason: fmt.Sprintf("id %d appears twice", t.ID)}
			case t.Subject == "":
				return &taskgraph.InvalidError{Field: field + ".subject", Reason: "must not be empty"}
			case !t.Status.Valid():
				return &taskgraph.InvalidError{Field: field + ".status", Reason: fmt.Sprintf("%q is not pending, in_progress or completed", t.Status)}
			}
			batch[t.ID] = true
		}
		for _, t := range tasks {
			for _, b := range t.BlockedBy {
				if b == t.ID {
					return &taskgraph.InvalidError{Field: "blockedBy", Reason: fmt.Sprintf("task %d cannot block itself", b)}
				}
				if !batch[b] {
					outside = append(outside, b)
				}
			}
		}
		if err := s.checkEdges(ctx, tx, 0, "blockedBy", outside); err != nil {
			return err
		}
		// Existing tasks cannot depend on new ones, so a cycle lies within
		// the batch.
		if path := taskgraph.FindCycle(tasks); path != nil {
			return &taskgraph.CycleError{Path: path}
		}
		top, added := high, int64(0)
		for _, t := range tasks {
			added += backward(t.ID, t.BlockedBy)
			meta, err := normalize(t.Metadata)
			if err != nil {
				return err
			}
			data, _ := metadataJSON(meta)
			created, updated := t.CreatedAt, t.UpdatedAt
			if _, err := tx.Exec(ctx, `INSERT INTO taskgraph_tasks (graph, id, subject, description, status, owner, blocked_by, metadata,
				created_at, updated_at, rev, claimed_at, lease_expires_at, prev_owner)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, coalesce($9, clock_timestamp()), coalesce($10, clock_timestamp()), $11, $12, $13, $14)`,
				s.graph, t.ID, t.Subject, t.Description, string(t.Status), t.Owner, int64s(addIDs(nil, t.BlockedBy)), data,
				nullTime(created), nullTime(updated), t.Rev+1, nullTime(t.ClaimedAt), nullTime(t.LeaseExpiresAt), t.PrevOwner); err != nil {
				return err
			}
			top = max(top, int64(t.ID))
		}
		_, err := tx.Exec(ctx, `UPDATE taskgraph_graphs SET high_water = $2, backward_edges = backward_edges + $3 WHERE name = $1`, s.graph, top, added)
		return err
	})
}

// Watch implements taskgraph.Watcher with LISTEN/NOTIFY: a trigger notifies
// every change to a task, from any client of the database, at commit.
// Notifications that arrive together are coalesced. It holds one pool
// connection until ctx is done.
func (s *Store) Watch(ctx context.Context) (<-chan taskgraph.Event, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("pgstore: watch: %w", err)
	}
	if _, err := conn.Exec(ctx, `LISTEN taskgraph`); err != nil {
		conn.Release()
		return nil, fmt.Errorf("pgstore: watch: %w", err)
	}
	b, err := s.Board(ctx)
	if err != nil {
		conn.Release()
		return nil, err
	}
	known := map[taskgraph.ID]taskgraph.Task{}
	ready := map[taskgraph.ID]bool{}
	for _, list := range [][]taskgraph.Task{b.Ready, b.Blocked, b.InProgress, b.Completed} {
		for _, t := range list {
			known[t.ID] = t
		}
	}
	for _, t := range b.Ready {
		ready[t.ID] = true
	}
	out := make(chan taskgraph.Event)
	go func() {
		defer close(out)
		defer func() {
			conn.Exec(context.Background(), `UNLISTEN taskgraph`)
			conn.Release()
		}()
		send := func(e taskgraph.Event) bool {
			select {
			case out <- e:
				return true
			case <-ctx.Done():
				return false
			}
		}
		for {
			n, err := conn.Conn().WaitForNotification(ctx)
			if err != nil {
				return
			}
			touched := map[taskgraph.ID]string{}
			for n != nil {
				if graph, rest, ok := strings.Cut(n.Payload, "\t"); ok && graph == s.graph {
					var id int64
					var op string
					if _, err := fmt.Sscanf(rest, "%d\t%s", &id, &op); err == nil {
						touched[taskgraph.ID(id)] = op
					}
				}
				// Gather what is already queued, then handle it at once.
				short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
				n, _ = conn.Conn().WaitForNotification(short)
				cancel()
			}
			if len(touched) == 0 {
				continue
			}
			b, err := s.Board(ctx)
			if err != nil {
				return
			}
			now := map[taskgraph.ID]taskgraph.Task{}
			for _, list := range [][]taskgraph.Task{b.Ready, b.Blocked, b.InProgress, b.Completed} {
				for _, t := range list {
					now[t.ID] = t
				}
			}
			for _, id := range slices.Sorted(mapKeys(touched)) {
				t, exists := now[id]
				_, existed := known[id]
				switch {
				case exists && !existed:
					if !send(taskgraph.Event{Kind: taskgraph.Created, Task: t}) {
						return
					}
				case exists:
					if !send(taskgraph.Event{Kind: taskgraph.Updated, Task: t}) {
						return
					}
				case existed:
					if !send(taskgraph.Event{Kind: taskgraph.Deleted, Task: known[id]}) {
						return
					}
				}
			}
			next := map[taskgraph.ID]bool{}
			for _, t := range b.Ready {
				next[t.ID] = true
				if !ready[t.ID] && !send(taskgraph.Event{Kind: taskgraph.Unblocked, Task: t}) {
					return
				}
			}
			known, ready = now, next
		}
	}()
	return out, nil
}

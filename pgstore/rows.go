// The mapping between tasks and rows: scanning, locking, saving. Nothing
// here decides anything.

package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/slicesx"
)

const columns = `id, subject, description, status, owner, blocked_by, metadata, created_at, updated_at, rev, claimed_at, lease_expires_at, prev_owner,
	priority, labels, key, reason, result, notes, history, not_before, due, max_attempts, attempts, backoff_us, parent,
	max_runtime_us, progress_window_us, needs_approval, created_via, links, check_name, acceptance`

// blocksOf selects the ids of the tasks blocked by the row t, in order.
//
// The graph is compared as "(graph = …) IS TRUE", the same (graph is NOT
// NULL) but not an index condition, here and in dependentsSQL (the hot
// paths: every Complete and ClaimNext; Delete's lookup in lockTasks keeps
// the plain comparison): the dependents are found by the GIN index on
// blocked_by alone, and those of other graphs filtered out. Else the
// planner, estimating a graph at a fraction of the table, may AND the
// index's few rows with a bitmap of the graph's every row by the primary
// key, which reads all the graph's index entries (10,000 for a 10,000-task
// graph). The cost moves to the other graphs: ids are per graph, so the
// index finds the dependents of the same id in every graph of the table,
// and a table of many large graphs filters more rows.
const blocksOf = `ARRAY(SELECT d.id FROM taskgraph_tasks d WHERE (d.graph = t.graph) IS TRUE AND d.blocked_by @> ARRAY[t.id] ORDER BY d.id)`

// dependentsSQL locks the tasks of graph $1 that task $2 blocks and reads
// their ids and statuses, in id order (see blocksOf for the graph's
// comparison): what Complete and Reopen decide by, without the 27 columns
// of each.
const dependentsSQL = `SELECT id, status, false FROM taskgraph_tasks WHERE (graph = $1) IS TRUE AND blocked_by @> ARRAY[$2::bigint] ORDER BY id FOR UPDATE`

// scanTask reads the columns of a task, then extra.
func scanTask(row pgx.Row, extra ...any) (taskgraph.Task, error) {
	return newTaskRow(extra...).scan(row)
}

// scanView reads the columns of a task followed by its blocksOf.
func scanView(row pgx.Row) (taskgraph.Task, error) {
	return newViewRow().scan(row)
}

// collectTasks reads every row of rows with r.
func collectTasks(rows pgx.Rows, r *taskRow) ([]taskgraph.Task, error) {
	return pgx.CollectRows(rows, r.collect)
}

// taskRow is where the columns of a task are scanned to: one allocation
// for a query, reused row after row, where a variable per column escaped
// to the heap for each row (TestTaskRowReused).
type taskRow struct {
	t                              taskgraph.Task
	id, backoff, parent            int64
	maxRuntime, window             int64
	needsApproval                  bool
	via                            string
	links                          []byte
	check                          string
	acceptance                     []string
	by, blocks                     []int64
	meta, notes, history           []byte
	claimed, lease, notBefore, due *time.Time
	status                         string
	prio                           int16
	maxAttempts, attempts          int32
	dest                           []any
}

// newTaskRow returns the destination of the columns of a task, then extra.
func newTaskRow(extra ...any) *taskRow {
	r := &taskRow{}
	t := &r.t
	r.dest = append([]any{&r.id, &t.Subject, &t.Description, &r.status, &t.Owner, &r.by, &r.meta, &t.CreatedAt, &t.UpdatedAt, &t.Rev, &r.claimed, &r.lease, &t.PrevOwner,
		&r.prio, &t.Labels, &t.Key, &t.Reason, &t.Result, &r.notes, &r.history, &r.notBefore, &r.due, &r.maxAttempts, &r.attempts, &r.backoff, &r.parent,
		&r.maxRuntime, &r.window, &r.needsApproval, &r.via, &r.links, &r.check, &r.acceptance}, extra...)
	return r
}

// newViewRow returns the destination of the columns of a task followed
// by its blocksOf.
func newViewRow() *taskRow {
	r := newTaskRow()
	r.dest = append(r.dest, &r.blocks)
	return r
}

// collect is scan for pgx.CollectRows and pgx.AppendRows.
func (r *taskRow) collect(row pgx.CollectableRow) (taskgraph.Task, error) { return r.scan(row) }

// scan reads row. What the last row left is cleared first: a scan may
// reuse the slice or value a destination points to.
func (r *taskRow) scan(row pgx.Row) (taskgraph.Task, error) {
	r.t, r.by, r.blocks, r.meta, r.notes, r.history, r.links = taskgraph.Task{}, nil, nil, nil, nil, nil, nil
	r.claimed, r.lease, r.notBefore, r.due = nil, nil, nil, nil
	if err := row.Scan(r.dest...); err != nil {
		return r.t, err
	}
	t := r.t
	t.ID, t.Status, t.BlockedBy, t.Blocks, t.Priority = taskgraph.ID(r.id), taskgraph.Status(r.status), ids(r.by), ids(r.blocks), taskgraph.PriorityLevel(int(r.prio))
	if len(t.Labels) == 0 {
		t.Labels = nil
	}
	if len(r.meta) > 0 {
		if err := json.Unmarshal(r.meta, &t.Metadata); err != nil {
			return t, err
		}
		if len(t.Metadata) == 0 {
			t.Metadata = nil // '{}', written by hand: no metadata, as put writes it
		}
	}
	if err := unmarshalList(r.notes, &t.Notes); err != nil {
		return t, err
	}
	if err := unmarshalList(r.history, &t.History); err != nil {
		return t, err
	}
	t.CreatedAt, t.UpdatedAt = t.CreatedAt.UTC(), t.UpdatedAt.UTC()
	t.ClaimedAt, t.LeaseExpiresAt, t.NotBefore, t.Due = utc(r.claimed), utc(r.lease), utc(r.notBefore), utc(r.due)
	t.MaxAttempts, t.Attempts, t.Backoff = int(r.maxAttempts), int(r.attempts), time.Duration(r.backoff)*time.Microsecond
	t.Parent = taskgraph.ID(r.parent)
	var links []taskgraph.Link
	if err := unmarshalList(r.links, &links); err != nil {
		return t, err
	}
	if r.maxRuntime != 0 || r.window != 0 || r.needsApproval || r.via != "" || links != nil || r.check != "" || len(r.acceptance) > 0 {
		t.Extra = &taskgraph.Extra{MaxRuntime: time.Duration(r.maxRuntime) * time.Microsecond, ProgressWindow: time.Duration(r.window) * time.Microsecond,
			NeedsApproval: r.needsApproval, CreatedVia: r.via, Links: links, Check: r.check}
		if len(r.acceptance) > 0 {
			t.Extra.Acceptance = slices.Clone(r.acceptance)
		}
	}
	return t, nil
}

// utc is the time of a nullable column, in UTC; zero when NULL.
func utc(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// unmarshalList decodes a JSON array column into *out, nil when NULL or
// empty, its times in UTC as every store returns them.
func unmarshalList[T any](data []byte, out *[]T) error {
	if len(data) == 0 {
		return nil
	}
	if !decodeFlat(data, out) {
		if err := json.Unmarshal(data, out); err != nil {
			return err
		}
	}
	if len(*out) == 0 {
		*out = nil
	}
	for i := range *out {
		switch v := any(&(*out)[i]).(type) {
		case *taskgraph.Note:
			v.At = v.At.UTC()
		case *taskgraph.Transition:
			v.At = v.At.UTC()
		case *taskgraph.Link:
			v.At = v.At.UTC()
		}
	}
	return nil
}

// jsonText is JSON as a query argument for a json or jsonb parameter: as
// text (a []byte would go as bytea in the simple protocol, which a pool
// for a connection pooler may use, and the server refuses it as JSON);
// nil, NULL.
func jsonText(data []byte) any {
	if data == nil {
		return nil
	}
	return string(data)
}

// marshalList encodes a list for a JSON array column: NULL when empty.
func marshalList[T any](list []T) []byte {
	if len(list) == 0 {
		return nil
	}
	data, _ := json.Marshal(list) // plain values: it marshals
	return data
}

// lock reads task id for update, with the time of the operation (at is
// its parameter; see Store.at).
func (s *Store) lock(ctx context.Context, tx pgx.Tx, id taskgraph.ID, at *time.Time) (*taskgraph.Task, time.Time, error) {
	var t *taskgraph.Task
	var now time.Time
	b := &pgx.Batch{}
	s.queueLock(b, id, at, &t, &now)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, now, err
	}
	return t, now.UTC(), nil
}

// lockWithBlockers is lock, and the status of each of the task's blockers
// as statuses reads them (blockersSQL), in the same round trip: what a
// claim decides by. The blockers are locked shared before the Rulebook
// decides, so also for a claim it refuses: a round trip saved against a
// shared lock held until the refusal's rollback.
func (s *Store) lockWithBlockers(ctx context.Context, tx pgx.Tx, id taskgraph.ID, at *time.Time) (*taskgraph.Task, statusMap, time.Time, error) {
	var t *taskgraph.Task
	var now time.Time
	var st statusMap
	b := &pgx.Batch{}
	s.queueLock(b, id, at, &t, &now)
	s.queueBlockers(b, id, &st)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, now, err
	}
	return t, st, now.UTC(), nil
}

// lockWithDependents locks task id and every task it blocks, for a
// decision about id that depends on whether they have started (Complete
// reports which it readied, Reopen refuses if one has started). It returns
// id's task, its dependents' ids in order and their statuses, and the time
// of the operation; with blockers, also the status of each of id's
// blockers (blockersSQL), which Complete decides by. The transaction uses
// kept plans from then on (genericPlansSQL).
//
// The dependents are looked up by a second statement, sent in the same
// round trip, so that its snapshot is taken once id is locked: a write
// that adds a blocker holds a lock on the blocker's row until it commits
// (statuses, lock), so every dependent committed before id was locked is
// found, and none can be added until this transaction ends. One statement
// would miss a dependent whose creator committed while it waited for id.
func (s *Store) lockWithDependents(ctx context.Context, tx pgx.Tx, id taskgraph.ID, blockers bool) (t *taskgraph.Task, deps []taskgraph.ID, depStatus, st statusMap, now time.Time, err error) {
	b := &pgx.Batch{}
	b.Queue(genericPlansSQL)
	s.queueLock(b, id, s.at(), &t, &now)
	b.Queue(dependentsSQL, s.graph, id).Query(func(rows pgx.Rows) error {
		m, err := scanStatuses(rows)
		depStatus, deps = m, slices.Sorted(maps.Keys(m))
		return err
	})
	if blockers {
		s.queueBlockers(b, id, &st)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, nil, nil, nil, now, err
	}
	return t, deps, depStatus, st, now.UTC(), nil
}

// queueLock queues in b the statement of lock: task id read for update
// into *t, the time of the operation (at is its parameter) into *now.
func (s *Store) queueLock(b *pgx.Batch, id taskgraph.ID, at *time.Time, t **taskgraph.Task, now *time.Time) {
	b.Queue(`SELECT `+columns+`, `+nowSQL(3)+` FROM taskgraph_tasks WHERE graph = $1 AND id = $2 FOR UPDATE`, s.graph, id, at).QueryRow(func(row pgx.Row) error {
		got, err := scanTask(row, now)
		if errors.Is(err, pgx.ErrNoRows) {
			return taskgraph.Rules.Missing(id)
		}
		*t = &got
		return err
	})
}

// blockersSQL reads and locks shared, as statuses does, the existing
// blockers of task $2 of graph $1, in id order (the order every write
// locks tasks in: a task's blocked_by is in the order its edges were
// added, and locking in that order deadlocked against an Update that
// locks the same tasks by id). Sent after the task's lock in the same
// round trip, it reads the blockers of the version locked, which no other
// transaction can change before this one ends. Each is looked up by the
// primary key, so a task without blockers costs one read of its row
// (written as "id = ANY" of the list, it cost 80 µs more than that read,
// by pgbench).
var blockersSQL = `SELECT x.id, x.status, x.early FROM (SELECT DISTINCT b.id FROM unnest((SELECT blocked_by FROM taskgraph_tasks WHERE graph = $1 AND id = $2)) AS b(id) ORDER BY b.id) AS b
	CROSS JOIN LATERAL (SELECT id, status, ` + outOfOrderSQL + ` AS early FROM taskgraph_tasks x WHERE x.graph = $1 AND x.id = b.id FOR SHARE) x ORDER BY x.id`

// queueBlockers queues in b the statement blockersSQL of task id, read
// into *st.
func (s *Store) queueBlockers(b *pgx.Batch, id taskgraph.ID, st *statusMap) {
	b.Queue(blockersSQL, s.graph, id).Query(func(rows pgx.Rows) error {
		var err error
		*st, err = scanStatuses(rows)
		return err
	})
}

// lockTasks reads the tasks that match where for update, in id order,
// with the time of the operation. In where, $2 is at and the args are $3
// on.
func (s *Store) lockTasks(ctx context.Context, tx pgx.Tx, at *time.Time, where string, args ...any) (map[taskgraph.ID]*taskgraph.Task, []taskgraph.ID, time.Time, error) {
	rows, err := tx.Query(ctx, `SELECT `+columns+`, `+nowSQL(2)+` FROM taskgraph_tasks WHERE graph = $1 AND `+where+` ORDER BY id FOR UPDATE`,
		append([]any{s.graph, at}, args...)...)
	if err != nil {
		return nil, nil, time.Time{}, err
	}
	var now time.Time
	list, err := collectTasks(rows, newTaskRow(&now))
	out := make(map[taskgraph.ID]*taskgraph.Task, len(list))
	order := make([]taskgraph.ID, len(list))
	for i := range list {
		out[list[i].ID], order[i] = &list[i], list[i].ID
	}
	return out, order, now.UTC(), err
}

// statusMap answers the Rulebook's questions about the tasks a write
// names: whether they exist, their status, and whether a completed one is
// out of order.
type statusMap map[taskgraph.ID]taskStatus

// taskStatus is a task's status, and whether it is completed out of order
// (Rules.OutOfOrder; outOfOrderSQL), as a write reads them.
type taskStatus struct {
	status taskgraph.Status
	early  bool
}

func (m statusMap) exists(id taskgraph.ID) error {
	if _, ok := m[id]; ok {
		return nil
	}
	return taskgraph.Rules.Missing(id)
}

func (m statusMap) status(id taskgraph.ID) (taskgraph.Status, bool) {
	st, ok := m[id]
	return st.status, ok
}

func (m statusMap) early(id taskgraph.ID) bool { return m[id].early }

// statuses returns the status of each existing task of the lists, locking
// the rows shared so that none of them changes or disappears before the
// transaction ends.
func (s *Store) statuses(ctx context.Context, tx pgx.Tx, lists ...[]taskgraph.ID) (statusMap, error) {
	var all []int64
	for _, l := range lists {
		all = append(all, int64s(l)...)
	}
	out := statusMap{}
	if len(all) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT id, status, `+outOfOrderSQL+` FROM taskgraph_tasks x WHERE graph = $1 AND id = ANY($2) ORDER BY id FOR SHARE`, s.graph, all)
	if err != nil {
		return nil, err
	}
	return scanStatuses(rows)
}

// scanStatuses reads rows of id, status and out of order, and closes
// them.
func scanStatuses(rows pgx.Rows) (statusMap, error) {
	defer rows.Close()
	out := statusMap{}
	for rows.Next() {
		var id int64
		var st string
		var early bool
		if err := rows.Scan(&id, &st, &early); err != nil {
			return nil, err
		}
		out[taskgraph.ID(id)] = taskStatus{taskgraph.Status(st), early}
	}
	return out, rows.Err()
}

// withBlocks fills in t.Blocks from the table.
func (s *Store) withBlocks(ctx context.Context, tx pgx.Tx, t *taskgraph.Task) (taskgraph.Task, error) {
	var blocks []int64
	err := tx.QueryRow(ctx, `SELECT `+blocksOf+` FROM taskgraph_tasks t WHERE graph = $1 AND id = $2`, s.graph, t.ID).Scan(&blocks)
	t.Blocks = ids(blocks)
	return *t, err
}

const (
	taskColumns = `(graph, id, subject, description, status, owner, blocked_by, metadata, created_at, updated_at, rev, claimed_at, lease_expires_at, prev_owner,
		priority, labels, key, reason, result, notes, history, not_before, due, max_attempts, attempts, backoff_us, parent, max_runtime_us, progress_window_us,
		needs_approval, created_via, links, check_name, acceptance)`
	insertTask = `INSERT INTO taskgraph_tasks AS t ` + taskColumns + ` VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
		$15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34)`
	updateTask = `UPDATE taskgraph_tasks t SET (subject, description, status, owner, blocked_by, metadata, created_at, updated_at, rev, claimed_at, lease_expires_at, prev_owner,
		priority, labels, key, reason, result, notes, history, not_before, due, max_attempts, attempts, backoff_us, parent, max_runtime_us, progress_window_us,
		needs_approval, created_via, links, check_name, acceptance)
		= ($3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32, $33, $34) WHERE t.graph = $1 AND t.id = $2`
	deleteTask = `DELETE FROM taskgraph_tasks WHERE graph = $1 AND id = $2`
	returning  = ` RETURNING ` + columns + `, ` + blocksOf
)

// writes is a batch of row writes sent in one round trip.
type writes struct {
	s *Store
	b pgx.Batch
}

// put queues the statement q (insertTask or updateTask) storing t as the
// Rulebook left it.
func (w *writes) put(q string, t *taskgraph.Task) *pgx.QueuedQuery {
	var meta []byte
	if len(t.Metadata) > 0 {
		meta, _ = json.Marshal(t.Metadata) // normalised by the Rulebook: it marshals
	}
	labels := t.Labels
	if labels == nil {
		labels = []string{}
	}
	var live taskgraph.Extra
	if t.Extra != nil {
		live = *t.Extra
	}
	return w.b.Queue(q, w.s.graph, t.ID, t.Subject, t.Description, string(t.Status), t.Owner, int64s(t.BlockedBy), jsonText(meta),
		t.CreatedAt, t.UpdatedAt, t.Rev, nullTime(t.ClaimedAt), nullTime(t.LeaseExpiresAt), t.PrevOwner,
		int16(t.Priority.Level()), labels, t.Key, t.Reason, t.Result, jsonText(marshalList(t.Notes)), jsonText(marshalList(t.History)),
		nullTime(t.NotBefore), nullTime(t.Due), int32(t.MaxAttempts), int32(t.Attempts), t.Backoff.Microseconds(), int64(t.Parent),
		live.MaxRuntime.Microseconds(), live.ProgressWindow.Microseconds(), live.NeedsApproval, live.CreatedVia, jsonText(marshalList(live.Links)),
		live.Check, nonNil(live.Acceptance))
}

// view queues the statement q storing t and reads back into out the task
// as stored, Blocks included.
func (w *writes) view(q string, t *taskgraph.Task, out *taskgraph.Task) {
	w.put(q+returning, t).QueryRow(func(row pgx.Row) error {
		var err error
		*out, err = scanView(row)
		return err
	})
}

// send runs the batch.
func (w *writes) send(ctx context.Context, tx pgx.Tx) error {
	if w.b.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, &w.b).Close()
}

// stored runs the Rulebook's check of what a write stores on each of its
// tasks, in the order the in-memory stores check them.
func stored(tasks ...*taskgraph.Task) error {
	for _, t := range tasks {
		if err := taskgraph.Rules.Stored(t); err != nil {
			return err
		}
	}
	return nil
}

// save stores the tasks a write changed, others first, and returns main as
// stored: its Blocks reflect the others.
func (s *Store) save(ctx context.Context, tx pgx.Tx, main *taskgraph.Task, q string, others ...*taskgraph.Task) (taskgraph.Task, error) {
	var out taskgraph.Task
	w, err := s.saving(main, q, &out, others...)
	if err != nil {
		return taskgraph.Task{}, err
	}
	return out, w.send(ctx, tx)
}

// saving checks and queues what save sends, to be sent by the caller:
// main as stored is read into *out when the batch has run.
func (s *Store) saving(main *taskgraph.Task, q string, out *taskgraph.Task, others ...*taskgraph.Task) (*writes, error) {
	if err := stored(append([]*taskgraph.Task{main}, others...)...); err != nil {
		return nil, err
	}
	w := &writes{s: s}
	for _, o := range others {
		w.put(updateTask, o)
	}
	w.view(q, main, out)
	return w, nil
}

func ids(ns []int64) []taskgraph.ID {
	var out []taskgraph.ID
	for _, n := range ns {
		out = append(out, taskgraph.ID(n))
	}
	return out
}

// int64s is ids as a bigint[] parameter takes them.
func int64s(ids []taskgraph.ID) []int64 {
	return slicesx.Map(ids, func(id taskgraph.ID) int64 { return int64(id) })
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// qualified prefixes every column with a table alias.
func qualified(alias string) string {
	cols := strings.Split(columns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

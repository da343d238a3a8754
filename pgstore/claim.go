// Claims and leases: taking a task (by id, or the most urgent ready one),
// and the writes only its holder makes, renewing and releasing the lease.

package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskgraph-dev/taskgraph"
)

// Claim implements taskgraph.Store.
func (s *Store) Claim(ctx context.Context, id taskgraph.ID, owner string, opts ...taskgraph.ClaimOption) (taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Task{}, err
	}
	set, err := taskgraph.Rules.ClaimOptions(opts) // before any SQL
	if err != nil {
		return taskgraph.Task{}, err
	}
	if err := taskgraph.Rules.ClaimArgs(owner, set.Lease); err != nil {
		return taskgraph.Task{}, err
	}
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Task, error) {
		return s.claim(ctx, tx, id, owner, set.Lease, s.at())
	})
}

// claim claims task id in tx, at the time of at (see Store.at).
func (s *Store) claim(ctx context.Context, tx pgx.Tx, id taskgraph.ID, owner string, lease time.Duration, at *time.Time) (taskgraph.Task, error) {
	if err := taskgraph.Rules.ClaimArgs(owner, lease); err != nil {
		return taskgraph.Task{}, err
	}
	t, st, now, err := s.lockWithBlockers(ctx, tx, id, at)
	if err != nil {
		return taskgraph.Task{}, err
	}
	entering := !t.Holds(now)
	write, err := taskgraph.Rules.Claim(t, owner, lease, now)
	if write && errors.Is(err, taskgraph.ErrGaveUp) { // the lapse used the last attempt: t is failed instead
		if _, serr := s.save(ctx, tx, t, updateTask); serr != nil {
			return taskgraph.Task{}, serr
		}
		return taskgraph.Task{}, afterCommit{err}
	}
	if err != nil {
		return taskgraph.Task{}, err
	}
	if !write { // already ours: nothing to write
		return s.withBlocks(ctx, tx, t)
	}
	if err := taskgraph.Rules.Blocked(t, st.status, st.early); err != nil {
		return taskgraph.Task{}, err
	}
	if entering {
		if err := s.checkLimits(ctx, tx, now, t); err != nil {
			return taskgraph.Task{}, err
		}
	}
	return s.save(ctx, tx, t, updateTask)
}

// undeferred holds for a task whose NotBefore has come by the time of
// the operation, $n (see nowSQL), and that does not await approval
// (taskgraph.Task.AwaitingApproval): with readyCondition, a task
// ClaimNext may take.
func undeferred(n int) string {
	return `(t.not_before IS NULL OR t.not_before <= ` + nowSQL(n) + `) AND NOT t.needs_approval`
}

// readyCondition holds for a task whose every blocker exists and counts
// as completed: completed, and not out of order (Rules.OutOfOrder: a
// blocker of its own unfinished). Each blocker's status is a scalar
// subquery, one lookup by the primary key: written as NOT EXISTS,
// PostgreSQL made it an anti-join, and with statistics from before any
// task was completed (a graph just loaded, autovacuum behind) it read
// every task of the table once and joined each blocker against all the
// completed ones, 0.14 ms a task checked on a 1,000-task graph and growing
// with it (TestReadyByPrimaryKey). The blockers of a completed blocker are
// looked up the same way, only for a blocker that is completed.
var readyCondition = allCompleted("t", "b", "x", " AND "+allCompleted("x", "bb", "y", ""))

// blockersCompleted holds for a task whose every blocker exists and is
// completed: readyCondition but for blockers completed out of order. It is
// what pickReady picks by: asking more made PostgreSQL plan ClaimNext's
// statement anew at every call (TestClaimNextPlannedOnce), and the
// statement checks readyCondition on the one task it picked.
var blockersCompleted = allCompleted("t", "b", "x", "")

// allCompleted holds for the task a whose every blocker exists and is
// completed and meets the condition also (about it, as x); b and x are
// the aliases of the subqueries. The blockers are listed by unnest in
// the select list of a subquery, which makes them one by one, as NOT
// EXISTS asks for them, up to the first not completed: unnest in FROM
// first made a table of them all, a millisecond for a parent of 10,000
// children (its first child not completed), which the walk of ClaimNext
// passed at every claim (TestReadyByPrimaryKey).
func allCompleted(a, b, x, also string) string {
	return `(` + a + `.blocked_by = '{}' OR NOT EXISTS (SELECT 1 FROM (SELECT unnest(` + a + `.blocked_by)) AS ` + b + `(id) WHERE
	(SELECT ` + x + `.status = 'completed'` + also + ` FROM taskgraph_tasks ` + x + ` WHERE ` + x + `.graph = ` + a + `.graph AND ` + x + `.id = ` + b + `.id) IS NOT TRUE))`
}

// outOfOrderSQL is the column that says whether the task x, as a blocker
// a write reads, is completed out of order (Rules.OutOfOrder): what the
// Rulebook's Blocked asks of a completed blocker.
var outOfOrderSQL = `(x.status = 'completed' AND NOT ` + allCompleted("x", "bb", "y", "") + `)`

// ClaimNext implements taskgraph.Store. Claiming the most urgent ready
// task is one statement (claimReady, retried like a transaction), served
// by the index on (graph, priority, created_at, id) of the pending tasks, with the
// labels of WithLabels checked on the way: concurrent callers skip the
// rows others have locked instead of waiting for them, and none can claim
// a row another has claimed. When no task is ready, or the first ready
// one needs the Rulebook's full check (it is too big, or it changed while
// the statement ran), it claims by the Rulebook in a
// transaction. Under a reached limit, and WithUnder, the task is picked
// by the streams of the pending tasks (pick.go), not by the walk.
func (s *Store) ClaimNext(ctx context.Context, owner string, opts ...taskgraph.ClaimOption) (taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Task{}, err
	}
	set, err := taskgraph.Rules.ClaimOptions(opts) // before any SQL
	if err != nil {
		return taskgraph.Task{}, err
	}
	lease := set.Lease
	labels, err := taskgraph.Rules.ClaimNextArgs(owner, lease, set.Labels)
	if err != nil {
		return taskgraph.Task{}, err
	}
	if labels == nil {
		labels = []string{}
	}
	at := s.at()
	// WithUnder (the Rulebook's transaction picks by the streams of the
	// parents under it: nextUnderSQL), and a keyed write (whose key goes in
	// its transaction, queueWriteKey): the Rulebook's transaction.
	if set.Under == 0 && taskgraph.WriteKeyOf(ctx) == "" {
		t, err := s.claimReady(ctx, owner, lease, labels, at)
		if err == nil {
			return t, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return taskgraph.Task{}, err
		}
		// No task ready, or the first needs the full check: the
		// Rulebook's transaction tells them apart.
	}
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Task, error) {
		if set.Under != 0 { // nothing is under a task that does not exist: not "no task ready"
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM taskgraph_tasks WHERE graph = $1 AND id = $2`, s.graph, set.Under).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return taskgraph.Task{}, taskgraph.Rules.Missing(set.Under)
			}
			if err != nil {
				return taskgraph.Task{}, err
			}
		}
		gaveUp := false
		// Passed over: held back by a limit, or blocked after all. next
		// reads the blockers as of its statement's snapshot, and FOR UPDATE
		// re-checks a row that changed since on its new version by that
		// snapshot (EvalPlanQual): a task whose blocker was reopened just
		// before the lock looks ready to it, and claim, which reads them
		// anew, finds it blocked. The next one in order is taken instead.
		var skip []int64
		for {
			id, err := s.next(ctx, tx, labels, at, skip, set.Under)
			if errors.Is(err, taskgraph.ErrNoReady) && gaveUp {
				return taskgraph.Task{}, afterCommit{err} // the failures stand
			}
			if err != nil {
				return taskgraph.Task{}, err
			}
			t, err := s.claim(ctx, tx, id, owner, lease, at)
			if errors.Is(err, taskgraph.ErrLimited) || errors.As(err, new(*taskgraph.BlockedError)) {
				skip = append(skip, int64(id))
				continue
			}
			if !errors.As(err, new(afterCommit)) {
				return t, err
			}
			gaveUp = true // and on to the next lapsed task
		}
	})
}

// claimOrder is the order in which ClaimNext takes tasks,
// taskgraph.Rules.ClaimOrder: the most urgent first, then the first
// created, then the lowest id. With graph = $1 and status = 'pending', the
// index taskgraph_tasks_claim walks it.
const claimOrder = `ORDER BY priority, created_at, id`

// claimReady claims the most urgent ready task that carries labels ($7)
// with one statement: the Rulebook's Claim of a ready pending task,
// written in SQL. It writes only if no blocker of the task was completed
// out of order (readyCondition; pickReady asks only that they be
// completed), the claimed version certainly passes Rules.Stored
// (fitsSQL), no label of it has a limit (unlimitedSQL), and no write to
// the task committed while the statement ran (unchangedSQL). It returns
// pgx.ErrNoRows if it claimed
// nothing: no task is ready, or the first one needs the Rulebook's check.
//
// The statement and the notification of a claim go in one round trip,
// each a transaction of its own: claimReadySQL, a Sync (the claim commits
// there, and its result comes back without waiting for the rest), then
// notifyWroteSQL and a Sync (pipeline). The claim marks the session when
// it writes (wroteSQL), so that the notification, sent before its result
// is known, is made only for a claim; a claim that fails or does not
// commit leaves no mark (set_config is undone with its transaction). On a
// pool configured for another query mode than pgx's default (the simple
// protocol, say, for a connection pooler), they go as a batch of that
// mode: BEGIN, claimReadySQL, COMMIT, notifyWroteSQL.
func (s *Store) claimReady(ctx context.Context, owner string, lease time.Duration, labels []string, at *time.Time) (t taskgraph.Task, err error) {
	var blocks []int64
	// The history entry of the claim, its time the statement's own.
	entry, _ := json.Marshal(taskgraph.Rules.ClaimTransition(owner, lease, time.Time{}))
	args := []any{s.graph, owner, lease.Microseconds(), at, int64(math.MaxInt64), taskgraph.MaxTaskSize, labels, string(entry)}
	err = retry(ctx, func() error {
		conn, err := s.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer conn.Release()
		c := conn.Conn()
		if c.Config().DefaultQueryExecMode == pgx.QueryExecModeCacheStatement {
			t, err = s.claimPipelined(ctx, c, args, &blocks)
		} else {
			t, err = s.claimBatched(ctx, c, args, &blocks)
		}
		if c.PgConn().TxStatus() != 'I' && !c.PgConn().IsClosed() { // the claim failed: its transaction is left open
			cctx, cancel := cleanupContext(ctx)
			defer cancel()
			_, _ = c.Exec(cctx, `ROLLBACK`)
		}
		return err
	})
	t.Blocks = ids(blocks)
	return t, err
}

// claimPipelined runs claimReadySQL with args, then notifyWroteSQL, in a
// pipeline, each part ended by a Sync (see claimReady).
func (s *Store) claimPipelined(ctx context.Context, c *pgx.Conn, args []any, blocks *[]int64) (taskgraph.Task, error) {
	claim, err := prepare(ctx, c, claimReadySQL, args...)
	if err != nil {
		return taskgraph.Task{}, err
	}
	notify, err := prepare(ctx, c, notifyWroteSQL, s.graph)
	if err != nil {
		return taskgraph.Task{}, err
	}
	p := c.PgConn().StartPipeline(ctx)
	claim.send(p)
	p.SendPipelineSync()
	notify.send(p)
	p.SendPipelineSync()
	if err := p.Flush(); err != nil {
		return taskgraph.Task{}, err // the pipeline is closed, and the connection with it
	}
	t, err := scanTask(claim.row(c, p), blocks, new(bool))
	if err = unreadClaim(err); err == nil || errors.Is(err, pgx.ErrNoRows) {
		// The claim's Sync: its commit, or why it failed.
		if _, serr := p.GetResults(); serr != nil {
			err = serr
		}
	}
	_ = p.Close() // the notification's own result is not the claim's
	unprepare(ctx, c, err, claimReadySQL, notifyWroteSQL)
	return t, err
}

// claimBatched runs claimReadySQL with args in a transaction, then
// notifyWroteSQL, as one batch (see claimReady).
func (s *Store) claimBatched(ctx context.Context, c *pgx.Conn, args []any, blocks *[]int64) (t taskgraph.Task, err error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(claimReadySQL, args...)
	b.Queue(`COMMIT`)
	b.Queue(notifyWroteSQL, s.graph)
	br := c.SendBatch(ctx, b)
	defer br.Close() // the notification's own result is not the claim's
	if _, err = br.Exec(); err != nil {
		if unanswered(err) { // BEGIN's answer lost: the COMMIT went too
			err = unreadAfterCommit(err)
		}
		return t, err
	}
	t, err = scanTask(br.QueryRow(), blocks, new(bool))
	if err = unreadClaim(err); err == nil || errors.Is(err, pgx.ErrNoRows) {
		ct, cerr := br.Exec()
		switch {
		case unanswered(cerr):
			cerr = unreadAfterCommit(cerr)
		case cerr == nil && ct.String() == "ROLLBACK":
			cerr = pgx.ErrTxCommitRollback
		}
		if cerr != nil {
			err = cerr
		}
	}
	return t, err
}

// unreadClaim says what a failure to read the claim's row means. The
// server's own errors (and no row: nothing ready) stop the claim before its
// commit; any other failure — a row that does not scan, a connection lost
// with the answer on its way — comes after the server ran the claim, which
// its Sync (or COMMIT, sent with it) commits (unreadAfterCommit).
func unreadClaim(err error) error {
	var pe *pgconn.PgError
	if err == nil || errors.Is(err, pgx.ErrNoRows) || errors.As(err, &pe) {
		return err
	}
	return unreadAfterCommit(err)
}

// wroteSQL, in the statement of a write that may write nothing (a claim
// of the most urgent ready task, a completion by its holder), marks the
// session as having written, and is true; notifyWroteSQL ($1 the graph),
// sent after the write's COMMIT, notifies if the session is so marked,
// and clears the mark.
const (
	wroteSQL       = `set_config('taskgraph.wrote', 'y', false) = 'y'`
	notifyWroteSQL = `SELECT CASE WHEN current_setting('taskgraph.wrote', true) = 'y' THEN pg_notify('taskgraph', $1) END,
		set_config('taskgraph.wrote', '', false)`
)

// claimReadySQL is the statement of claimReady: $1 the graph, $2 the
// owner, $3 the lease in microseconds, $4 the time (see nowSQL), $5 the
// highest rev, $6 MaxTaskSize, $7 the labels, $8 the claim's history
// entry (Rules.ClaimTransition), to which it sets the time.
var claimReadySQL = `UPDATE taskgraph_tasks t SET status = 'in_progress', owner = $2, claimed_at = c.now,
		lease_expires_at = CASE WHEN $3::bigint > 0 THEN c.now + $3::bigint * interval '1 microsecond' END,
		rev = t.rev + 1, updated_at = c.now,
		history = ` + appendHistorySQL(8) + `
	FROM (SELECT ` + nowSQL(4) + ` AS now) c
	WHERE t.graph = $1 AND t.id = (` + pickReady + `) AND ` + readyCondition + ` AND ` + fitsSQL("0") + ` AND ` + unlimitedSQL + ` AND ` + unchangedSQL + `
	RETURNING ` + qualified("t") + `, ` + blocksOf + ` AS blocks, ` + wroteSQL + ` AS wrote`

// appendHistorySQL is the task t's history with the entry $n appended,
// its time set to the statement's c.now: a one-statement write's history,
// as appendTransition keeps it for a history with room (a full one goes
// to the Rulebook, which summarises: fitsSQL).
func appendHistorySQL(n int) string {
	return fmt.Sprintf(`coalesce(t.history, '[]'::jsonb) || jsonb_build_array(jsonb_set($%d::jsonb, '{at}', to_jsonb(c.now)))`, n)
}

// pickReady selects and locks the first ready task in claim order that
// carries the labels $7 and no label whose limit is reached
// (reachedSQL), skipping rows others have locked. While no limit is
// reached, it walks the pending tasks in claim order (the index
// taskgraph_tasks_claim); when one is, that walk would pass over every
// ready task the limit holds back, and it picks by the labels' streams
// instead (pick.byLabels), then locks the task it picked, or none if
// another holds its lock (the Rulebook's transaction then picks again).
//
// The label filter is wrapped in coalesce (labels is never NULL, so it
// means the same) so that PostgreSQL plans the statement once per
// connection: a generic plan, not knowing $7, estimates "labels @> $7"
// to keep 0.5 % of the rows, which makes walking the claim index look
// dear, so it re-planned every call (about half a millisecond each, with
// or without labels). An expression it cannot see into gets the default
// estimate, half the rows, and the generic plan is the index walk
// (TestClaimNextPlannedOnce, TestClaimNextIndexed).
var pickReady = `SELECT coalesce((SELECT t.id FROM taskgraph_tasks t
	WHERE graph = $1 AND status = 'pending' AND coalesce(labels @> $7::text[], false) AND ` + reachedSQL(4) + ` = '{}' AND ` + blockersCompleted + ` AND ` + undeferred(4) + `
	` + claimOrder + ` LIMIT 1 FOR UPDATE SKIP LOCKED),
	(` + readyPick.locked(readyPick.byLabels()) + `))`

// readyPick is the pick of pickReady when a limit is reached.
var readyPick = pick{labels: `$7::text[]`, reached: reachedSQL(4), now: nowSQL(4), ready: blockersCompleted}

// reachedSQL is the labels of the graph $1 whose limit the tasks holding
// them at the time $n (see nowSQL) reach: a ready task carrying one is held
// back (taskgraph.Rules.Limited), and ClaimNext passes over it without a
// claim tried (the claim, which counts the holders under the labels'
// locks, stays the judge). It is computed once per statement, from the
// limits and the tasks in progress (the index taskgraph_tasks_running):
// with no limit, one probe of the limits' key.
func reachedSQL(n int) string {
	return `(SELECT coalesce(array_agg(l.label), '{}') FROM taskgraph_limits l WHERE l.graph = $1 AND l.max <= (SELECT count(*) FROM taskgraph_tasks h
		WHERE h.graph = $1 AND h.status = 'in_progress' AND (` + lapsesOf("h") + ` IS NULL OR ` + lapsesOf("h") + ` > ` + nowSQL(n) + `) AND h.labels @> ARRAY[l.label]))`
}

// unchangedSQL holds when the row t is the version the statement's
// snapshot saw, false when a transaction that committed after the
// snapshot was taken has written it since: FOR UPDATE then locks the
// newest version and re-evaluates the statement on it (EvalPlanQual), but
// readyCondition still reads the blockers as of the old snapshot, so it
// may see a blocker completed that has just been reopened. Reopen (and
// every write that adds a blocker) writes the dependent's row for this
// reason, so a concurrent claim sees it changed; the claim is then left to
// the Rulebook's transaction, whose statements see the new state. The
// subquery is one fetch by tuple id, on the page just read, made only for
// the one row the claim's UPDATE reaches, the one pickReady locked: as
// the snapshot saw it, it is found; re-evaluated on a newer version, it
// finds that version invisible to the old snapshot and the UPDATE skips it.
const unchangedSQL = `coalesce((SELECT true FROM taskgraph_tasks s WHERE s.ctid = t.ctid), false)`

// fitsSQL holds when a write of the row t by owner $2 (its owner, or the
// author of the history entry the write appends) certainly passes
// Rules.Stored and appending to its history needs no summary (the
// Rulebook would summarise past MaxHistory) — its history is an array
// with room, or none (a row written by hand may hold any JSON, which the
// Rulebook reads: a JSON null is no history, and appending in SQL would
// keep it as an entry): its rev ($5 is the highest)
// can advance, and an upper bound of the size of its file stays within
// MaxTaskSize ($6). JSON escapes a byte into at most 6; each id of
// blockedBy takes at most 32 bytes, each label and acceptance item 16
// besides its text (escaped, as the check's name);
// indented metadata takes at most 4 bytes per byte of its text for each
// level of nesting ([ and { bound the depth), plus 12; notes and history,
// arrays of flat objects, at most 8 bytes per byte of their text, and the
// entry 512 besides its author and the bytes of extra, an SQL expression
// bounding what else the write adds; the field names, the priority and the
// times fit in 1,024.
func fitsSQL(extra string) string {
	return `(t.rev < $5 AND CASE WHEN jsonb_typeof(t.history) = 'array' THEN jsonb_array_length(t.history) < ` + strconv.Itoa(taskgraph.MaxHistory) + ` ELSE t.history IS NULL END AND
	6 * (octet_length(t.subject) + octet_length(t.description) + octet_length(t.prev_owner) + octet_length($2::text)
		+ octet_length(t.key) + octet_length(t.reason) + octet_length(t.result) + coalesce(octet_length(array_to_string(t.labels, '')), 0))
	+ 32 * cardinality(t.blocked_by) + 16 * cardinality(t.labels)
	+ coalesce(octet_length(t.metadata::text)::bigint * (4 * (octet_length(t.metadata::text) - octet_length(translate(t.metadata::text, '[{', ''))) + 12), 0)
	+ 8 * coalesce(octet_length(t.notes::text), 0) + 8 * coalesce(octet_length(t.history::text), 0) + 6 * octet_length($2::text) + 512
	+ 8 * coalesce(octet_length(t.links::text), 0) + octet_length(t.created_via)
	+ 6 * (octet_length(t.check_name) + coalesce(octet_length(array_to_string(t.acceptance, '')), 0)) + 16 * cardinality(t.acceptance)
	+ ` + extra + ` + 1024 <= $6)`
}

// lapsesSQL is when the claim of the row t lapses, as Task.Lapse
// decides it: the earliest of its lease, claimed_at plus its max
// runtime, and its last progress (the latest of claimed_at, its newest
// note and its newest link) plus its progress window; NULL (least and greatest skip NULLs)
// when it never does.
var lapsesSQL = lapsesOf("t")

// lapsesOf is lapsesSQL of the row named alias.
func lapsesOf(alias string) string {
	return strings.NewReplacer("t.", alias+".").Replace(`least(t.lease_expires_at,
		CASE WHEN t.max_runtime_us > 0 THEN t.claimed_at + t.max_runtime_us * interval '1 microsecond' END,
		CASE WHEN t.progress_window_us > 0 THEN greatest(t.claimed_at, CASE WHEN jsonb_typeof(t.notes) = 'array' THEN (t.notes->-1->>'at')::timestamptz END,
			CASE WHEN jsonb_typeof(t.links) = 'array' THEN (SELECT max((l->>'at')::timestamptz) FROM jsonb_array_elements(t.links) l) END)
			+ t.progress_window_us * interval '1 microsecond' END)`)
}

// unlimitedSQL holds when no label of the row t has a concurrency limit,
// whose holders only the Rulebook's transaction counts.
const unlimitedSQL = `NOT EXISTS (SELECT 1 FROM taskgraph_limits l WHERE l.graph = $1 AND l.label = ANY(t.labels))`

// next returns the task that ClaimNext claims by the Rulebook, among those
// that carry labels and are not in except: the most urgent ready pending
// task, or if none is left, the most urgent whose lease has lapsed (in
// claim order), passing over those a reached limit holds back
// (reachedSQL) — but for a lapsed task on its last attempt, which the
// claim fails instead (it gave up: no limit applies), as the Rulebook's
// ClaimNext does in every store — and, with under, those not under it.
// Rows others have locked are skipped. The pending task is found by a
// walk in claim order while no limit is reached and under is 0, by the
// streams of pick otherwise (by parent with under, by labels without).
func (s *Store) next(ctx context.Context, tx pgx.Tx, labels []string, at *time.Time, except []int64, under taskgraph.ID) (taskgraph.ID, error) {
	if except == nil {
		except = []int64{}
	}
	// JIT off for the transaction: the estimates of the streams' recursive
	// queries exceed jit_above_cost, and compiling them took 70-250 ms for
	// a statement that runs in 1-2 ms (nextUnderSQL on 1,000 tasks).
	var reached []string
	if err := tx.QueryRow(ctx, `SELECT set_config('jit', 'off', true), `+reachedSQL(2), s.graph, at).Scan(new(string), &reached); err != nil {
		return 0, err
	}
	args := []any{s.graph, labels, at, except, reached, int64(under)}
	for {
		var id, candidate *int64
		var err error
		switch {
		case under != 0:
			err = tx.QueryRow(ctx, nextUnderSQL, args...).Scan(&candidate, &id)
		case len(reached) > 0:
			err = tx.QueryRow(ctx, nextByLabelsSQL, args[:5]...).Scan(&candidate, &id)
		default:
			err = tx.QueryRow(ctx, nextWalkSQL, args[:4]...).Scan(&id)
			candidate = id
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return 0, err
		}
		if id != nil {
			return taskgraph.ID(*id), nil
		}
		if candidate == nil {
			break // no pending task to take
		}
		except = append(except, *candidate) // another holds its lock: the next one
		args[3] = except
	}
	var id int64
	err := tx.QueryRow(ctx, nextLapsedSQL, args...).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, taskgraph.ErrNoReady
	}
	return taskgraph.ID(id), err
}

// The statements of next, $1 the graph, $2 the labels, $3 the time (see
// nowSQL), $4 the ids passed over, $5 the labels whose limit is reached,
// $6 the task under which (0: any); each takes the first of them it
// names. The pending task is found by a walk in claim order while no
// limit is reached (nextWalkSQL), or by the streams of the label sets
// (nextByLabelsSQL) or of the parents under $6 (nextUnderSQL): these
// return the candidate, and the candidate again if they locked it, NULL if
// another holds its lock. nextLapsedSQL finds a task in progress whose
// claim has lapsed.
var (
	nextPick        = pick{labels: `$2::text[]`, reached: `$5::text[]`, now: nowSQL(3), ready: readyCondition, except: `$4::bigint[]`}
	nextUnderPick   = pick{labels: `$2::text[]`, reached: `$5::text[]`, now: nowSQL(3), ready: readyCondition, except: `$4::bigint[]`, under: `$6::bigint`}
	nextByLabelsSQL = `SELECT c.id, (` + nextPick.locked("c.id") + `) FROM (` + nextPick.byLabels() + `) c`
	nextUnderSQL    = `SELECT c.id, (` + nextUnderPick.locked("c.id") + `) FROM (` + nextUnderPick.byParents() + `) c`
	nextWalkSQL     = `SELECT id FROM taskgraph_tasks t WHERE graph = $1 AND status = 'pending' AND labels @> $2::text[]
		AND ` + readyCondition + ` AND ` + undeferred(3) + ` AND NOT (id = ANY($4)) ` + claimOrder + ` LIMIT 1 FOR UPDATE SKIP LOCKED`
	nextLapsedSQL = `SELECT id FROM taskgraph_tasks t WHERE graph = $1 AND status = 'in_progress'
		AND ` + lapsesSQL + ` <= ` + nowSQL(3) + ` AND labels @> $2::text[] AND ` + readyCondition + `
		AND (NOT (labels && $5::text[]) OR max_attempts > 0 AND attempts + 1 >= max_attempts)
		AND NOT (id = ANY($4)) AND ($6::bigint = 0 OR ` + reaches("t.parent", "$6::bigint") + `) ` + claimOrder + ` LIMIT 1 FOR UPDATE SKIP LOCKED`
)

// Renew implements taskgraph.Store.
func (s *Store) Renew(ctx context.Context, id taskgraph.ID, owner string, ttl time.Duration) (taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Task{}, err
	}
	if err := taskgraph.Rules.RenewArgs(ttl); err != nil { // before any SQL
		return taskgraph.Task{}, err
	}
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Task, error) {
		t, now, err := s.lock(ctx, tx, id, s.at())
		if err != nil {
			return taskgraph.Task{}, err
		}
		lapsed := !t.Holds(now)
		if err := taskgraph.Rules.Renew(t, owner, ttl, now); err != nil {
			return taskgraph.Task{}, err
		}
		if lapsed { // the claim comes back: it must fit the limits again
			if err := s.checkLimits(ctx, tx, now, t); err != nil {
				return taskgraph.Task{}, err
			}
		}
		return s.save(ctx, tx, t, updateTask)
	})
}

// Release implements taskgraph.Store.
func (s *Store) Release(ctx context.Context, id taskgraph.ID, owner string) (taskgraph.Task, error) {
	return s.holderWrite(ctx, func() error { return nil }, id, func(t *taskgraph.Task, now time.Time) error {
		return taskgraph.Rules.Release(t, owner, now)
	})
}

// holderWrite checks the arguments, then applies rule to task id and
// saves it: the writes of one task that only its holder makes, and notes.
func (s *Store) holderWrite(ctx context.Context, args func() error, id taskgraph.ID, rule func(t *taskgraph.Task, now time.Time) error) (taskgraph.Task, error) {
	if err := s.usable(ctx); err != nil {
		return taskgraph.Task{}, err
	}
	if err := args(); err != nil { // before any SQL
		return taskgraph.Task{}, err
	}
	return transact(ctx, s, func(tx pgx.Tx) (taskgraph.Task, error) {
		t, now, err := s.lock(ctx, tx, id, s.at())
		if err != nil {
			return taskgraph.Task{}, err
		}
		if err := rule(t, now); err != nil {
			return taskgraph.Task{}, err
		}
		return s.save(ctx, tx, t, updateTask)
	})
}

// Picking the task ClaimNext takes where a walk of the pending tasks in
// claim order would pass over many first: those a reached limit holds
// back, and those not under the task WithUnder names. The pending tasks
// are split into streams, each walked in claim order by an index
// (migration 016): by their labels when a limit is reached, by their
// parent under WithUnder. The first task of each stream that may be
// taken is a candidate, and the first candidate in claim order is the
// pick; a stream none of whose tasks may be taken (its labels are held
// back, its parent is not under the task) is never walked.

package pgstore

import "strings"

// pick holds the SQL expressions of a pick's arguments, about the rows
// of taskgraph_tasks named t; $1 is the graph.
type pick struct {
	labels  string // text[]: the labels the task carries (all of them)
	reached string // text[]: the labels whose limits are reached (reachedSQL)
	now     string // timestamptz: the time of the claim (nowSQL)
	ready   string // the condition of a task ready to take: readyCondition or blockersCompleted
	except  string // bigint[]: the ids passed over, or "" for none
	under   string // bigint: the task the pick keeps under, or "" for none (not 0)
}

// filters holds for a pending task t that the pick may take: it carries
// p.labels, none of p.reached (labelled), and is takeable.
func (p pick) filters() string { return p.labelled() + ` AND ` + p.takeable() }

// labelled holds for a task t that carries p.labels and none of
// p.reached.
func (p pick) labelled() string {
	return `coalesce(t.labels @> ` + p.labels + `, false) AND NOT (t.labels && ` + p.reached + `)`
}

// takeable holds for a task t that is ready, not deferred and not
// awaiting approval, not passed over, and under p.under.
func (p pick) takeable() string {
	f := p.ready + ` AND (t.not_before IS NULL OR t.not_before <= ` + p.now + `) AND NOT t.needs_approval`
	if p.except != "" {
		f += ` AND NOT (t.id = ANY(` + p.except + `))`
	}
	if p.under != "" {
		f += ` AND ` + reaches("t.parent", p.under)
	}
	return f
}

// byLabels is the first pending task in claim order that the pick may
// take, found without the walk passing over the tasks held back by a
// reached limit, or NULL: the tasks are split by their labels (the
// index taskgraph_tasks_claim_labels), the label sets found by a skip
// over the index, one probe each, and the sets carrying a label of
// p.reached (or not all of p.labels) are left out. Its cost is a probe
// per label set the pending tasks carry, then a walk in claim order of
// each set left, up to its first task that may be taken: the blocked
// and deferred tasks it passes, as the plain walk passes them.
func (p pick) byLabels() string {
	return streams(`WITH RECURSIVE k(v) AS (
		SELECT (SELECT labels FROM taskgraph_tasks WHERE graph = $1 AND status = 'pending' ORDER BY labels LIMIT 1)
		UNION ALL SELECT (SELECT labels FROM taskgraph_tasks WHERE graph = $1 AND status = 'pending' AND labels > k.v ORDER BY labels LIMIT 1)
			FROM k WHERE k.v IS NOT NULL)
	SELECT v FROM k WHERE v IS NOT NULL AND coalesce(v @> `+p.labels+`, false) AND NOT (v && `+p.reached+`)`, `t.labels = s.v`, p.takeable())
}

// byParents is the first pending task in claim order under p.under that
// the pick may take, or NULL: the tasks are split by their parent (the
// index taskgraph_tasks_claim_parent), the parents found by a skip over
// the index, one probe each, and those neither p.under nor under it
// (reaches: a walk up their parent links) are left out. Its cost is a
// probe per parent of a pending task and a step up for each ancestor of
// it, then a walk in claim order of the children of each parent left, up
// to the first that may be taken.
func (p pick) byParents() string {
	q := p
	q.under = "" // a child of a parent under p.under is under it
	return streams(`WITH RECURSIVE k(v) AS (
		SELECT (SELECT parent FROM taskgraph_tasks WHERE graph = $1 AND status = 'pending' AND parent <> 0 ORDER BY parent LIMIT 1)
		UNION ALL SELECT (SELECT parent FROM taskgraph_tasks WHERE graph = $1 AND status = 'pending' AND parent <> 0 AND parent > k.v ORDER BY parent LIMIT 1)
			FROM k WHERE k.v IS NOT NULL)
	SELECT v FROM k WHERE v IS NOT NULL AND `+reaches("v", p.under), `t.parent <> 0 AND t.parent = s.v`, q.filters())
}

// streams is the first in claim order of the first task of each stream
// that filters let the pick take: keys selects the streams' keys (as
// v), and stream holds for a task t of the stream s.
func streams(keys, stream, filters string) string {
	return `SELECT h.id FROM (` + keys + `) s CROSS JOIN LATERAL (
		SELECT t.id, t.priority, t.created_at FROM taskgraph_tasks t WHERE t.graph = $1 AND t.status = 'pending' AND ` + stream + ` AND ` + filters + `
		` + claimOrder + ` LIMIT 1) h
	ORDER BY h.priority, h.created_at, h.id LIMIT 1`
}

// locked selects and locks the task candidate, if it is still one the
// pick may take, and no one else holds its lock (it is skipped): NULL
// otherwise. A row that changed since the candidate was read is checked
// again as it is now (EvalPlanQual).
func (p pick) locked(candidate string) string {
	return `SELECT t.id FROM taskgraph_tasks t WHERE t.graph = $1 AND t.id = (` + candidate + `) AND t.status = 'pending' AND ` + p.filters() + `
		FOR UPDATE SKIP LOCKED`
}

// reaches holds when the task top is among the ancestors-or-self of the
// task from, following parent links up from it: a task whose parent
// reaches top is under top (taskgraph's "under": a loop of links ends
// the walk; a missing task ends it too). One probe of the primary key
// per step.
func reaches(from, top string) string {
	return strings.NewReplacer("{from}", from, "{top}", top).Replace(`EXISTS (WITH RECURSIVE up(id) AS (
		SELECT {from}::bigint UNION SELECT a.parent FROM taskgraph_tasks a JOIN up ON a.graph = $1 AND a.id = up.id AND up.id <> {top})
	SELECT 1 FROM up WHERE up.id = {top})`)
}

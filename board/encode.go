// The board's JSON, written by hand: a snapshot of 100,000 tasks is tens
// of megabytes, which encoding/json would build through reflection and a
// buffer grown by doubling; this appends each task into one buffer sized
// for it, and the same code writes a change's few tasks.

package board

import (
	"strconv"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/jsontext"
	"github.com/taskgraph-dev/taskgraph/internal/taskview"
)

// Change is what a "change" event of GET /api/events carries: how the
// board differs from the version before it (From). Tasks holds every task
// whose view changed, new ones included, each as it is now; Removed the
// ids of the tasks that are gone. The page keeps its columns in order
// itself: Ready by (priority, id), every other column by id.
type Change struct {
	Version int64     `json:"version"`
	From    int64     `json:"from"`
	Now     time.Time `json:"now"`
	// Problem is the Snapshot's Problem as of this version ("" for none).
	Problem string `json:"problem"`
	// Counts is how many tasks each column holds, by state.
	Counts  map[taskgraph.State]int `json:"counts"`
	Tasks   []TaskView              `json:"tasks"`
	Removed []taskgraph.ID          `json:"removed"`
	// CriticalPath is the new critical path, or absent if it is unchanged.
	CriticalPath []taskgraph.ID `json:"criticalPath,omitempty"`
}

// chunkSize is the size of the pieces a snapshot's JSON is written in: a
// snapshot of 100,000 tasks is tens of megabytes, and one buffer for it
// would be sized by a guess or grown by doubling, either of which
// allocates far more than it holds.
const chunkSize = 1 << 20

// fullJSON returns the state's Snapshot as JSON, in pieces to be written
// one after the other, made once.
func (st *state) fullJSON(s *Server) [][]byte {
	st.fullOnce.Do(func() {
		var chunks [][]byte
		b := make([]byte, 0, chunkSize)
		room := func(n int) {
			if cap(b)-len(b) < n {
				chunks = append(chunks, b)
				b = make([]byte, 0, max(chunkSize, n))
			}
		}
		b = append(b, `{"version":`...)
		b = strconv.AppendInt(b, st.version, 10)
		b = append(b, `,"now":`...)
		b = jsontext.AppendTime(b, st.now)
		if s.cfg.title != "" {
			b = append(b, `,"title":`...)
			b = jsontext.AppendString(b, s.cfg.title, true)
		}
		b = append(b, `,"writes":`...)
		b = strconv.AppendBool(b, s.cfg.writes)
		b = append(b, `,"columns":[`...)
		for c, col := range columns {
			if c > 0 {
				b = append(b, ',')
			}
			room(64 + 21*st.counts[c])
			b = append(b, `{"key":`...)
			b = jsontext.AppendString(b, string(col.key), true)
			b = append(b, `,"title":`...)
			b = jsontext.AppendString(b, col.title, true)
			b = append(b, `,"ids":`...)
			b = st.appendColumn(b, int32(c))
			b = append(b, '}')
		}
		b = append(b, `],"tasks":[`...)
		first := true
		for _, ch := range st.chunks {
			for i := range ch {
				room(sizeOf(&ch[i]))
				if !first {
					b = append(b, ',')
				}
				first = false
				b = st.appendTask(b, &ch[i])
			}
		}
		room(64 + 21*len(st.path) + 6*len(st.problem))
		b = append(b, `],"criticalPath":`...)
		b = appendIDs(b, st.path)
		if st.problem != "" {
			b = append(b, `,"problem":`...)
			b = jsontext.AppendString(b, st.problem, true)
		}
		st.full = append(chunks, append(b, '}'))
	})
	return st.full
}

// sizeOf is about how many bytes the task of e takes in JSON.
func sizeOf(e *entry) int {
	t, d := e.t, e.d.of()
	n := 256 + len(t.Subject) + len(t.Description) + len(t.Owner) + len(t.Key) + len(t.Reason) + len(t.Result) +
		len(t.PrevOwner) + len(d.why) + 12*(len(t.BlockedBy)+len(t.Blocks)+len(d.waitingOn)+len(d.missing())+len(d.strands()))
	for _, l := range t.Labels {
		n += len(l) + 3
	}
	if len(t.Metadata) > 0 {
		n += 256
	}
	return 2 * n // room for escapes
}

// changeJSON returns the Change from old to st as JSON, given the
// entries of st whose view changed and the ids of the tasks removed, or
// nil if nothing the page shows changed.
func (st *state) changeJSON(old *state, changed []*entry, removed []taskgraph.ID) []byte {
	pathChanged := !slicesEqual(st.path, old.path)
	if len(changed) == 0 && len(removed) == 0 && !pathChanged && st.problem == old.problem {
		return nil
	}
	b := make([]byte, 0, 512)
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, st.version, 10)
	b = append(b, `,"from":`...)
	b = strconv.AppendInt(b, old.version, 10)
	b = append(b, `,"now":`...)
	b = jsontext.AppendTime(b, st.now)
	b = append(b, `,"problem":`...)
	b = jsontext.AppendString(b, st.problem, true)
	b = append(b, `,"counts":{`...)
	for c, col := range columns {
		if c > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, string(col.key), true)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(st.counts[c]), 10)
	}
	b = append(b, `},"tasks":[`...)
	for k, e := range changed {
		if k > 0 {
			b = append(b, ',')
		}
		b = st.appendTask(b, e)
	}
	b = append(b, `],"removed":`...)
	b = appendIDs(b, removed)
	if pathChanged {
		b = append(b, `,"criticalPath":`...)
		b = appendIDs(b, st.path)
	}
	return append(b, '}')
}

func slicesEqual(a, b []taskgraph.ID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// taskView is the board's view of a task: TaskView's fields, in its
// order (TestTaskViewIsTheView holds them together), and what only the
// JSON carries (awaitingApproval, createdVia, links: a write's answer,
// encoded from a TaskView, never had them).
var taskView = taskview.New(taskview.Format{
	EscapeHTML:  true,
	Nanoseconds: true,
	Notes:       func(t *taskgraph.Task) []taskgraph.Note { return tail(t.Notes, detailNotes) },
	History:     func(t *taskgraph.Task) []taskgraph.Transition { return tail(t.History, detailHistory) },
}, `id subject description? status state? owner? priority labels? key? reason? result?
	blockedBy blocks waitingOn? missing? strandedBy? strands? why? metadata?
	createdAt? updatedAt? claimedAt? leaseExpiresAt? leaseLapsed? lapsesAt? clock?
	maxRuntime? progressWindow? awaitingApproval? createdVia? links? prevOwner? rev
	parent? notBefore? due? attempts? maxAttempts? notes? history?`)

// appendTask appends the task of e as the board's view of it in JSON.
// Metadata encoding/json cannot marshal is written null, as it always
// was.
func (st *state) appendTask(b []byte, e *entry) []byte {
	d := e.d.of()
	b, _ = taskView.Append(b, e.t, &taskview.Derived{State: columns[e.col].key, Why: d.why,
		WaitingOn: d.waitingOn, Missing: d.missing(), StrandedBy: d.strandedBy, Strands: d.strands(), LeaseLapsed: d.lapsed})
	return b
}

// appendColumn appends the ids of column c, as columnIDs orders them:
// written as they are found, but for Ready (few, and in claim order), so
// that a snapshot of 100,000 tasks makes no copy of them.
func (st *state) appendColumn(b []byte, c int32) []byte {
	if c == colReady {
		return appendIDs(b, st.columnIDs(c))
	}
	b = append(b, '[')
	first := true
	for _, ch := range st.chunks {
		for _, e := range ch {
			if e.col == c {
				if !first {
					b = append(b, ',')
				}
				first = false
				b = strconv.AppendInt(b, int64(e.t.ID), 10)
			}
		}
	}
	return append(b, ']')
}

func appendIDs(b []byte, ids []taskgraph.ID) []byte {
	b = append(b, '[')
	for k, id := range ids {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	return append(b, ']')
}

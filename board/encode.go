// The board's JSON, written by hand: a snapshot of 100,000 tasks is tens
// of megabytes, which encoding/json would build through reflection and a
// buffer grown by doubling; this appends each task into one buffer sized
// for it, and the same code writes a change's few tasks.

package board

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/jsontext"
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

func appendJSON(b []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, data...), nil
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

// appendTask appends the task of e as a TaskView in JSON: the fields,
// names and omissions of TaskView's tags.
func (st *state) appendTask(b []byte, e *entry) []byte {
	t, d := e.t, e.d.of()
	str := func(b []byte, name, v string, omitEmpty bool) []byte {
		if omitEmpty && v == "" {
			return b
		}
		b = append(append(append(b, ",\""...), name...), "\":"...)
		return jsontext.AppendString(b, v, true)
	}
	ids := func(b []byte, name string, v []taskgraph.ID, omitEmpty bool) []byte {
		if omitEmpty && len(v) == 0 {
			return b
		}
		b = append(append(append(b, ",\""...), name...), "\":"...)
		return appendIDs(b, v)
	}
	tm := func(b []byte, name string, v time.Time) []byte {
		if v.IsZero() {
			return b
		}
		b = append(append(append(b, ",\""...), name...), "\":"...)
		return jsontext.AppendTime(b, v)
	}
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(t.ID), 10)
	b = str(b, "subject", t.Subject, false)
	b = str(b, "description", t.Description, true)
	b = str(b, "status", string(t.Status), false)
	b = str(b, "state", string(columns[e.col].key), true)
	b = str(b, "owner", t.Owner, true)
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(t.Priority.Level()), 10)
	if len(t.Labels) > 0 {
		b = append(b, `,"labels":[`...)
		for k, l := range t.Labels {
			if k > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, l, true)
		}
		b = append(b, ']')
	}
	b = str(b, "key", t.Key, true)
	b = str(b, "reason", t.Reason, true)
	b = str(b, "result", t.Result, true)
	b = ids(b, "blockedBy", t.BlockedBy, false)
	b = ids(b, "blocks", t.Blocks, false)
	b = ids(b, "waitingOn", d.waitingOn, true)
	b = ids(b, "missing", d.missing(), true)
	if d.strandedBy != 0 {
		b = append(b, `,"strandedBy":`...)
		b = strconv.AppendInt(b, int64(d.strandedBy), 10)
	}
	b = ids(b, "strands", d.strands(), true)
	b = str(b, "why", d.why, true)
	if len(t.Metadata) > 0 {
		b = append(b, `,"metadata":`...)
		if m, err := appendJSON(b, t.Metadata); err == nil {
			b = m
		} else {
			b = append(b, "null"...)
		}
	}
	b = tm(b, "createdAt", t.CreatedAt)
	b = tm(b, "updatedAt", t.UpdatedAt)
	b = tm(b, "claimedAt", t.ClaimedAt)
	b = tm(b, "leaseExpiresAt", t.LeaseExpiresAt)
	if d.lapsed {
		b = append(b, `,"leaseLapsed":true`...)
	}
	if at, c := clockOf(t); c != "" {
		b = tm(b, "lapsesAt", at)
		b = str(b, "clock", c, true)
	}
	if t.Extra != nil {
		for _, n := range []struct {
			name string
			d    time.Duration
		}{{"maxRuntime", t.Extra.MaxRuntime}, {"progressWindow", t.Extra.ProgressWindow}} {
			if n.d != 0 {
				b = append(b, `,"`+n.name+`":`...)
				b = strconv.AppendInt(b, int64(n.d), 10)
			}
		}
		if t.AwaitingApproval() {
			b = append(b, `,"awaitingApproval":true`...)
		}
		b = str(b, "createdVia", t.Extra.CreatedVia, true)
		if len(t.Extra.Links) > 0 { // rare and bounded (MaxLinks): encoding/json will do
			b = append(b, `,"links":`...)
			if m, err := appendJSON(b, t.Extra.Links); err == nil {
				b = m
			} else {
				b = append(b, "null"...)
			}
		}
	}
	b = str(b, "prevOwner", t.PrevOwner, true)
	b = append(b, `,"rev":`...)
	b = strconv.AppendInt(b, t.Rev, 10)
	if t.Parent != 0 {
		b = append(b, `,"parent":`...)
		b = strconv.AppendInt(b, int64(t.Parent), 10)
	}
	b = tm(b, "notBefore", t.NotBefore)
	b = tm(b, "due", t.Due)
	for _, n := range []struct {
		name string
		v    int
	}{{"attempts", t.Attempts}, {"maxAttempts", t.MaxAttempts}} {
		if n.v != 0 {
			b = append(append(append(b, ",\""...), n.name...), "\":"...)
			b = strconv.AppendInt(b, int64(n.v), 10)
		}
	}
	// Rare and bounded (detailNotes, detailHistory): encoding/json will do.
	for _, l := range []struct {
		name string
		v    any
		n    int
	}{{"notes", tail(t.Notes, detailNotes), len(t.Notes)}, {"history", tail(t.History, detailHistory), len(t.History)}} {
		if l.n > 0 {
			b = append(append(append(b, ",\""...), l.name...), "\":"...)
			if m, err := appendJSON(b, l.v); err == nil {
				b = m
			} else {
				b = append(b, "null"...)
			}
		}
	}
	return append(b, '}')
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

// taskJSON written by hand, byte for byte as printJSONArray's encoding/json
// would write it: list --json over 100,000 tasks spent a quarter of its
// time in reflection.

package main

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/jsontext"
)

// appendTaskJSON appends j as an element of printJSONArray's array: indented
// by two spaces a level after a prefix of two, HTML not escaped, no newline
// at the end. It reports false, having appended nothing, where only
// encoding/json can say what it writes (metadata that does not marshal, a
// time it refuses).
func appendTaskJSON(b []byte, j *taskJSON) ([]byte, bool) {
	for _, t := range j.times() {
		if !jsontext.TimeOK(t) {
			return b, false
		}
	}
	var meta []byte
	if len(j.Metadata) > 0 {
		var compact bytes.Buffer
		enc := json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(j.Metadata); err != nil {
			return b, false
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, bytes.TrimSuffix(compact.Bytes(), []byte("\n")), "    ", "  "); err != nil {
			return b, false
		}
		meta = ind.Bytes()
	}
	w := objWriter{b: append(b, '{'), ind: "\n    "}
	w.key("id")
	w.b = strconv.AppendInt(w.b, int64(j.ID), 10)
	w.str("subject", j.Subject)
	w.str("description", j.Description)
	w.str("status", string(j.Status))
	w.ids("blockedBy", j.BlockedBy)
	w.ids("blocks", j.Blocks)
	w.str("owner", j.Owner)
	w.strOmit("state", string(j.State))
	if j.Priority != nil {
		w.key("priority")
		w.b = strconv.AppendInt(w.b, int64(j.Priority.Level()), 10)
	}
	if len(j.Labels) > 0 {
		w.array("labels", len(j.Labels), func(i int) { w.b = jsontext.AppendString(w.b, j.Labels[i], false) })
	}
	w.strOmit("key", j.Key)
	w.strOmit("reason", j.Reason)
	w.strOmit("result", j.Result)
	if meta != nil {
		w.key("metadata")
		w.b = append(w.b, meta...)
	}
	w.timeOmit("createdAt", j.CreatedAt)
	w.timeOmit("updatedAt", j.UpdatedAt)
	w.key("rev")
	w.b = strconv.AppendInt(w.b, j.Rev, 10)
	w.timeOmit("claimedAt", j.ClaimedAt)
	w.timeOmit("leaseExpiresAt", j.LeaseExpiresAt)
	w.strOmit("prevOwner", j.PrevOwner)
	if len(j.Notes) > 0 {
		w.array("notes", len(j.Notes), func(i int) {
			w.object(func(e *objWriter) {
				n := j.Notes[i]
				e.key("at")
				e.b = jsontext.AppendTime(e.b, n.At)
				e.str("author", n.Author)
				e.str("text", n.Text)
			})
		})
	}
	if len(j.History) > 0 {
		w.array("history", len(j.History), func(i int) {
			w.object(func(e *objWriter) {
				h := j.History[i]
				e.key("at")
				e.b = jsontext.AppendTime(e.b, h.At)
				e.str("event", string(h.Event))
				e.strOmit("by", h.By)
				e.strOmit("detail", h.Detail)
				if h.Count != 0 {
					e.key("count")
					e.b = strconv.AppendInt(e.b, int64(h.Count), 10)
				}
			})
		})
	}
	return append(w.b, "\n  }"...), true
}

// times are the times j holds, each of which encoding/json must accept.
func (j *taskJSON) times() []time.Time {
	var ts []time.Time
	for _, p := range []*time.Time{j.CreatedAt, j.UpdatedAt, j.ClaimedAt, j.LeaseExpiresAt} {
		if p != nil {
			ts = append(ts, *p)
		}
	}
	for _, n := range j.Notes {
		ts = append(ts, n.At)
	}
	for _, h := range j.History {
		ts = append(ts, h.At)
	}
	return ts
}

// objWriter appends the members of one indented JSON object.
type objWriter struct {
	b     []byte
	ind   string // a newline and the indentation of a member
	count int
}

func (w *objWriter) key(k string) {
	if w.count > 0 {
		w.b = append(w.b, ',')
	}
	w.count++
	w.b = append(w.b, w.ind...)
	w.b = jsontext.AppendString(w.b, k, false)
	w.b = append(w.b, ": "...)
}

func (w *objWriter) str(k, v string) {
	w.key(k)
	w.b = jsontext.AppendString(w.b, v, false)
}

func (w *objWriter) strOmit(k, v string) {
	if v != "" {
		w.str(k, v)
	}
}

func (w *objWriter) timeOmit(k string, t *time.Time) {
	if t != nil {
		w.key(k)
		w.b = jsontext.AppendTime(w.b, *t)
	}
}

func (w *objWriter) ids(k string, ids []taskgraph.ID) {
	if ids == nil {
		w.key(k)
		w.b = append(w.b, "null"...)
		return
	}
	w.array(k, len(ids), func(i int) { w.b = strconv.AppendInt(w.b, int64(ids[i]), 10) })
}

// array appends member k, an array of n elements, each appended by elem
// on a line of its own, one level deeper than the members.
func (w *objWriter) array(k string, n int, elem func(i int)) {
	w.key(k)
	if n == 0 {
		w.b = append(w.b, "[]"...)
		return
	}
	w.b = append(w.b, '[')
	for i := range n {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = append(w.b, w.ind+"  "...)
		elem(i)
	}
	w.b = append(w.b, w.ind+"]"...)
}

// object appends an object, an element of one of w's arrays, whose
// members members appends.
func (w *objWriter) object(members func(e *objWriter)) {
	e := objWriter{b: append(w.b, '{'), ind: w.ind + "    "}
	members(&e)
	w.b = append(e.b, w.ind+"  }"...)
}

// The writer of a view: JSON values appended byte for byte as
// encoding/json writes them, compact or indented.

package taskview

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/jsontext"
)

// writer appends the members of one JSON object.
type writer struct {
	b []byte
	f *Format
	// ind is a newline and the indentation of a member, elem of an
	// element of a member's array, inner of a member of an object in
	// that array; all "" when compact.
	ind, elem, inner string
	// skip is how much of a member's key, which starts with a comma, to
	// leave out: 1 until the first member is written.
	skip int
	err  error // the first value encoding/json would refuse
}

// key writes the key of member m: compact, as one append of its
// ,"name": (the board writes a hundred thousand tasks).
func (w *writer) key(m *member) {
	if w.ind == "" {
		w.b = append(w.b, m.key[w.skip:]...)
		w.skip = 0
		return
	}
	w.keyed(m.key[1 : len(m.key)-1])
}

// keyed writes the key quoted (a JSON string) of the next member, and
// returns the buffer.
func (w *writer) keyed(quoted string) []byte {
	if w.skip == 0 {
		w.b = append(w.b, ',')
	}
	w.skip = 0
	w.b = append(w.b, w.ind...)
	w.b = append(w.b, quoted...)
	if w.ind == "" {
		w.b = append(w.b, ':')
	} else {
		w.b = append(w.b, ": "...)
	}
	return w.b
}

// Each writer of a value checks first, inlined, whether it is left out:
// most members of most tasks are.

func (w *writer) str(m *member, v string) {
	if !m.omit || v != "" {
		w.putStr(m, v)
	}
}

func (w *writer) putStr(m *member, v string) {
	w.key(m)
	w.b = jsontext.AppendString(w.b, v, w.f.EscapeHTML)
}

func (w *writer) int(m *member, v int64) {
	if !m.omit || v != 0 {
		w.putInt(m, v)
	}
}

func (w *writer) putInt(m *member, v int64) {
	w.key(m)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *writer) bool(m *member, v bool) {
	if m.omit && !v {
		return
	}
	w.key(m)
	w.b = strconv.AppendBool(w.b, v)
}

func (w *writer) time(m *member, v time.Time) {
	if !m.omit || !v.IsZero() {
		w.putTime(m, v)
	}
}

func (w *writer) putTime(m *member, v time.Time) {
	w.key(m)
	w.appendTime(v)
}

func (w *writer) appendTime(v time.Time) {
	if w.f.Seconds {
		w.b = append(v.UTC().AppendFormat(append(w.b, '"'), time.RFC3339), '"')
		return
	}
	start := len(w.b)
	w.b = jsontext.AppendTime(w.b, v)
	if w.err == nil && !plainTime(w.b[start:]) && !jsontext.TimeOK(v) {
		_, w.err = v.MarshalJSON()
	}
}

// plainTime reports whether a time written as "2006-01-02T15:04:05Z" or
// with an offset ("…+01:00") has a year of four digits, not negative, and
// an offset of less than a day: one jsontext.TimeOK accepts, told from the
// text, which costs less than asking the time its year.
func plainTime(q []byte) bool {
	n := len(q)
	if n < 22 || q[1] == '-' || q[5] != '-' {
		return false
	}
	if q[n-2] == 'Z' {
		return true
	}
	sign := q[n-7]
	return (sign == '+' || sign == '-') && string(q[n-6:n-4]) < "24"
}

func (w *writer) duration(m *member, v time.Duration) {
	if m.omit && v == 0 {
		return
	}
	w.key(m)
	if w.f.Nanoseconds {
		w.b = strconv.AppendInt(w.b, int64(v), 10)
	} else {
		w.b = jsontext.AppendString(w.b, v.String(), false)
	}
}

// ids writes [] for none, never null.
func (w *writer) ids(m *member, v []taskgraph.ID) {
	if !m.omit || len(v) != 0 {
		w.putIDs(m, v)
	}
}

func (w *writer) putIDs(m *member, v []taskgraph.ID) {
	w.key(m)
	for i, id := range v {
		w.elemAt(i)
		w.b = strconv.AppendInt(w.b, int64(id), 10)
	}
	w.endArray(len(v))
}

func (w *writer) strs(m *member, v []string) {
	if m.omit && len(v) == 0 {
		return
	}
	w.key(m)
	for i, s := range v {
		w.elemAt(i)
		w.b = jsontext.AppendString(w.b, s, w.f.EscapeHTML)
	}
	w.endArray(len(v))
}

// metadata is left to encoding/json: any JSON value, and rare.
func (w *writer) metadata(m *member, v map[string]any) {
	if m.omit && len(v) == 0 {
		return
	}
	w.key(m)
	var compact bytes.Buffer
	enc := json.NewEncoder(&compact)
	enc.SetEscapeHTML(w.f.EscapeHTML)
	if err := enc.Encode(v); err != nil {
		if w.err == nil {
			w.err = err
		}
		w.b = append(w.b, "null"...)
		return
	}
	data := bytes.TrimSuffix(compact.Bytes(), []byte("\n"))
	if w.ind == "" {
		w.b = append(w.b, data...)
		return
	}
	var ind bytes.Buffer
	_ = json.Indent(&ind, data, w.ind[1:], w.elem[len(w.ind):]) // cannot fail: encoding/json wrote it
	w.b = append(w.b, ind.Bytes()...)
}

func (w *writer) links(m *member, v []taskgraph.Link) {
	if m.omit && len(v) == 0 {
		return
	}
	w.key(m)
	for i := range v {
		w.elemAt(i)
		if w.f.LinkRefs {
			w.b = jsontext.AppendString(w.b, v[i].Ref, w.f.EscapeHTML)
			continue
		}
		e := w.object()
		e.b = jsontext.AppendString(e.keyed(`"ref"`), v[i].Ref, e.f.EscapeHTML)
		e.keyed(`"at"`)
		e.appendTime(v[i].At)
		w.endObject(&e)
	}
	w.endArray(len(v))
}

func (w *writer) notes(m *member, t *taskgraph.Task) {
	v := t.Notes
	if w.f.Notes != nil {
		v = w.f.Notes(t)
	}
	if m.omit && len(v) == 0 {
		return
	}
	w.key(m)
	for i := range v {
		n := &v[i]
		w.elemAt(i)
		e := w.object()
		if e.f.AuthorFirst {
			e.b = jsontext.AppendString(e.keyed(`"author"`), n.Author, e.f.EscapeHTML)
			e.keyed(`"at"`)
			e.appendTime(n.At)
		} else {
			e.keyed(`"at"`)
			e.appendTime(n.At)
			e.b = jsontext.AppendString(e.keyed(`"author"`), n.Author, e.f.EscapeHTML)
		}
		e.b = jsontext.AppendString(e.keyed(`"text"`), n.Text, e.f.EscapeHTML)
		w.endObject(&e)
	}
	w.endArray(len(v))
}

// history writes each transition as encoding/json writes a
// taskgraph.Transition: by, detail and count only when set.
func (w *writer) history(m *member, t *taskgraph.Task) {
	v := t.History
	if w.f.History != nil {
		v = w.f.History(t)
	}
	if m.omit && len(v) == 0 {
		return
	}
	w.key(m)
	for i := range v {
		h := &v[i]
		w.elemAt(i)
		e := w.object()
		e.keyed(`"at"`)
		e.appendTime(h.At)
		e.b = jsontext.AppendString(e.keyed(`"event"`), string(h.Event), e.f.EscapeHTML)
		if h.By != "" {
			e.b = jsontext.AppendString(e.keyed(`"by"`), h.By, e.f.EscapeHTML)
		}
		if h.Detail != "" {
			e.b = jsontext.AppendString(e.keyed(`"detail"`), h.Detail, e.f.EscapeHTML)
		}
		if h.Count != 0 {
			e.b = strconv.AppendInt(e.keyed(`"count"`), int64(h.Count), 10)
		}
		w.endObject(&e)
	}
	w.endArray(len(v))
}

// elemAt begins element i of an array, opening the array at the first:
// on a line of its own, one level deeper than the member, when indented.
func (w *writer) elemAt(i int) {
	if i == 0 {
		w.b = append(w.b, '[')
	} else {
		w.b = append(w.b, ',')
	}
	w.b = append(w.b, w.elem...)
}

// endArray ends an array of n elements: [] when there were none.
func (w *writer) endArray(n int) {
	if n == 0 {
		w.b = append(w.b, "[]"...)
		return
	}
	w.b = append(append(w.b, w.ind...), ']')
}

// object begins an object, an element of one of w's arrays: its members
// are written by the writer returned, which endObject ends.
func (w *writer) object() writer {
	return writer{b: append(w.b, '{'), f: w.f, ind: w.inner, skip: 1}
}

func (w *writer) endObject(e *writer) {
	if e.err != nil && w.err == nil {
		w.err = e.err
	}
	w.b = append(append(e.b, w.elem...), '}')
}

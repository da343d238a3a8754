// Decoding a task file as encodeTask writes it, without reflection: every
// process reads every other process's change-log records and cold scans
// read every file, and encoding/json was a tenth of a writer's CPU. A
// change-log record holds the file compacted (json.Compact), so both
// layouts are read.

package taskgraph

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// writtenOrder is the order in which encodeTask writes the known fields.
// decodeWritten takes them in this order only, so a field cannot repeat.
var writtenOrder = [...]string{"id", "subject", "description", "status", "blockedBy", "owner", "key", "parent",
	"priority", "labels", "reason", "result", "createdAt", "updatedAt", "rev", "metadata", "claimedAt",
	"leaseExpiresAt", "prevOwner", "notBefore", "due", "maxAttempts", "attempts", "backoff", "notes", "history"}

// layout is where a task file has whitespace: as encodeTask writes it, or
// compacted as in a change-log record.
type layout struct {
	field, colon, end  string // before a top-level key's name, after it, and after the last field
	item, listEnd      string // before an element of a list, and after the last
	noteField, noteEnd string // before a field of a note or transition, and after the last
}

var (
	indented  = layout{"\n  \"", `": `, "\n}\n", "\n    ", "\n  ]", "\n      \"", "\n    }"}
	compacted = layout{`"`, `":`, "}", "", "]", `"`, "}"}
)

// decodeWritten decodes a task file in exactly the layout encodeTask
// writes, or compacted, giving what decodeFast gives for it, or returns nil
// for anything else (another layout, order or field, an unusual value):
// decodeFast then judges it. A top-level string with an escape is refused,
// as decodeFast (onlyKnownKeys) refuses it.
func decodeWritten(id ID, data []byte) *Task {
	s := scanner{b: data, l: &indented}
	if len(data) > 1 && data[1] == '"' {
		s.l = &compacted
	}
	t := &Task{ID: id, Priority: DefaultPriority}
	var blockedBy []ID
	gotID, gotSubject := false, false
	if !s.lit("{") {
		return nil
	}
	for next := 0; !s.lit(s.l.end); {
		if next > 0 && !s.lit(",") || !s.lit(s.l.field) {
			return nil
		}
		end := bytes.IndexByte(s.b[s.i:], '"')
		if end < 0 {
			return nil
		}
		k := next
		for k < len(writtenOrder) && writtenOrder[k] != string(s.b[s.i:s.i+end]) {
			k++
		}
		if s.i += end; k == len(writtenOrder) || !s.lit(s.l.colon) {
			return nil // unknown, repeated or out of order
		}
		next = k + 1
		var n int64
		ok := true
		switch writtenOrder[k] {
		case "id":
			n, ok = s.int(64)
			gotID = ok && ID(n) == id
			ok = gotID
		case "subject":
			ok, gotSubject = s.str(&t.Subject, false), true
		case "description":
			ok = s.str(&t.Description, false)
		case "status":
			ok = s.str((*string)(&t.Status), false) && t.Status.Valid()
		case "blockedBy":
			blockedBy, ok = list[ID](&s)
		case "owner":
			ok = s.str(&t.Owner, false)
		case "key":
			ok = s.str(&t.Key, false)
		case "parent":
			n, ok = s.int(64)
			t.Parent, ok = ID(n), ok && n >= 0
		case "priority":
			n, ok = s.int(64)
			t.Priority = PriorityLevel(int(n))
			ok = ok && t.Priority.Valid()
		case "labels":
			t.Labels, ok = list[string](&s)
			t.Labels = fileLabels(t.Labels)
		case "reason":
			ok = s.str(&t.Reason, false)
		case "result":
			ok = s.str(&t.Result, false)
		case "createdAt":
			ok = s.time(&t.CreatedAt)
		case "updatedAt":
			ok = s.time(&t.UpdatedAt)
		case "rev":
			t.Rev, ok = s.int(64)
			ok = ok && t.Rev >= 0
		case "metadata":
			ok = s.metadata(&t.Metadata)
		case "claimedAt":
			ok = s.time(&t.ClaimedAt)
		case "leaseExpiresAt":
			ok = s.time(&t.LeaseExpiresAt)
		case "prevOwner":
			ok = s.str(&t.PrevOwner, false)
		case "notBefore":
			ok = s.time(&t.NotBefore)
		case "due":
			ok = s.time(&t.Due)
		case "maxAttempts":
			n, ok = s.int(strconv.IntSize)
			t.MaxAttempts, ok = int(n), ok && n >= 0
		case "attempts":
			n, ok = s.int(strconv.IntSize)
			t.Attempts, ok = int(n), ok && n >= 0
		case "backoff":
			var b string
			if ok = s.str(&b, false); ok && b != "" {
				var err error
				t.Backoff, err = time.ParseDuration(b)
				ok = err == nil && t.Backoff >= 0
			}
		case "notes":
			t.Notes, ok = list[Note](&s)
			t.Notes = nilIfEmpty(t.Notes)
		case "history":
			t.History, ok = list[Transition](&s)
			t.History = nilIfEmpty(t.History)
		}
		if !ok {
			return nil
		}
	}
	if s.i != len(data) || !gotID || !gotSubject || !t.Status.Valid() {
		return nil
	}
	if blockedBy != nil {
		t.BlockedBy = addIDs(make([]ID, 0, len(blockedBy)), blockedBy) // as decodeFast: duplicates dropped
	}
	return t
}

// scanner reads a task file from b[i:]; each method reads one value, and
// reports false if the input does not hold one in the expected form.
type scanner struct {
	b []byte
	i int
	l *layout
}

// lit reads lit if the input goes on with it, else reads nothing.
func (s *scanner) lit(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

// int reads an integer as JSON writes one (no fraction, exponent or
// leading zero) that fits in bits bits, as encoding/json requires of it.
func (s *scanner) int(bits int) (int64, bool) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	if s.i == digits || s.b[digits] == '0' && s.i > digits+1 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, bits)
	return n, err == nil
}

// str reads a string into p: of valid UTF-8 (encoding/json would replace
// the rest) and, unless escapes, without escapes.
func (s *scanner) str(p *string, escapes bool) bool {
	if !s.lit(`"`) {
		return false
	}
	start, escaped := s.i, false
	for ; s.i < len(s.b) && s.b[s.i] != '"'; s.i++ {
		c := s.b[s.i]
		if c < 0x20 || c == '\\' && !escapes {
			return false
		}
		if c == '\\' {
			escaped = true
			s.i++ // an escaped quote does not end the string
		}
	}
	if s.i >= len(s.b) {
		return false
	}
	raw := s.b[start:s.i]
	s.i++
	if !utf8.Valid(raw) {
		return false
	}
	if !escaped {
		*p = string(raw)
		return true
	}
	return unescape(p, raw)
}

// unescape decodes the escapes of a JSON string as encoding/json does, but
// refuses \u escapes of surrogates, which encoding/json never writes.
func unescape(p *string, raw []byte) bool {
	const escapes, chars = `"\/bfnrt`, "\"\\/\b\f\n\r\t"
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			out = append(out, raw[i])
			continue
		}
		if i++; i == len(raw) {
			return false
		}
		if k := strings.IndexByte(escapes, raw[i]); k >= 0 {
			out = append(out, chars[k])
			continue
		}
		if raw[i] != 'u' || len(raw)-i < 5 {
			return false
		}
		r, err := strconv.ParseUint(string(raw[i+1:i+5]), 16, 16)
		if err != nil || utf16.IsSurrogate(rune(r)) {
			return false
		}
		out = utf8.AppendRune(out, rune(r))
		i += 4
	}
	*p = string(out)
	return true
}

// time reads a time as encoding/json does, through time.Time.UnmarshalJSON
// (which takes the string raw; a time has nothing to escape).
func (s *scanner) time(t *time.Time) bool {
	start := s.i
	if !s.lit(`"`) {
		return false
	}
	end := bytes.IndexByte(s.b[s.i:], '"')
	if end < 0 {
		return false
	}
	s.i += end + 1
	return t.UnmarshalJSON(s.b[start:s.i]) == nil
}

// metadata reads the metadata object through encoding/json, as decodeFast
// does. json.Indent ends it with a "}" on a line of its own at the field's
// indentation, and no JSON string holds a newline, so the first "\n  }"
// ends it (json.Unmarshal checks the object).
func (s *scanner) metadata(m *map[string]any) bool {
	if s.l != &indented {
		return false // its end is not found by a search: decodeFast
	}
	end := bytes.Index(s.b[s.i:], []byte("\n  }"))
	if end < 0 || json.Unmarshal(s.b[s.i:s.i+end+4], m) != nil {
		return false
	}
	s.i += end + 4
	if len(*m) == 0 {
		*m = nil
	}
	return true
}

// elem reads an element of a list into p. (A type switch rather than a
// function value, which would move the scanner to the heap.)
func (s *scanner) elem(p any) bool {
	switch p := p.(type) {
	case *ID: // of blockedBy: decodeFast takes only positive ones
		n, ok := s.int(64)
		*p = ID(n)
		return ok && n > 0
	case *string: // a label
		return s.str(p, true)
	case *Note:
		return s.note(p)
	case *Transition:
		return s.transition(p)
	}
	return false
}

// note reads a Note as encoding/json writes one: every field, in order.
func (s *scanner) note(n *Note) bool {
	return s.field("{", "at") && s.time(&n.At) &&
		s.field(",", "author") && s.str(&n.Author, true) &&
		s.field(",", "text") && s.str(&n.Text, true) && s.lit(s.l.noteEnd)
}

// transition reads a Transition as encoding/json writes one, in order,
// without the empty fields it omits.
func (s *scanner) transition(t *Transition) bool {
	ok := s.field("{", "at") && s.time(&t.At) &&
		s.field(",", "event") && s.str((*string)(&t.Event), true)
	if ok && s.field(",", "by") {
		ok = s.str(&t.By, true)
	}
	if ok && s.field(",", "detail") {
		ok = s.str(&t.Detail, true)
	}
	if ok && s.field(",", "count") {
		var n int64
		n, ok = s.int(strconv.IntSize)
		t.Count = int(n)
	}
	return ok && s.lit(s.l.noteEnd)
}

// field reads sep and the name of a note's or transition's field, laid out
// as json.Indent lays them out in a top-level field's array, or compacted;
// it reads nothing if the input does not go on with them.
func (s *scanner) field(sep, name string) bool {
	start := s.i
	if s.lit(sep) && s.lit(s.l.noteField) && s.lit(name) && s.lit(s.l.colon) {
		return true
	}
	s.i = start
	return false
}

// list reads an array laid out as encodeTask writes a field's: [], or one
// element a line. [] gives an empty slice, not nil, as encoding/json does.
func list[T ID | string | Note | Transition](s *scanner) ([]T, bool) {
	if s.lit("[]") {
		return []T{}, true
	}
	if !s.lit("[") {
		return nil, false
	}
	var out []T
	if s.l == &indented {
		end := bytes.Index(s.b[s.i:], []byte("\n  ]")) // no string holds a newline
		if end < 0 {
			return nil, false
		}
		// Sized at once: elements are parted by a comma and a line
		// indented by four spaces (the fields of a note, by six).
		body := s.b[s.i : s.i+end]
		out = make([]T, 0, 1+bytes.Count(body, []byte(",\n    "))-bytes.Count(body, []byte(",\n     ")))
	}
	for {
		var zero T
		if out = append(out, zero); !s.lit(s.l.item) || !s.elem(&out[len(out)-1]) {
			return nil, false
		}
		if s.lit(s.l.listEnd) {
			return out, true
		}
		if !s.lit(",") {
			return nil, false
		}
	}
}

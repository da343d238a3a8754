// The task file format: decoding a task file strictly, and writing one
// byte for byte as the reference does.

package taskgraph

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The task file format. Known fields are written in the reference's order,
// then taskgraph's optional fields, then any fields taskgraph does not know,
// in the pretty-printed, non-ASCII-preserving style of Python's
// json.dumps(indent=2, ensure_ascii=False).

// maxFileSize bounds what is loaded from one task file.
const maxFileSize = 4 << 20

var knownFields = map[string]bool{
	"id": true, "subject": true, "description": true, "status": true, "blockedBy": true, "owner": true,
	"createdAt": true, "updatedAt": true, "rev": true, "metadata": true,
	"claimedAt": true, "leaseExpiresAt": true, "prevOwner": true,
	"key": true, "priority": true, "labels": true, "reason": true, "result": true,
	"notes": true, "history": true,
	"parent": true, "notBefore": true, "due": true, "maxAttempts": true, "attempts": true, "backoff": true,
}

// rareFields are known fields that only the slow path decodes (the fast
// paths leave a file holding one to it): those of Task.Extra.
var rareFields = map[string]bool{"maxRuntime": true, "progressWindow": true, "writeKeys": true, "needsApproval": true, "createdVia": true, "links": true, "check": true, "acceptance": true}

// encodeTask renders t as the bytes of its task file: JSON as
// encoding/json writes it (HTML left unescaped), indented by two spaces,
// fields in a fixed order. The plain fields — ids, numbers, times, strings
// of printable ASCII — are written directly; the rest goes through
// encoding/json and json.Indent (taskEncoder.value).
// TestEncodeTaskAsJSONWrites checks the two give the same bytes.
func encodeTask(t *Task) ([]byte, error) {
	e := taskEncoder{b: make([]byte, 0, 384)}
	e.b = append(e.b, '{')
	e.int("id", int64(t.ID))
	e.string("subject", t.Subject)
	e.string("description", t.Description)
	e.string("status", string(t.Status))
	e.ids("blockedBy", t.BlockedBy)
	e.string("owner", t.Owner)
	if t.Key != "" {
		e.string("key", t.Key)
	}
	if t.Parent != 0 {
		e.int("parent", int64(t.Parent))
	}
	if t.Priority != DefaultPriority {
		e.int("priority", int64(t.Priority.Level()))
	}
	if len(t.Labels) > 0 {
		e.strings("labels", t.Labels)
	}
	if t.Reason != "" {
		e.string("reason", t.Reason)
	}
	if t.Result != "" {
		e.string("result", t.Result)
	}
	e.time("createdAt", t.CreatedAt)
	e.time("updatedAt", t.UpdatedAt)
	if t.Rev != 0 { // 0 only in what git commits (CleanTaskFile)
		e.int("rev", t.Rev)
	}
	if len(t.Metadata) > 0 {
		e.value("metadata", t.Metadata)
	}
	e.time("claimedAt", t.ClaimedAt)
	if !t.LeaseExpiresAt.IsZero() {
		e.string("leaseExpiresAt", t.LeaseExpiresAt.Format(fixedWidthTime))
	}
	if t.PrevOwner != "" {
		e.string("prevOwner", t.PrevOwner)
	}
	e.time("notBefore", t.NotBefore)
	e.time("due", t.Due)
	if t.MaxAttempts != 0 {
		e.int("maxAttempts", int64(t.MaxAttempts))
	}
	if t.Attempts != 0 {
		e.int("attempts", int64(t.Attempts))
	}
	if t.Backoff != 0 {
		e.string("backoff", t.Backoff.String())
	}
	if x := t.extra(); x.MaxRuntime != 0 {
		e.string("maxRuntime", x.MaxRuntime.String())
	}
	if x := t.extra(); x.ProgressWindow != 0 {
		e.string("progressWindow", x.ProgressWindow.String())
	}
	if x := t.extra(); x.NeedsApproval {
		e.key("needsApproval")
		e.b = append(e.b, "true"...)
	}
	if x := t.extra(); x.CreatedVia != "" {
		e.string("createdVia", x.CreatedVia)
	}
	if x := t.extra(); len(x.Links) > 0 {
		e.value("links", x.Links)
	}
	if x := t.extra(); x.Check != "" {
		e.string("check", x.Check)
	}
	if x := t.extra(); len(x.Acceptance) > 0 {
		e.strings("acceptance", x.Acceptance)
	}
	if len(t.Notes) > 0 {
		e.value("notes", t.Notes)
	}
	if len(t.History) > 0 {
		e.value("history", t.History)
	}
	if k := t.extra().keys; k != nil {
		e.value("writeKeys", k)
	}
	unknown := t.unknownFields()
	for _, k := range slices.Sorted(maps.Keys(unknown)) {
		e.value(k, unknown[k])
	}
	if e.err != nil {
		return nil, e.err
	}
	return append(e.b, "\n}\n"...), nil
}

// taskFileOf is encodeTask for a write: a task that cannot be encoded is
// refused for its metadata, the one field that can fail.
func taskFileOf(t *Task) ([]byte, error) {
	data, err := encodeTask(t)
	if err != nil {
		return nil, &InvalidError{Field: "metadata", Reason: err.Error()}
	}
	return data, nil
}

// taskEncoder writes the fields of a task file; the first error stops it.
type taskEncoder struct {
	b     []byte
	err   error
	later bool // a field has been written: the next one follows a comma
}

func (e *taskEncoder) key(k string) {
	if e.later {
		e.b = append(e.b, ',')
	}
	e.later = true
	e.b = append(e.b, "\n  "...)
	e.b = appendJSONString(e.b, k)
	e.b = append(e.b, ": "...)
}

func (e *taskEncoder) int(k string, v int64) {
	e.key(k)
	e.b = strconv.AppendInt(e.b, v, 10)
}

func (e *taskEncoder) string(k, v string) {
	e.key(k)
	e.b = appendJSONString(e.b, v)
}

// time writes v unless it is zero.
func (e *taskEncoder) time(k string, v time.Time) {
	if v.IsZero() {
		return
	}
	raw, err := v.MarshalJSON()
	if err != nil {
		e.value(k, v) // for encoding/json's words on it
		return
	}
	e.key(k)
	e.b = append(e.b, raw...)
}

// ids writes a list of ids: [] when it has none, else one per line.
func (e *taskEncoder) ids(k string, ids []ID) {
	e.key(k)
	if len(ids) == 0 {
		e.b = append(e.b, "[]"...)
		return
	}
	e.b = append(e.b, '[')
	for i, id := range ids {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, "\n    "...)
		e.b = strconv.AppendInt(e.b, int64(id), 10)
	}
	e.b = append(e.b, "\n  ]"...)
}

// strings writes a list of strings that is not empty, one per line.
func (e *taskEncoder) strings(k string, list []string) {
	e.key(k)
	e.b = append(e.b, '[')
	for i, s := range list {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, "\n    "...)
		e.b = appendJSONString(e.b, s)
	}
	e.b = append(e.b, "\n  ]"...)
}

// value writes v as encoding/json writes it, indented (a RawMessage as it
// is, indented).
func (e *taskEncoder) value(k string, v any) {
	if e.err != nil {
		return
	}
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = marshalNoEscape(v); err != nil {
			e.err = fmt.Errorf("field %q: %w", k, err)
			return
		}
	}
	e.key(k)
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "  ", "  "); err != nil {
		e.err = err
		return
	}
	e.b = append(e.b, out.Bytes()...)
}

// appendJSONString appends s as a JSON string as encoding/json writes it,
// HTML left unescaped: directly when it is printable ASCII with nothing to
// escape, else through encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			raw, _ := marshalNoEscape(s) // a string always encodes
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// fixedWidthTime is RFC 3339 with all nine digits of the nanoseconds, for
// the lease's expiry: a renewal then leaves the file's size as it was (but
// when its rev gains a digit), and git, which takes a file whose size
// changed for modified without running its clean filter, sees a renewed
// task unchanged (see CleanTaskFile).
const fixedWidthTime = "2006-01-02T15:04:05.000000000Z07:00"

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// taskFile is the fast path of decodeTask: a file with only known fields of
// the right types decodes in one pass. Anything else takes the slow path,
// which keeps unknown fields and names the problem precisely.
type taskFile struct {
	ID             *int64         `json:"id"`
	Subject        *string        `json:"subject"`
	Description    string         `json:"description"`
	Status         *Status        `json:"status"`
	BlockedBy      []int64        `json:"blockedBy"`
	Owner          string         `json:"owner"`
	CreatedAt      time.Time      `json:"createdAt"`
	UpdatedAt      time.Time      `json:"updatedAt"`
	Rev            int64          `json:"rev"`
	Metadata       map[string]any `json:"metadata"`
	ClaimedAt      time.Time      `json:"claimedAt"`
	LeaseExpiresAt time.Time      `json:"leaseExpiresAt"`
	PrevOwner      string         `json:"prevOwner"`
	Key            string         `json:"key"`
	Priority       *int64         `json:"priority"`
	Labels         []string       `json:"labels"`
	Reason         string         `json:"reason"`
	Result         string         `json:"result"`
	Notes          []Note         `json:"notes"`
	History        []Transition   `json:"history"`
	Parent         int64          `json:"parent"`
	NotBefore      time.Time      `json:"notBefore"`
	Due            time.Time      `json:"due"`
	MaxAttempts    int            `json:"maxAttempts"`
	Attempts       int            `json:"attempts"`
	Backoff        string         `json:"backoff"`
}

func decodeFast(id ID, data []byte) *Task {
	// encoding/json matches keys case-insensitively; the file format does
	// not, so a file whose keys are not exactly the known ones goes slow.
	if !onlyKnownKeys(data) {
		return nil
	}
	var f taskFile
	if json.Unmarshal(data, &f) != nil {
		return nil
	}
	if f.ID == nil || ID(*f.ID) != id || f.Subject == nil || f.Status == nil || !f.Status.Valid() || f.Rev < 0 ||
		f.MaxAttempts < 0 || f.Attempts < 0 || f.Parent < 0 {
		return nil
	}
	var backoff time.Duration
	if f.Backoff != "" {
		var err error
		if backoff, err = time.ParseDuration(f.Backoff); err != nil || backoff < 0 {
			return nil
		}
	}
	if len(f.Metadata) == 0 {
		f.Metadata = nil // {} and no metadata are the same
	}
	prio := DefaultPriority
	if f.Priority != nil {
		if prio = PriorityLevel(int(*f.Priority)); !prio.Valid() {
			return nil
		}
	}
	t := &Task{ID: id, Subject: *f.Subject, Description: f.Description, Status: *f.Status, Owner: f.Owner,
		CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt, Rev: f.Rev, Metadata: f.Metadata,
		ClaimedAt: f.ClaimedAt, LeaseExpiresAt: f.LeaseExpiresAt, PrevOwner: f.PrevOwner,
		Key: f.Key, Priority: prio, Labels: fileLabels(f.Labels), Reason: f.Reason, Result: f.Result,
		Notes: nilIfEmpty(f.Notes), History: nilIfEmpty(f.History),
		Parent: ID(f.Parent), NotBefore: f.NotBefore, Due: f.Due, MaxAttempts: f.MaxAttempts, Attempts: f.Attempts, Backoff: backoff}
	if f.BlockedBy != nil {
		ids := make([]ID, len(f.BlockedBy))
		for i, b := range f.BlockedBy {
			if b <= 0 {
				return nil
			}
			ids[i] = ID(b)
		}
		t.BlockedBy = addIDs(make([]ID, 0, len(ids)), ids) // linear, however long
	}
	return t
}

// onlyKnownKeys reports whether every top-level key of the JSON object in
// data is exactly a known field name. It assumes nothing about validity;
// decoding checks that.
func onlyKnownKeys(data []byte) bool {
	depth, inString, start := 0, false, 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch c {
			case '\\':
				if depth == 1 {
					return false // an escaped key: let the slow path judge it
				}
				i++
			case '"':
				inString = false
				if depth == 1 {
					// A key is a string followed by a colon.
					j := i + 1
					for j < len(data) && (data[j] == ' ' || data[j] == '\t' || data[j] == '\n' || data[j] == '\r') {
						j++
					}
					if j < len(data) && data[j] == ':' && !knownFields[string(data[start:i])] {
						return false
					}
				}
			}
			continue
		}
		switch c {
		case '"':
			inString, start = true, i+1
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		}
	}
	return true
}

// decodeTask parses a task file whose name says it holds task id. Every
// problem is reported with the field it concerns. A file that is not
// UTF-8 is refused (encoding/json would replace what is not with U+FFFD,
// and the next write would store the replacement), and so is a task out
// of the bounds of Rules.Bounded.
func decodeTask(id ID, data []byte) (*Task, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("file is %d bytes, over the %d-byte limit", len(data), maxFileSize)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("not valid UTF-8 (at byte %d): JSON is UTF-8, and taskgraph does not guess what was meant", invalidUTF8At(data))
	}
	t := decodeWritten(id, data)
	if t == nil {
		t = decodeFast(id, data)
	}
	if t == nil {
		var err error
		if t, err = decodeSlow(id, data); err != nil {
			return nil, err
		}
	}
	if err := Rules.Bounded(t); err != nil {
		var inv *InvalidError
		if errors.As(err, &inv) {
			return nil, fmt.Errorf("field %q %s", inv.Field, inv.Reason)
		}
		return nil, err
	}
	return t, nil
}

// invalidUTF8At returns the offset of the first byte of data that is not
// part of valid UTF-8.
func invalidUTF8At(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// decodeSlow decodes field by field, keeping unknown fields and naming the
// first problem it finds: the steps run in the file's field order, so the
// error names the same field whichever step finds it.
func decodeSlow(id ID, data []byte) (*Task, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if raw == nil {
		return nil, errors.New("not a JSON object")
	}
	t := &Task{}
	var err error
	if t.ID, err = decodeInt[ID](raw, "id", true); err != nil {
		return nil, err
	}
	if t.ID != id {
		return nil, fmt.Errorf(`field "id" is %d but the file name says %d`, t.ID, id)
	}
	for _, step := range []func(*Task, map[string]json.RawMessage) error{
		decodeText, decodePriorityLabels, decodeEdges, decodeTimes, decodeSchedule,
		decodeLiveness, decodeWriteKeys, decodeApproval, decodeCheck, decodeLogs,
	} {
		if err := step(t, raw); err != nil {
			return nil, err
		}
	}
	for k, v := range raw {
		if !knownFields[k] && !rareFields[k] {
			x := t.editExtra()
			if x.unknown == nil {
				x.unknown = make(map[string]json.RawMessage)
			}
			x.unknown[k] = v
		}
	}
	return t, nil
}

// decodeText decodes the subject, description, status and the other
// single strings.
func decodeText(t *Task, raw map[string]json.RawMessage) error {
	var err error
	if t.Subject, err = decodeString(raw, "subject", true); err != nil {
		return err
	}
	if t.Description, err = decodeString(raw, "description", false); err != nil {
		return err
	}
	status, err := decodeString(raw, "status", true)
	if err != nil {
		return err
	}
	if t.Status = Status(status); !t.Status.Valid() {
		return fmt.Errorf(`field "status" is %q, want %s`, status, statusList)
	}
	for _, f := range []struct {
		k string
		p *string
	}{{"owner", &t.Owner}, {"key", &t.Key}, {"reason", &t.Reason}, {"result", &t.Result}} {
		if *f.p, err = decodeString(raw, f.k, false); err != nil {
			return err
		}
	}
	return nil
}

// decodePriorityLabels decodes the priority (absent: the default), the
// labels and the previous owner.
func decodePriorityLabels(t *Task, raw map[string]json.RawMessage) error {
	t.Priority = DefaultPriority
	if v, ok := raw["priority"]; ok && string(v) != "null" {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || !PriorityLevel(int(n)).Valid() {
			return fmt.Errorf(`field "priority" is %s, want 0 (P0, most urgent) to 4 (P4)`, v)
		}
		t.Priority = PriorityLevel(int(n))
	}
	if v, ok := raw["labels"]; ok && string(v) != "null" {
		var labels []string
		if err := json.Unmarshal(v, &labels); err != nil {
			return errors.New(`field "labels" is not an array of strings`)
		}
		t.Labels = fileLabels(labels)
	}
	var err error
	t.PrevOwner, err = decodeString(raw, "prevOwner", false)
	return err
}

// decodeEdges decodes blockedBy (sorted, without duplicates) and the rev.
func decodeEdges(t *Task, raw map[string]json.RawMessage) error {
	if v, ok := raw["blockedBy"]; ok && string(v) != "null" {
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return errors.New(`field "blockedBy" is not an array`)
		}
		ids := make([]ID, len(elems))
		for i, e := range elems {
			n, err := strconv.ParseInt(string(e), 10, 64)
			if err != nil || n <= 0 {
				return fmt.Errorf(`field "blockedBy": element %d is %s, not a positive integer id`, i, e)
			}
			ids[i] = ID(n)
		}
		if len(ids) > 0 {
			t.BlockedBy = addIDs(nil, ids) // linear, however long
		}
	}
	var err error
	t.Rev, err = decodeInt[int64](raw, "rev", false)
	return err
}

// decodeTimes decodes the timestamps and the metadata.
func decodeTimes(t *Task, raw map[string]json.RawMessage) error {
	for _, f := range []struct {
		k string
		p *time.Time
	}{{"createdAt", &t.CreatedAt}, {"updatedAt", &t.UpdatedAt}, {"claimedAt", &t.ClaimedAt}, {"leaseExpiresAt", &t.LeaseExpiresAt},
		{"notBefore", &t.NotBefore}, {"due", &t.Due}} {
		s, err := decodeString(raw, f.k, false)
		if err != nil {
			return err
		}
		if s == "" {
			continue
		}
		if *f.p, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return fmt.Errorf("field %q is %q, not an RFC 3339 time", f.k, s)
		}
	}
	if v, ok := raw["metadata"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &t.Metadata); err != nil || t.Metadata == nil {
			return errors.New(`field "metadata" is not a JSON object`)
		}
		if len(t.Metadata) == 0 {
			t.Metadata = nil
		}
	}
	return nil
}

// decodeSchedule decodes the attempts, the parent and the backoff.
func decodeSchedule(t *Task, raw map[string]json.RawMessage) error {
	for _, f := range []struct {
		k string
		p *int
	}{{"maxAttempts", &t.MaxAttempts}, {"attempts", &t.Attempts}} {
		n, err := decodeInt[int64](raw, f.k, false)
		if err != nil {
			return err
		}
		*f.p = int(n)
	}
	var err error
	if t.Parent, err = decodeInt[ID](raw, "parent", false); err != nil {
		return err
	}
	if b, err := decodeString(raw, "backoff", false); err != nil {
		return err
	} else if b != "" {
		if t.Backoff, err = time.ParseDuration(b); err != nil || t.Backoff < 0 {
			return fmt.Errorf("field \"backoff\" is %q, not a duration such as \"30s\" or \"5m\"", b)
		}
	}
	return nil
}

// decodeLiveness decodes the liveness limits, kept in Extra.
func decodeLiveness(t *Task, raw map[string]json.RawMessage) error {
	var maxRuntime, window time.Duration
	for _, f := range []struct {
		k string
		p *time.Duration
	}{{"maxRuntime", &maxRuntime}, {"progressWindow", &window}} {
		d, err := decodeString(raw, f.k, false)
		if err != nil {
			return err
		}
		if d == "" {
			continue
		}
		if *f.p, err = time.ParseDuration(d); err != nil || *f.p < 0 {
			return fmt.Errorf("field %q is %q, not a duration such as \"30m\" or \"2h\"", f.k, d)
		}
	}
	if maxRuntime != 0 || window != 0 {
		setLiveness(t, maxRuntime, window)
	}
	return nil
}

// decodeCheck decodes the check's name and the acceptance items, kept in
// Extra.
func decodeCheck(t *Task, raw map[string]json.RawMessage) error {
	check, err := decodeString(raw, "check", false)
	if err != nil {
		return err
	}
	acceptance, err := decodeArray[string](raw, "acceptance", "strings")
	if err != nil {
		return err
	}
	if check != "" || len(acceptance) > 0 {
		setCheck(t, check, acceptance)
	}
	return nil
}

// decodeLogs decodes the notes and the history.
func decodeLogs(t *Task, raw map[string]json.RawMessage) error {
	var err error
	if t.Notes, err = decodeArray[Note](raw, "notes", "notes ({at, author, text})"); err != nil {
		return err
	}
	t.History, err = decodeArray[Transition](raw, "history", "transitions ({at, event, by, detail})")
	return err
}

// fileLabels returns the labels of a task file sorted, without
// duplicates: as stored. Their form is not judged (a file written by hand
// may hold any), as with all stored text. It sorts labels in place: every
// caller passes a slice it has just decoded.
func fileLabels(labels []string) []string {
	if len(labels) == 0 {
		return nil
	}
	slices.Sort(labels)
	return slices.Compact(labels)
}

// decodeArray decodes the optional array field k; an empty one is nil.
func decodeArray[T any](raw map[string]json.RawMessage, k, what string) ([]T, error) {
	v, ok := raw[k]
	if !ok || string(v) == "null" {
		return nil, nil
	}
	var out []T
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("field %q is not an array of %s", k, what)
	}
	return nilIfEmpty(out), nil
}

// nilIfEmpty returns s, or nil if it is empty: a field written empty and
// one left out are the same task.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func decodeString(raw map[string]json.RawMessage, k string, required bool) (string, error) {
	v, ok := raw[k]
	switch {
	case !ok && required:
		return "", fmt.Errorf("field %q is missing", k)
	case required && string(v) == "null":
		return "", fmt.Errorf("field %q is null, not a string", k)
	case !ok || string(v) == "null":
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("field %q is %s, not a string", k, v)
	}
	return s, nil
}

func decodeInt[T ~int64](raw map[string]json.RawMessage, k string, required bool) (T, error) {
	v, ok := raw[k]
	if !ok {
		if required {
			return 0, fmt.Errorf("field %q is missing", k)
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("field %q is %s, not a non-negative integer", k, v)
	}
	return T(n), nil
}

// decodeApproval decodes the fields of approval and links, those of
// Task.Extra that are not durations.
func decodeApproval(t *Task, raw map[string]json.RawMessage) error {
	var needs bool
	if v, ok := raw["needsApproval"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &needs); err != nil {
			return fmt.Errorf("field \"needsApproval\" is %s, not true or false", v)
		}
	}
	via, err := decodeString(raw, "createdVia", false)
	if err != nil {
		return err
	}
	links, err := decodeArray[Link](raw, "links", "links ({ref, at})")
	if err != nil {
		return err
	}
	if needs || via != "" || len(links) > 0 {
		x := t.editExtra()
		x.NeedsApproval, x.CreatedVia, x.Links = needs, via, links
	}
	return nil
}

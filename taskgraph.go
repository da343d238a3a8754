// Package taskgraph is a durable task graph for AI agent harnesses.
//
// Every task is a JSON file in a directory (by convention .tasks/), tasks
// declare the tasks that block them, and any number of agents — goroutines,
// processes — can share one graph: writes are serialised by a lock on the
// directory, each one reloads and validates what it depends on, and files
// are replaced atomically and durably. The on-disk format is the one of the
// learn-claude-code s07 task system, so directories written by it open
// unchanged and files written here load in it.
//
// Callers program against the [Store] interface. [Open] returns the
// filesystem store; [NewMemStore] returns an in-memory store with the same
// contract for unit tests. [Resolve], [FindCycle] and [TopoOrder] are pure
// functions over a slice of tasks.
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
)

// ID identifies a task. IDs are positive, allocated in increasing order and
// never reused, even after a task is deleted.
type ID int64

// Status is the lifecycle state of a task: Pending → InProgress → Completed.
type Status string

// The three statuses of the reference design.
const (
	Pending    Status = "pending"
	InProgress Status = "in_progress"
	Completed  Status = "completed"
)

// Valid reports whether s is one of the three known statuses.
func (s Status) Valid() bool {
	return s == Pending || s == InProgress || s == Completed
}

// Task is one node of the graph.
//
// BlockedBy is stored; Blocks is derived from every task's BlockedBy when the
// task is read and is never stored. Completed blockers stay in BlockedBy as
// history.
type Task struct {
	ID          ID
	Subject     string
	Description string
	Status      Status
	Owner       string // "" when unowned; kept on completion as the record of who did it
	BlockedBy   []ID   // tasks that must complete before this one may start
	Blocks      []ID   // tasks that list this one in their BlockedBy (derived)
	Metadata    map[string]any
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Rev         int64 // +1 on every write; 0 for a file that no taskgraph wrote

	// ClaimedAt is when the current owner claimed the task; zero if unknown.
	ClaimedAt time.Time
	// LeaseExpiresAt is when a claim made with [WithLease] lapses; zero
	// means the claim never expires.
	LeaseExpiresAt time.Time
	// PrevOwner is the owner whose lease expired before the task was
	// claimed again.
	PrevOwner string

	// unknown holds the JSON fields of the task file that taskgraph does
	// not know, so that rewriting the file keeps them.
	unknown map[string]json.RawMessage
}

// NewTask describes a task to create.
type NewTask struct {
	Subject     string
	Description string
	Owner       string
	BlockedBy   []ID // existing tasks that block the new one
	Blocks      []ID // existing tasks that the new one blocks: their BlockedBy gains its id
	Metadata    map[string]any
}

// Patch is a partial update: nil pointers and empty slices leave a field as
// it is.
type Patch struct {
	Subject     *string
	Description *string
	Status      *Status
	Owner       *string

	AddBlockedBy    []ID
	RemoveBlockedBy []ID
	AddBlocks       []ID // the named tasks gain this task in their BlockedBy
	RemoveBlocks    []ID

	// Metadata is merged into the task's metadata; a key whose value is nil
	// is removed (as in a JSON merge patch).
	Metadata map[string]any

	// IfRev, when non-zero, makes the update fail with ErrConflict unless
	// the task's current Rev equals it (optimistic concurrency).
	IfRev int64
}

// Completion is the result of completing a task.
type Completion struct {
	Task      Task
	Unblocked []Task // tasks this completion made ready, by id; not every ready task
}

// Board partitions a graph by what can happen next.
type Board struct {
	Ready      []Task // pending, every blocker exists and is completed
	Blocked    []Task // pending, some blocker unfinished or missing
	InProgress []Task
	Completed  []Task
	// Missing maps a blocked task to the blockers it names that do not exist.
	Missing map[ID][]ID
}

// Errors. Every error returned by a Store matches at most one of these with
// errors.Is; the typed errors below carry the detail.
var (
	ErrNotFound = errors.New("task not found")
	ErrBlocked  = errors.New("task is blocked")
	ErrClaimed  = errors.New("task is claimed by another owner")
	ErrConflict = errors.New("task was changed concurrently")
	ErrCycle    = errors.New("dependency cycle")
	ErrInvalid  = errors.New("invalid argument")
	ErrCorrupt  = errors.New("corrupt task file")
	ErrNoReady  = errors.New("no ready task")
	// ErrClosed is returned by a Store after Close.
	ErrClosed = errors.New("store is closed")
)

// NotFoundError names a task that does not exist. It matches ErrNotFound.
type NotFoundError struct{ ID ID }

func (e *NotFoundError) Error() string { return fmt.Sprintf("task %d not found", e.ID) }

// Is reports whether target is ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// BlockedError reports the unfinished blockers that keep a task from
// starting or completing. It matches ErrBlocked.
type BlockedError struct {
	ID      ID
	By      []ID // unfinished blockers, including missing ones
	Missing []ID // the subset of By that does not exist
}

func (e *BlockedError) Error() string {
	s := fmt.Sprintf("task %d is blocked by %v", e.ID, e.By)
	if len(e.Missing) > 0 {
		s += fmt.Sprintf(" (missing: %v)", e.Missing)
	}
	return s
}

// Is reports whether target is ErrBlocked.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// ClaimedError reports that a task belongs to another owner. It matches
// ErrClaimed.
type ClaimedError struct {
	ID    ID
	Owner string
}

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("task %d is claimed by %q", e.ID, e.Owner)
}

// Is reports whether target is ErrClaimed.
func (e *ClaimedError) Is(target error) bool { return target == ErrClaimed }

// ConflictError reports a failed IfRev precondition. It matches ErrConflict.
type ConflictError struct {
	ID        ID
	Want, Got int64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("task %d is at rev %d, not %d: reload it and retry", e.ID, e.Got, e.Want)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// CycleError reports a dependency cycle. Path lists it in execution order,
// first id repeated last: Path [3 5 3] means 3 blocks 5 and 5 blocks 3.
// It matches ErrCycle.
type CycleError struct{ Path []ID }

func (e *CycleError) Error() string { return "dependency cycle " + formatPath(e.Path) }

// Is reports whether target is ErrCycle.
func (e *CycleError) Is(target error) bool { return target == ErrCycle }

func formatPath(p []ID) string {
	s := ""
	for i, id := range p {
		if i > 0 {
			s += " -> "
		}
		s += fmt.Sprint(int64(id))
	}
	return s
}

// InvalidError reports an argument or transition that is not allowed; Field
// names what was wrong. It matches ErrInvalid.
type InvalidError struct {
	Field  string
	Reason string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Reason }

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// CorruptError reports a task file that cannot be used. The file is left
// exactly as it is. It matches ErrCorrupt.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("corrupt task file %s: %v (fix or remove the file; taskgraph never rewrites it)", e.Path, e.Err)
}

// Unwrap returns the underlying problem.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// clone returns a deep copy of t that shares nothing mutable with it.
func (t Task) clone() Task {
	t.BlockedBy = slices.Clone(t.BlockedBy)
	t.Blocks = slices.Clone(t.Blocks)
	t.Metadata = cloneMetadata(t.Metadata)
	return t // unknown is never modified in place, so it may be shared
}

// normalizeMetadata returns m as JSON would read it back (numbers as
// float64, slices as []any), so that a task looks the same before and after
// it is stored, in every store.
func normalizeMetadata(m map[string]any) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, &InvalidError{Field: "metadata", Reason: "not representable as JSON: " + err.Error()}
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, &InvalidError{Field: "metadata", Reason: err.Error()}
	}
	return out, nil
}

func cloneMetadata(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneJSONValue(v)
	}
	return out
}

func cloneJSONValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return cloneMetadata(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneJSONValue(e)
		}
		return out
	default:
		return v
	}
}

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
}

// encodeTask renders t as the bytes of its task file.
func encodeTask(t *Task) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(320)
	b.WriteString("{")
	first := true
	field := func(k string, v any) error {
		raw, ok := v.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = marshalNoEscape(v); err != nil {
				return fmt.Errorf("field %q: %w", k, err)
			}
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString("\n  ")
		kb, _ := marshalNoEscape(k)
		b.Write(kb)
		b.WriteString(": ")
		return json.Indent(&b, raw, "  ", "  ")
	}
	blockedBy := t.BlockedBy
	if blockedBy == nil {
		blockedBy = []ID{}
	}
	fields := []struct {
		k    string
		v    any
		omit bool
	}{
		{"id", t.ID, false},
		{"subject", t.Subject, false},
		{"description", t.Description, false},
		{"status", t.Status, false},
		{"blockedBy", blockedBy, false},
		{"owner", t.Owner, false},
		{"createdAt", t.CreatedAt, t.CreatedAt.IsZero()},
		{"updatedAt", t.UpdatedAt, t.UpdatedAt.IsZero()},
		{"rev", t.Rev, false},
		{"metadata", t.Metadata, len(t.Metadata) == 0},
		{"claimedAt", t.ClaimedAt, t.ClaimedAt.IsZero()},
		{"leaseExpiresAt", t.LeaseExpiresAt, t.LeaseExpiresAt.IsZero()},
		{"prevOwner", t.PrevOwner, t.PrevOwner == ""},
	}
	for _, f := range fields {
		if f.omit {
			continue
		}
		if err := field(f.k, f.v); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.unknown)) {
		if err := field(k, t.unknown[k]); err != nil {
			return nil, err
		}
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

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
	if f.ID == nil || ID(*f.ID) != id || f.Subject == nil || f.Status == nil || !f.Status.Valid() || f.Rev < 0 {
		return nil
	}
	if len(f.Metadata) == 0 {
		f.Metadata = nil // {} and no metadata are the same
	}
	t := &Task{ID: id, Subject: *f.Subject, Description: f.Description, Status: *f.Status, Owner: f.Owner,
		CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt, Rev: f.Rev, Metadata: f.Metadata,
		ClaimedAt: f.ClaimedAt, LeaseExpiresAt: f.LeaseExpiresAt, PrevOwner: f.PrevOwner}
	if f.BlockedBy != nil {
		t.BlockedBy = make([]ID, 0, len(f.BlockedBy))
	}
	for _, b := range f.BlockedBy {
		if b <= 0 {
			return nil
		}
		if !slices.Contains(t.BlockedBy, ID(b)) {
			t.BlockedBy = append(t.BlockedBy, ID(b))
		}
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
// problem is reported with the field it concerns.
func decodeTask(id ID, data []byte) (*Task, error) {
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("file is %d bytes, over the %d-byte limit", len(data), maxFileSize)
	}
	if t := decodeFast(id, data); t != nil {
		return t, nil
	}
	return decodeSlow(id, data)
}

// decodeSlow decodes field by field, keeping unknown fields and naming the
// first problem it finds.
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
	if t.Subject, err = decodeString(raw, "subject", true); err != nil {
		return nil, err
	}
	if t.Description, err = decodeString(raw, "description", false); err != nil {
		return nil, err
	}
	status, err := decodeString(raw, "status", true)
	if err != nil {
		return nil, err
	}
	if t.Status = Status(status); !t.Status.Valid() {
		return nil, fmt.Errorf(`field "status" is %q, want pending, in_progress or completed`, status)
	}
	if t.Owner, err = decodeString(raw, "owner", false); err != nil {
		return nil, err
	}
	if t.PrevOwner, err = decodeString(raw, "prevOwner", false); err != nil {
		return nil, err
	}
	if v, ok := raw["blockedBy"]; ok && string(v) != "null" {
		var elems []json.RawMessage
		if err := json.Unmarshal(v, &elems); err != nil {
			return nil, errors.New(`field "blockedBy" is not an array`)
		}
		for i, e := range elems {
			n, err := strconv.ParseInt(string(e), 10, 64)
			if err != nil || n <= 0 {
				return nil, fmt.Errorf(`field "blockedBy": element %d is %s, not a positive integer id`, i, e)
			}
			if !slices.Contains(t.BlockedBy, ID(n)) {
				t.BlockedBy = append(t.BlockedBy, ID(n))
			}
		}
	}
	if t.Rev, err = decodeInt[int64](raw, "rev", false); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		k string
		p *time.Time
	}{{"createdAt", &t.CreatedAt}, {"updatedAt", &t.UpdatedAt}, {"claimedAt", &t.ClaimedAt}, {"leaseExpiresAt", &t.LeaseExpiresAt}} {
		s, err := decodeString(raw, f.k, false)
		if err != nil {
			return nil, err
		}
		if s == "" {
			continue
		}
		if *f.p, err = time.Parse(time.RFC3339Nano, s); err != nil {
			return nil, fmt.Errorf("field %q is %q, not an RFC 3339 time", f.k, s)
		}
	}
	if v, ok := raw["metadata"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &t.Metadata); err != nil || t.Metadata == nil {
			return nil, errors.New(`field "metadata" is not a JSON object`)
		}
		if len(t.Metadata) == 0 {
			t.Metadata = nil
		}
	}
	for k, v := range raw {
		if !knownFields[k] {
			if t.unknown == nil {
				t.unknown = make(map[string]json.RawMessage)
			}
			t.unknown[k] = v
		}
	}
	return t, nil
}

func decodeString(raw map[string]json.RawMessage, k string, required bool) (string, error) {
	v, ok := raw[k]
	if !ok || (!required && string(v) == "null") {
		if required {
			return "", fmt.Errorf("field %q is missing", k)
		}
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

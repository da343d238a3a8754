// Decoding a tool call's arguments: the model's JSON input checked field
// by field into the values the store takes, with messages a model can act on.

package agenttools

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// field is one property of a tool's input and where to decode it.
type field struct {
	name string
	dst  any // a pointer to *int64, *string, *bool or []int64
}

// decode parses the model's input, an object with at most the given
// fields, with messages a model can act on; a field that is null counts as
// absent.
func decode(raw json.RawMessage, fields ...field) error {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("the input must be a JSON object, not a JSON %s", te.Value)
		}
		return fmt.Errorf("the input is not valid JSON (%s)", strings.TrimPrefix(err.Error(), "json: "))
	}
	if obj == nil {
		return errors.New("the input must be a JSON object, not null")
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		known := false
		for _, n := range names {
			known = known || n == k
		}
		if !known {
			if len(names) == 0 {
				return fmt.Errorf("unknown field %q: this tool takes no input; see its input schema", k)
			}
			return fmt.Errorf("unknown field %q; this tool takes %s (see its input schema)", k, strings.Join(names, ", "))
		}
	}
	for _, f := range fields {
		v, ok := obj[f.name]
		if !ok || string(v) == "null" {
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return fmt.Errorf("%s must be %s, not %s", f.name, want(f.dst), jsonKind(v))
		}
	}
	return nil
}

// decodeID decodes the input of a tool that acts on one task: the task id
// argument, called name and checked by check (taskID, or ccID for Claude
// Code's string ids), first, then the fields rest, as decode does.
func decodeID[T int64 | stringID](raw json.RawMessage, name string, check func(*T) (taskgraph.ID, error), rest ...field) (taskgraph.ID, error) {
	var id *T
	if err := decode(raw, append([]field{{name, &id}}, rest...)...); err != nil {
		return 0, err
	}
	return check(id)
}

// want names the JSON a field's destination takes.
func want(dst any) string {
	switch dst.(type) {
	case **int64:
		return "an integer"
	case **priorityArg:
		return `a priority, 0 to 4 or "P0" to "P4"`
	case **string:
		return "a string"
	case **bool:
		return "true or false"
	case **stringID:
		return `a task id such as "3"`
	case *[]stringID:
		return `an array of task ids such as ["3"]`
	case *map[string]any:
		return "an object"
	case *[]string, **[]string:
		return "an array of strings"
	case *[]json.RawMessage:
		return "an array of tasks, each an object with key and subject"
	case *[]planRef:
		return `an array of keys, or task ids as "#12"`
	default:
		return "an array of integers (task ids)"
	}
}

// jsonKind describes a JSON value for an error message, quoting it when it
// is short.
func jsonKind(v json.RawMessage) string {
	s := strings.TrimSpace(string(v))
	if len(s) > 40 {
		s = s[:37] + "..."
	}
	switch s[0] {
	case '"':
		return "the string " + s
	case '[':
		return "the array " + s
	case '{':
		return "an object"
	default:
		return s
	}
}

// taskID validates a task_id argument (taskgraph.Rules.ID).
func taskID(id *int64) (taskgraph.ID, error) {
	if id == nil {
		return 0, errors.New("task_id is required")
	}
	tid := taskgraph.ID(*id)
	return tid, taskgraph.Rules.ID("task_id", tid)
}

// taskIDs validates a list of task ids given as the argument name
// (taskgraph.Rules.IDs).
func taskIDs(name string, ids []int64) ([]taskgraph.ID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out := make([]taskgraph.ID, len(ids))
	for i, id := range ids {
		out[i] = taskgraph.ID(id)
	}
	if err := taskgraph.Rules.IDs(name, out); err != nil {
		return nil, err
	}
	return out, nil
}

// asField returns err, an *InvalidError about a value, as about the
// argument name that gave it.
func asField(name string, err error) error {
	var inv *taskgraph.InvalidError
	if errors.As(err, &inv) {
		return &taskgraph.InvalidError{Field: name, Reason: inv.Reason}
	}
	return err
}

// priorityArg is a priority argument as given: a level, 0 to 4, or its
// name, "P0" to "P4", as the command line takes it (taskgraph.ParsePriority).
type priorityArg string

func (p *priorityArg) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		*p = priorityArg(s)
		return nil
	}
	var n int64
	if err := json.Unmarshal(data, &n); err != nil {
		return err
	}
	*p = priorityArg(strconv.FormatInt(n, 10))
	return nil
}

// newPriority checks a new task's priority argument: nil is the default.
func newPriority(p *priorityArg) (taskgraph.Priority, error) {
	pr, err := toPriority(p)
	if err != nil || pr == nil {
		return taskgraph.DefaultPriority, err
	}
	return *pr, nil
}

// toPriority checks a priority argument (taskgraph.ParsePriority); nil
// stays nil.
func toPriority(p *priorityArg) (*taskgraph.Priority, error) {
	if p == nil {
		return nil, nil
	}
	pr, err := taskgraph.ParsePriority(string(*p))
	if err != nil {
		return nil, err
	}
	return &pr, nil
}

// updateInput is task_update's input, decoded.
type updateInput struct {
	id     taskgraph.ID
	status *taskgraph.Status
	owner  *string
	// fields holds the changes other than status and owner: the
	// dependency lists, priority and labels, and the fields TaskUpdate
	// also edits (subject, description, metadata).
	fields taskgraph.Patch
}

// hasFields reports whether in changes anything but the status or owner.
func (in updateInput) hasFields() bool {
	p := in.fields
	return len(p.AddBlockedBy)+len(p.RemoveBlockedBy)+len(p.AddBlocks)+len(p.RemoveBlocks) > 0 ||
		p.Subject != nil || p.Description != nil || len(p.Metadata) > 0 || p.Priority != nil || p.Labels != nil || len(p.AddLinks) > 0
}

// updateStatuses are the statuses an update may ask for; failing a task
// has a tool of its own, which records the reason.
var updateStatuses = []taskgraph.Status{taskgraph.Pending, taskgraph.InProgress, taskgraph.Completed}

func decodeUpdate(raw json.RawMessage) (updateInput, error) {
	var (
		id                   *int64
		status, owner        *string
		addBy, rmBy, add, rm []int64
		priority             *priorityArg
		labels               *[]string
		in                   updateInput
	)
	err := decode(raw, field{"task_id", &id}, field{"status", &status},
		field{"addBlockedBy", &addBy}, field{"removeBlockedBy", &rmBy},
		field{"addBlocks", &add}, field{"removeBlocks", &rm}, field{"priority", &priority},
		field{"labels", &labels}, field{"owner", &owner}, field{"addLinks", &in.fields.AddLinks})
	if err != nil {
		return in, err
	}
	if in.fields.Priority, err = toPriority(priority); err != nil {
		return in, err
	}
	if labels != nil && *labels == nil {
		*labels = []string{}
	}
	in.fields.Labels = labels
	if in.id, err = taskID(id); err != nil {
		return in, err
	}
	if status != nil {
		s, err := taskgraph.ParseStatus(*status, updateStatuses...)
		if err != nil {
			return in, err
		}
		in.status = &s
	}
	in.owner = owner
	for _, l := range []struct {
		name string
		ids  []int64
		dst  *[]taskgraph.ID
	}{{"addBlockedBy", addBy, &in.fields.AddBlockedBy}, {"removeBlockedBy", rmBy, &in.fields.RemoveBlockedBy},
		{"addBlocks", add, &in.fields.AddBlocks}, {"removeBlocks", rm, &in.fields.RemoveBlocks}} {
		if *l.dst, err = taskIDs(l.name, l.ids); err != nil {
			return in, err
		}
	}
	return in, nil
}

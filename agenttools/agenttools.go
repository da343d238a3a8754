// Package agenttools turns a taskgraph.Store into tools for a language
// model: a name, a description, a JSON Schema for the input, and a Call
// that returns the text to give back to the model. It depends on no LLM SDK;
// wiring a Tool into one is a few lines (see examples/agentloop).
//
// The reference's four tools keep their names, arguments and output text
// (task_create, task_update, task_list, task_get), so prompts written for it
// keep working; task_claim, task_claim_next, task_complete and task_release
// add the multi-agent loop. The owner of claims is the agent identity given
// to New, never an argument the model chooses.
package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/taskgraph/taskgraph"
)

// Tool is one tool to offer a model.
type Tool struct {
	Name        string
	Description string
	InputSchema json.RawMessage // a JSON Schema object
	call        func(ctx context.Context, in json.RawMessage) (string, error)
}

// Call runs the tool on the model's input. Every problem the model can act
// on — a missing task, a blocked claim, a cycle, malformed input — comes back
// as text starting with "Error: " and a nil error. A non-nil error means the
// harness, not the model, must act: ctx is done or the store is closed.
func (t Tool) Call(ctx context.Context, input json.RawMessage) (string, error) {
	out, err := t.call(ctx, input)
	if err == nil {
		return out, nil
	}
	if ctx.Err() != nil || errors.Is(err, taskgraph.ErrClosed) {
		return "", err
	}
	return "Error: " + describe(err), nil
}

// Tools is the set of task tools bound to one store and one agent.
type Tools struct {
	tools []Tool
}

// Option configures New.
type Option func(*config)

type config struct {
	owner string
	lease time.Duration
}

// WithOwner sets the agent identity recorded as the owner of its claims
// (default "agent").
func WithOwner(owner string) Option { return func(c *config) { c.owner = owner } }

// WithLease makes the agent's claims leases of ttl (see taskgraph.WithLease).
func WithLease(ttl time.Duration) Option { return func(c *config) { c.lease = ttl } }

// New returns the task tools over store.
func New(store taskgraph.Store, opts ...Option) *Tools {
	c := config{owner: "agent"}
	for _, o := range opts {
		o(&c)
	}
	h := handlers{store: store, cfg: c}
	return &Tools{tools: []Tool{
		{"task_create", "Create a new task. It starts pending; blockedBy lists tasks that must complete first.", schemaCreate, h.create},
		{"task_update", "Update a task's status or dependencies.", schemaUpdate, h.update},
		{"task_list", "List all tasks with status summary.", schemaEmpty, h.list},
		{"task_get", "Get full details of a task by ID.", schemaTaskID, byID(h.get)},
		{"task_claim", "Claim a ready task for yourself: it becomes in_progress with you as owner.", schemaTaskID, byID(h.claim)},
		{"task_claim_next", "Claim the ready task with the lowest ID. Returns it, or says that none is ready.", schemaEmpty, h.claimNext},
		{"task_complete", "Mark a task you hold as completed. Says which tasks this unblocked.", schemaTaskID, byID(h.complete)},
		{"task_release", "Give back a task you hold: it returns to pending for someone else.", schemaTaskID, byID(h.release)},
	}}
}

// List returns every tool, in a stable order.
func (ts *Tools) List() []Tool { return ts.tools }

// Call dispatches a call by tool name. An unknown name is reported to the
// model as text, like any other bad call.
func (ts *Tools) Call(ctx context.Context, name string, input json.RawMessage) (string, error) {
	for _, t := range ts.tools {
		if t.Name == name {
			return t.Call(ctx, input)
		}
	}
	names := make([]string, len(ts.tools))
	for i, t := range ts.tools {
		names[i] = t.Name
	}
	return fmt.Sprintf("Error: unknown tool %q; the task tools are %s", name, strings.Join(names, ", ")), nil
}

var (
	schemaEmpty  = json.RawMessage(`{"type":"object","properties":{}}`)
	schemaTaskID = json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"integer"}},"required":["task_id"]}`)
	schemaCreate = json.RawMessage(`{"type":"object","properties":{"subject":{"type":"string"},"description":{"type":"string"},"blockedBy":{"type":"array","items":{"type":"integer"}}},"required":["subject"]}`)
	schemaUpdate = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},` +
		`"status":{"type":"string","enum":["pending","in_progress","completed"]},` +
		`"addBlockedBy":{"type":"array","items":{"type":"integer"}},` +
		`"removeBlockedBy":{"type":"array","items":{"type":"integer"}},` +
		`"addBlocks":{"type":"array","items":{"type":"integer"}},` +
		`"removeBlocks":{"type":"array","items":{"type":"integer"}},` +
		`"owner":{"type":"string"}},"required":["task_id"]}`)
)

type handlers struct {
	store taskgraph.Store
	cfg   config
}

type taskIDInput struct {
	TaskID *int64 `json:"task_id"`
}

func (in taskIDInput) id() (taskgraph.ID, error) {
	if in.TaskID == nil {
		return 0, errors.New("task_id is required")
	}
	return taskgraph.ID(*in.TaskID), nil
}

// byID makes a tool whose only input is a task_id out of f, which is given
// the decoded id.
func byID(f func(ctx context.Context, id taskgraph.ID) (string, error)) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, raw json.RawMessage) (string, error) {
		var in taskIDInput
		if err := decode(raw, &in); err != nil {
			return "", err
		}
		id, err := in.id()
		if err != nil {
			return "", err
		}
		return f(ctx, id)
	}
}

func (h handlers) create(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		Subject     *string        `json:"subject"`
		Description string         `json:"description"`
		BlockedBy   []taskgraph.ID `json:"blockedBy"`
	}
	if err := decode(raw, &in); err != nil {
		return "", err
	}
	if in.Subject == nil {
		return "", errors.New("subject is required")
	}
	t, err := h.store.Create(ctx, taskgraph.NewTask{Subject: *in.Subject, Description: in.Description, BlockedBy: in.BlockedBy})
	if err != nil {
		return "", err
	}
	return render(t), nil
}

func (h handlers) update(ctx context.Context, raw json.RawMessage) (string, error) {
	var in struct {
		taskIDInput
		Status          *taskgraph.Status `json:"status"`
		AddBlockedBy    []taskgraph.ID    `json:"addBlockedBy"`
		RemoveBlockedBy []taskgraph.ID    `json:"removeBlockedBy"`
		AddBlocks       []taskgraph.ID    `json:"addBlocks"`
		RemoveBlocks    []taskgraph.ID    `json:"removeBlocks"`
		Owner           *string           `json:"owner"`
	}
	if err := decode(raw, &in); err != nil {
		return "", err
	}
	id, err := in.id()
	if err != nil {
		return "", err
	}
	p := taskgraph.Patch{
		Status: in.Status, Owner: in.Owner,
		AddBlockedBy: in.AddBlockedBy, RemoveBlockedBy: in.RemoveBlockedBy,
		AddBlocks: in.AddBlocks, RemoveBlocks: in.RemoveBlocks,
	}
	if in.Status != nil && *in.Status == taskgraph.InProgress && in.Owner == nil {
		// The reference lets a model start a task by status alone; the
		// agent is then its owner.
		p.Owner = &h.cfg.owner
	}
	t, err := h.store.Update(ctx, id, p)
	if err != nil {
		return "", err
	}
	return render(t), nil
}

func (h handlers) list(ctx context.Context, raw json.RawMessage) (string, error) {
	if err := decode(raw, &struct{}{}); err != nil {
		return "", err
	}
	tasks, err := h.store.List(ctx)
	if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
		return "", err
	}
	return renderList(tasks, err), nil
}

func (h handlers) get(ctx context.Context, id taskgraph.ID) (string, error) {
	t, err := h.store.Get(ctx, id)
	if err != nil {
		return "", err
	}
	return render(t), nil
}

func (h handlers) claimOpts() []taskgraph.ClaimOption {
	if h.cfg.lease > 0 {
		return []taskgraph.ClaimOption{taskgraph.WithLease(h.cfg.lease)}
	}
	return nil
}

func (h handlers) claim(ctx context.Context, id taskgraph.ID) (string, error) {
	t, err := h.store.Claim(ctx, id, h.cfg.owner, h.claimOpts()...)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Claimed #%d: %s\n%s", t.ID, t.Subject, render(t)), nil
}

func (h handlers) claimNext(ctx context.Context, raw json.RawMessage) (string, error) {
	if err := decode(raw, &struct{}{}); err != nil {
		return "", err
	}
	t, err := h.store.ClaimNext(ctx, h.cfg.owner, h.claimOpts()...)
	if errors.Is(err, taskgraph.ErrNoReady) {
		return "No ready task: every pending task is blocked, or there is none.", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Claimed #%d: %s\n%s", t.ID, t.Subject, render(t)), nil
}

func (h handlers) complete(ctx context.Context, id taskgraph.ID) (string, error) {
	c, err := h.store.Complete(ctx, id, h.cfg.owner)
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("Completed #%d: %s", c.Task.ID, c.Task.Subject)
	if len(c.Unblocked) > 0 {
		parts := make([]string, len(c.Unblocked))
		for i, u := range c.Unblocked {
			parts[i] = fmt.Sprintf("#%d %s", u.ID, u.Subject)
		}
		out += "\nUnblocked: " + strings.Join(parts, ", ")
	}
	return out, nil
}

func (h handlers) release(ctx context.Context, id taskgraph.ID) (string, error) {
	t, err := h.store.Release(ctx, id, h.cfg.owner)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Released #%d: %s", t.ID, t.Subject), nil
}

// decode parses the model's input strictly, with messages a model can fix.
func decode(raw json.RawMessage, v any) error {
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return fmt.Errorf("%s must be %s, not a JSON %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se), errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("the input is not valid JSON (%v)", err)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return fmt.Errorf("%s; see the tool's input schema", strings.TrimPrefix(err.Error(), "json: "))
	default:
		return fmt.Errorf("the input must be a JSON object (%v)", err)
	}
}

func jsonType(kind string) string {
	switch kind {
	case "int64", "int":
		return "an integer"
	case "string":
		return "a string"
	case "slice":
		return "an array of integers"
	default:
		return "a JSON " + kind
	}
}

// describe words an error for the model.
func describe(err error) string {
	var ce *taskgraph.CycleError
	if errors.As(err, &ce) && len(ce.Path) >= 2 {
		n := len(ce.Path)
		return fmt.Sprintf("adding %d -> %d would create a cycle %s", ce.Path[n-2], ce.Path[n-1], strings.TrimPrefix(ce.Error(), "dependency cycle "))
	}
	var be *taskgraph.BlockedError
	if errors.As(err, &be) {
		s := fmt.Sprintf("blocked by %v", be.By)
		if len(be.Missing) > 0 {
			s += fmt.Sprintf(" (tasks %v do not exist)", be.Missing)
		}
		return s
	}
	return err.Error()
}

// TaskJSON is the head of a task as JSON: the reference's fields, in its
// order, with blockedBy and blocks never null. The tools' task text is a
// TaskJSON followed by the lease and the metadata; the taskgraph command's
// --json and export shape starts with one too. Embed it in a struct to add
// fields after it.
type TaskJSON struct {
	ID          taskgraph.ID     `json:"id"`
	Subject     string           `json:"subject"`
	Description string           `json:"description"`
	Status      taskgraph.Status `json:"status"`
	BlockedBy   []taskgraph.ID   `json:"blockedBy"`
	Blocks      []taskgraph.ID   `json:"blocks"`
	Owner       string           `json:"owner"`
}

// NewTaskJSON returns the reference's fields of t, with empty (not nil)
// edge lists.
func NewTaskJSON(t taskgraph.Task) TaskJSON {
	j := TaskJSON{ID: t.ID, Subject: t.Subject, Description: t.Description, Status: t.Status,
		BlockedBy: t.BlockedBy, Blocks: t.Blocks, Owner: t.Owner}
	if j.BlockedBy == nil {
		j.BlockedBy = []taskgraph.ID{}
	}
	if j.Blocks == nil {
		j.Blocks = []taskgraph.ID{}
	}
	return j
}

// taskJSON is the shape a model sees: the reference's fields, then the
// derived and added ones.
type taskJSON struct {
	TaskJSON
	LeaseExpiresAt string         `json:"leaseExpiresAt,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

func render(t taskgraph.Task) string {
	j := taskJSON{TaskJSON: NewTaskJSON(t), Metadata: t.Metadata}
	if !t.LeaseExpiresAt.IsZero() {
		j.LeaseExpiresAt = t.LeaseExpiresAt.Format(time.RFC3339)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(j) // cannot fail: metadata came from JSON
	return strings.TrimRight(b.String(), "\n")
}

// renderList prints the board as the reference's list_all does, showing
// only the blockers that are not completed yet.
func renderList(tasks []taskgraph.Task, corrupt error) string {
	if len(tasks) == 0 && corrupt == nil {
		return "No tasks."
	}
	status := make(map[taskgraph.ID]taskgraph.Status, len(tasks))
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	sort.Slice(tasks, func(i, j int) bool { return tasks[i].ID < tasks[j].ID })
	var lines []string
	for _, t := range tasks {
		marker := map[taskgraph.Status]string{taskgraph.Pending: "[ ]", taskgraph.InProgress: "[>]", taskgraph.Completed: "[x]"}[t.Status]
		line := fmt.Sprintf("%s #%d: %s", marker, t.ID, t.Subject)
		if t.Owner != "" && t.Status != taskgraph.Pending {
			line += " @" + t.Owner
		}
		var open []string
		for _, b := range t.BlockedBy {
			if status[b] != taskgraph.Completed {
				open = append(open, fmt.Sprint(b))
			}
		}
		if len(open) > 0 && t.Status != taskgraph.Completed {
			line += " (blocked by: [" + strings.Join(open, ", ") + "])"
		}
		lines = append(lines, line)
	}
	if corrupt != nil {
		lines = append(lines, "Warning: some task files are unreadable and were skipped: "+corrupt.Error())
	}
	return strings.Join(lines, "\n")
}

// Package agenttools turns a taskgraph.Store into tools for a language
// model: a name, a description, a JSON Schema for the input, and a Call
// that returns the text to give back to the model with a flag saying
// whether the call failed. It depends on no LLM SDK; wiring a Tool into one
// is a few lines (see examples/agentloop).
//
// The reference's four tools keep their names, arguments and output text
// (task_create, task_update, task_list, task_get), so prompts written for it
// keep working; task_claim, task_claim_next, task_complete, task_release,
// task_renew and task_delete add the multi-agent loop, task_fail an outcome
// other than success, and task_plan a whole plan in one call. ClaudeCode
// offers the same graph under Claude Code's own tool names and argument
// shapes (TaskCreate, TaskGet, TaskUpdate, TaskList).
//
// The tools cost little context: the whole set's definitions are about
// 1,100 tokens, and task_list shows at most DefaultListLimit tasks (the
// ones in progress and ready first), filtered by status, owner, label or
// readiness, and says how many it left out. The token-budget test in
// agenttools/tokenbudget measures both with a real tokenizer.
//
// Claims are safe whatever the model asks. The agent's identity is the one
// given to New (WithOwner), never an argument the model chooses, and no
// tool changes the status or owner of a task that another identity holds
// or completed (or failed):
//
//   - task_update with status in_progress claims the task for the agent,
//     as task_claim does (with the agent's lease); with status completed
//     it completes a task the agent holds, or claims and completes a
//     pending one; with status pending it gives back a task the agent
//     holds, or reopens a task the agent (or no one) completed or failed.
//   - task_update's owner argument may only be the agent's own identity
//     (take the task, as status in_progress does) or "" (give back a task
//     the agent holds, as status pending does). Any other value is
//     refused: a task's owner is whoever claims it.
//   - task_complete, task_fail, task_release and task_renew act only on the
//     agent's own claims; task_delete refuses a task another identity
//     holds or completed.
//
// Dependencies (addBlockedBy, removeBlockedBy, addBlocks, removeBlocks),
// priority and labels may be edited on any task: they order and route the
// plan, and a claim does not own them. WithLabels gives an agent its role:
// task_claim_next then takes only tasks that carry all its labels.
package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// Result is what a tool call gives back to the model: the text to show it
// and whether the call failed, the is_error flag of the Anthropic, OpenAI
// and MCP tool-result shapes. The text of a failed call starts with
// "Error: ", so a harness that has no flag to set can pass the text alone.
type Result struct {
	Text    string
	IsError bool
}

// String returns the text the model sees.
func (r Result) String() string { return r.Text }

// Hints describe what a tool does to the graph, for clients that decide
// from them whether to ask a person before running it (MCP's tool
// annotations).
type Hints struct {
	// ReadOnly: the tool changes nothing.
	ReadOnly bool
	// Destructive: the tool may delete a task.
	Destructive bool
	// Idempotent: calling the tool again with the same input changes
	// nothing more.
	Idempotent bool
}

// Tool is one tool to offer a model.
type Tool struct {
	Name        string
	Title       string // a short human-readable name, for clients that show one
	Description string
	InputSchema json.RawMessage // a JSON Schema object
	Hints       Hints
	call        func(ctx context.Context, in json.RawMessage) (string, error)
	owner       string
}

// Call runs the tool on the model's input. Every problem the model can act
// on — a missing task, a blocked claim, a task someone else holds, a cycle,
// malformed input — comes back as a Result with IsError set, its text
// starting with "Error: ", and a nil error. A non-nil error means the
// harness, not the model, must act: ctx is done or the store is closed.
func (t Tool) Call(ctx context.Context, input json.RawMessage) (Result, error) {
	out, err := t.call(ctx, input)
	if err == nil {
		return Result{Text: out}, nil
	}
	if ctx.Err() != nil || errors.Is(err, taskgraph.ErrClosed) {
		return Result{}, err
	}
	return Result{Text: "Error: " + describe(err, t.owner), IsError: true}, nil
}

// Tools is the set of task tools bound to one store and one agent.
type Tools struct {
	tools []Tool
}

// Option configures New.
type Option func(*config)

type config struct {
	owner  string
	lease  time.Duration
	labels []string
}

// WithOwner sets the agent identity recorded as the owner of its claims
// (default "agent"). Give every agent that shares a store its own.
func WithOwner(owner string) Option { return func(c *config) { c.owner = owner } }

// WithLease makes the agent's claims leases of ttl (see taskgraph.WithLease)
// and is the default extension of task_renew.
func WithLease(ttl time.Duration) Option { return func(c *config) { c.lease = ttl } }

// WithLabels makes task_claim_next take only tasks that carry all of
// labels (besides any the model names): the agent's role, which routes
// work to it, is the harness's choice, as its identity is.
func WithLabels(labels ...string) Option {
	return func(c *config) { c.labels = append(c.labels, labels...) }
}

// New returns the task tools over store.
func New(store taskgraph.Store, opts ...Option) *Tools {
	c := config{owner: "agent"}
	for _, o := range opts {
		o(&c)
	}
	h := handlers{store: store, cfg: c}
	var (
		read       = Hints{ReadOnly: true, Idempotent: true}
		once       = Hints{Idempotent: true}
		additive   = Hints{}
		destroying = Hints{Destructive: true, Idempotent: true}
	)
	tools := []Tool{
		{"task_create", "Create task", "Create a pending task. blockedBy: tasks that must complete first. A key names it: creating a key again returns the existing task.", schemaCreate, additive, h.create, ""},
		{"task_update", "Update task", "Update a task. Status in_progress claims it for you; you can complete or give back only tasks you hold, and no one else's claim can be changed.", schemaUpdate, once, h.update, ""},
		{"task_list", "List tasks", "List tasks, one a line; in progress and ready first when not all fit.", schemaList, read, h.list, ""},
		{"task_get", "Get task", "Get a task in full, and why it cannot start if it cannot.", schemaTaskID, read, byID(h.get), ""},
		{"task_plan", "Create plan", "Create many tasks in one call, all or none. Tasks name their blockers in after by key (or existing id). Keys that exist are not created again.", schemaPlan, once, h.plan, ""},
		{"task_claim", "Claim task", "Claim a ready task: it becomes in_progress with you as owner.", schemaTaskID, once, byID(h.claim), ""},
		{"task_claim_next", "Claim next ready task", "Claim the most urgent ready task, else says none is ready.", schemaClaimNext, additive, h.claimNext, ""},
		{"task_complete", "Complete task", "Complete a task you hold; says which tasks this unblocked.", schemaComplete, once, h.complete, ""},
		{"task_fail", "Fail task", "Give up on a task you hold, saying why. Tasks that depend on it cannot start until it is reopened.", schemaFail, once, h.fail, ""},
		{"task_release", "Release task", "Give back a task you hold, for someone else to take.", schemaTaskID, once, byID(h.release), ""},
		{"task_renew", "Renew lease", "Extend the lease on a task you hold, so that no one else takes it; call it now and then during long work.", schemaRenew, additive, h.renew, ""},
		{"task_delete", "Delete task", "Delete a task no one else holds. detach: true also removes it from the tasks it blocks.", schemaDelete, destroying, h.delete, ""},
	}
	for i := range tools {
		tools[i].owner = c.owner
	}
	return &Tools{tools: tools}
}

// List returns every tool, in a stable order.
func (ts *Tools) List() []Tool { return ts.tools }

// Call dispatches a call by tool name. An unknown name is reported to the
// model like any other bad call: a Result with IsError set.
func (ts *Tools) Call(ctx context.Context, name string, input json.RawMessage) (Result, error) {
	for _, t := range ts.tools {
		if t.Name == name {
			return t.Call(ctx, input)
		}
	}
	names := make([]string, len(ts.tools))
	for i, t := range ts.tools {
		names[i] = t.Name
	}
	return Result{Text: fmt.Sprintf("Error: unknown tool %q; the task tools are %s", name, strings.Join(names, ", ")), IsError: true}, nil
}

var (
	schemaList = json.RawMessage(`{"type":"object","properties":{` +
		`"status":{"type":"string","enum":["pending","in_progress","completed","failed","cancelled"]},` +
		`"owner":{"type":"string"},` +
		`"label":{"type":"string"},` +
		`"ready":{"type":"boolean","description":"Only tasks that can start now."},` +
		`"limit":{"type":"integer","description":"Default 50."}}}`)
	schemaTaskID = json.RawMessage(`{"type":"object","properties":{"task_id":{"type":"integer"}},"required":["task_id"]}`)
	// priority and labels are the same on every tool that sets them.
	schemaPriority = `"priority":{"type":"integer","minimum":0,"maximum":4,"description":"0 most urgent, 4 least; default 2."}`
	schemaLabels   = `"labels":{"type":"array","items":{"type":"string"}}`
	schemaCreate   = json.RawMessage(`{"type":"object","properties":{` +
		`"subject":{"type":"string"},"description":{"type":"string"},` +
		`"blockedBy":{"type":"array","items":{"type":"integer"}},` +
		schemaPriority + `,` + schemaLabels + `,"key":{"type":"string"}},` +
		`"required":["subject"]}`)
	schemaUpdate = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},` +
		`"status":{"type":"string","enum":["pending","in_progress","completed"]},` +
		`"addBlockedBy":{"type":"array","items":{"type":"integer"}},` +
		`"removeBlockedBy":{"type":"array","items":{"type":"integer"}},` +
		`"addBlocks":{"type":"array","items":{"type":"integer"}},` +
		`"removeBlocks":{"type":"array","items":{"type":"integer"}},` +
		schemaPriority + `,` +
		`"labels":{"type":"array","items":{"type":"string"},"description":"Replaces the labels."},` +
		`"owner":{"type":"string","description":"Only \"\" (give back a task you hold) or your own name (take it)."}},` +
		`"required":["task_id"]}`)
	schemaPlan = json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array","items":{"type":"object","properties":{` +
		`"key":{"type":"string"},"subject":{"type":"string"},"description":{"type":"string"},` +
		`"after":{"type":"array","items":{"type":"string"},"description":"Keys of this plan's tasks, or existing ids as \"#12\"."},` +
		schemaPriority + `,` + schemaLabels + `},` +
		`"required":["key","subject"]}}},"required":["tasks"]}`)
	schemaClaimNext = json.RawMessage(`{"type":"object","properties":{` +
		`"labels":{"type":"array","items":{"type":"string"},"description":"Only tasks with all these labels."}}}`)
	schemaComplete = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},` +
		`"result":{"type":"string","description":"What you did, for those who come after."}},` +
		`"required":["task_id"]}`)
	schemaFail = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},"reason":{"type":"string"}},` +
		`"required":["task_id","reason"]}`)
	schemaRenew = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},` +
		`"seconds":{"type":"integer","description":"Lease length from now; default: a new claim's."}},` +
		`"required":["task_id"]}`)
	schemaDelete = json.RawMessage(`{"type":"object","properties":{` +
		`"task_id":{"type":"integer"},"detach":{"type":"boolean"}},` +
		`"required":["task_id"]}`)
)

type handlers struct {
	store taskgraph.Store
	cfg   config
}

// byID makes a tool whose only input is a task_id out of f, which is given
// the decoded id.
func byID(f func(ctx context.Context, id taskgraph.ID) (string, error)) func(context.Context, json.RawMessage) (string, error) {
	return func(ctx context.Context, raw json.RawMessage) (string, error) {
		var id *int64
		if err := decode(raw, field{"task_id", &id}); err != nil {
			return "", err
		}
		tid, err := taskID(id)
		if err != nil {
			return "", err
		}
		return f(ctx, tid)
	}
}

func (h handlers) create(ctx context.Context, raw json.RawMessage) (string, error) {
	var (
		subject, description, key *string
		blockedBy                 []int64
		priority                  *int64
		labels                    []string
	)
	if err := decode(raw, field{"subject", &subject}, field{"description", &description}, field{"blockedBy", &blockedBy},
		field{"priority", &priority}, field{"labels", &labels}, field{"key", &key}); err != nil {
		return "", err
	}
	if subject == nil {
		return "", errors.New("subject is required")
	}
	by, err := taskIDs("blockedBy", blockedBy)
	if err != nil {
		return "", err
	}
	nt := taskgraph.NewTask{Subject: *subject, BlockedBy: by, Labels: labels}
	if description != nil {
		nt.Description = *description
	}
	if key != nil {
		nt.Key = *key
	}
	if nt.Priority, err = toPriority(priority); err != nil {
		return "", err
	}
	t, err := h.store.Create(ctx, nt)
	if err != nil {
		return "", err
	}
	return render(t), nil
}

// toPriority checks a priority argument (taskgraph.ParsePriority); nil
// stays nil.
func toPriority(p *int64) (*taskgraph.Priority, error) {
	if p == nil {
		return nil, nil
	}
	pr, err := taskgraph.ParsePriority(strconv.FormatInt(*p, 10))
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
		p.Subject != nil || p.Description != nil || len(p.Metadata) > 0 || p.Priority != nil || p.Labels != nil
}

// maxUpdateTries bounds how often update re-reads a task that changed
// between its decision and its write.
const maxUpdateTries = 8

func (h handlers) update(ctx context.Context, raw json.RawMessage) (string, error) {
	in, err := decodeUpdate(raw)
	if err != nil {
		return "", err
	}
	t, err := h.apply(ctx, in, "task_claim")
	if err != nil {
		return "", err
	}
	return render(t), nil
}

// apply makes the change in asks for and returns the task as it is after
// it; claimWith names how another agent takes a task, for the message
// that refuses an owner argument naming someone else.
func (h handlers) apply(ctx context.Context, in updateInput, claimWith string) (taskgraph.Task, error) {
	if in.owner != nil && *in.owner != "" && *in.owner != h.cfg.owner {
		return taskgraph.Task{}, fmt.Errorf("owner can only be %q (yours) or \"\" (to give back a task you hold): a task's owner is whoever claims it, so another agent takes a task with %s", h.cfg.owner, claimWith)
	}
	for try := 1; ; try++ {
		t, err := h.store.Get(ctx, in.id)
		if err != nil {
			return taskgraph.Task{}, err
		}
		out, err := h.updateOnce(ctx, t, in)
		if errors.Is(err, taskgraph.ErrConflict) && try < maxUpdateTries {
			continue // the task changed since it was read: decide again
		}
		return out, err
	}
}

// updateStatuses are the statuses an update may ask for; failing a task
// has a tool of its own, which records the reason.
var updateStatuses = []taskgraph.Status{taskgraph.Pending, taskgraph.InProgress, taskgraph.Completed}

// updateOnce applies in to t, the task as just read. A write it makes on a
// decision taken from t is conditional on t's rev, so a task that changed
// meanwhile gives ErrConflict and nothing is written.
func (h handlers) updateOnce(ctx context.Context, t taskgraph.Task, in updateInput) (taskgraph.Task, error) {
	me := h.cfg.owner
	want, err := h.target(t, in)
	if err != nil {
		return t, err
	}
	if want != nil {
		if other := othersOwner(t, me); other != "" {
			// Only a claim can take a task someone else holds, and only
			// once their lease has lapsed; the store decides that.
			if !(*want == taskgraph.InProgress && t.Status == taskgraph.InProgress && !in.hasFields()) {
				return t, refusal(t, me, changeStatus)
			}
		}
	}
	switch {
	case want == nil && !in.hasFields():
		return t, nil // nothing to change
	case want == nil:
		return h.store.Update(ctx, t.ID, in.fields)
	case *want == taskgraph.InProgress && !in.hasFields() && t.Status != taskgraph.Completed:
		return h.store.Claim(ctx, t.ID, me, h.claimOpts()...)
	case *want == taskgraph.Completed && !in.hasFields() && t.Status == taskgraph.InProgress:
		c, err := h.store.Complete(ctx, t.ID, me)
		return c.Task, err
	case *want == taskgraph.Pending && !in.hasFields() && t.Status == taskgraph.InProgress:
		return h.store.Release(ctx, t.ID, me)
	case *want == taskgraph.Pending && t.Status.Terminal():
		// Reopen checks that nothing the task blocks has started; the
		// fields go first, so that removing an edge to a started task
		// in the same call lets the reopen through.
		if !in.hasFields() {
			return h.store.Reopen(ctx, t.ID)
		}
		if _, err := h.store.Update(ctx, t.ID, in.fields); err != nil {
			return t, err
		}
		out, err := h.store.Reopen(ctx, t.ID)
		if err != nil {
			// Say exactly what happened: half of the call took effect.
			return out, fmt.Errorf("the other changes were saved, but the task was not reopened: %w", err)
		}
		return out, nil
	}
	p := in.fields
	p.Status, p.IfRev = want, t.Rev
	if *want != taskgraph.Pending {
		p.Owner = &me // starting or finishing a task makes it the agent's
	}
	out, err := h.store.Update(ctx, t.ID, p)
	if err == nil && *want == taskgraph.InProgress && h.cfg.lease > 0 {
		out, err = h.store.Renew(ctx, t.ID, me, h.cfg.lease)
	}
	return out, err
}

// target returns the status that in asks t to take, or nil for none: the
// status argument, or what the owner argument means for t. A status t
// already has is no change, except in_progress, which may be a claim.
func (h handlers) target(t taskgraph.Task, in updateInput) (*taskgraph.Status, error) {
	want := in.status
	if in.owner != nil {
		take := *in.owner != "" // the agent's own identity: checked by update
		switch {
		case take && want != nil && *want == taskgraph.Pending:
			return nil, errors.New("owner names you but status is pending: to give a task back, set owner to \"\" or status to pending")
		case take && want != nil:
		case take && t.Status == taskgraph.Completed:
			if o := othersOwner(t, h.cfg.owner); o != "" {
				return nil, refusal(t, h.cfg.owner, changeStatus)
			}
		case take:
			s := taskgraph.InProgress
			want = &s
		case want != nil && *want != taskgraph.Pending:
			return nil, fmt.Errorf("owner \"\" gives a task back, which contradicts status %s", *want)
		case t.Status.Terminal():
			return nil, fmt.Errorf("task %d is %s: there is no claim to give back", t.ID, t.Status)
		case t.Status == taskgraph.InProgress:
			s := taskgraph.Pending
			want = &s
		}
	}
	if want != nil && *want == t.Status && t.Status != taskgraph.InProgress {
		return nil, nil
	}
	return want, nil
}

// othersOwner returns the identity other than me that holds t (a claim in
// progress) or completed it, or "" if there is none.
func othersOwner(t taskgraph.Task, me string) string {
	if t.Status != taskgraph.Pending && t.Owner != "" && t.Owner != me {
		return t.Owner
	}
	return ""
}

// refusal is the error for a change to a task that another identity holds
// or completed; what names the change.
func refusal(t taskgraph.Task, me, what string) error {
	switch t.Status {
	case taskgraph.Completed:
		return fmt.Errorf("task %d was completed by %q, not by you (%q): only they can %s", t.ID, t.Owner, me, what)
	case taskgraph.Failed:
		return fmt.Errorf("task %d was failed by %q, not by you (%q): only they can %s", t.ID, t.Owner, me, what)
	case taskgraph.Cancelled:
		return fmt.Errorf("task %d was cancelled while %q held it, not you (%q): only they can %s", t.ID, t.Owner, me, what)
	}
	return fmt.Errorf("task %d is claimed by %q, not by you (%q): only its holder can %s", t.ID, t.Owner, me, what)
}

// What a refusal says only the owner may do.
const (
	changeStatus = "change its status or owner"
	deleteIt     = "delete it"
)

func decodeUpdate(raw json.RawMessage) (updateInput, error) {
	var (
		id                   *int64
		status, owner        *string
		addBy, rmBy, add, rm []int64
		priority             *int64
		labels               *[]string
		in                   updateInput
	)
	err := decode(raw, field{"task_id", &id}, field{"status", &status},
		field{"addBlockedBy", &addBy}, field{"removeBlockedBy", &rmBy},
		field{"addBlocks", &add}, field{"removeBlocks", &rm}, field{"priority", &priority},
		field{"labels", &labels}, field{"owner", &owner})
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

func (h handlers) claimOpts() []taskgraph.ClaimOption {
	if h.cfg.lease != 0 { // a negative one is refused by the store, as everywhere
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
	var labels []string
	if err := decode(raw, field{"labels", &labels}); err != nil {
		return "", err
	}
	opts := h.claimOpts()
	if all := append(slices.Clone(h.cfg.labels), labels...); len(all) > 0 {
		opts = append(opts, taskgraph.WithLabels(all...))
	}
	t, err := h.store.ClaimNext(ctx, h.cfg.owner, opts...)
	if errors.Is(err, taskgraph.ErrNoReady) {
		if all := append(slices.Clone(h.cfg.labels), labels...); len(all) > 0 {
			return fmt.Sprintf("No ready task with labels %s: every such pending task is blocked, or there is none.", strings.Join(all, ", ")), nil
		}
		return "No ready task: every pending task is blocked, or there is none.", nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Claimed #%d: %s\n%s", t.ID, t.Subject, render(t)), nil
}

func (h handlers) complete(ctx context.Context, raw json.RawMessage) (string, error) {
	var (
		id     *int64
		result *string
	)
	if err := decode(raw, field{"task_id", &id}, field{"result", &result}); err != nil {
		return "", err
	}
	tid, err := taskID(id)
	if err != nil {
		return "", err
	}
	var opts []taskgraph.CompleteOption
	if result != nil {
		opts = append(opts, taskgraph.WithResult(*result))
	}
	c, err := h.store.Complete(ctx, tid, h.cfg.owner, opts...)
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

func (h handlers) renew(ctx context.Context, raw json.RawMessage) (string, error) {
	var id, seconds *int64
	if err := decode(raw, field{"task_id", &id}, field{"seconds", &seconds}); err != nil {
		return "", err
	}
	tid, err := taskID(id)
	if err != nil {
		return "", err
	}
	ttl := h.cfg.lease
	switch {
	case seconds != nil:
		if ttl, err = taskgraph.Rules.LeaseSeconds("seconds", *seconds); err == nil {
			err = taskgraph.Rules.RenewArgs(ttl)
		}
		if err != nil {
			return "", asField("seconds", err)
		}
	case ttl <= 0:
		return "", errors.New("seconds is required: claims made here have no lease to renew by default")
	}
	t, err := h.store.Renew(ctx, tid, h.cfg.owner, ttl)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Renewed #%d: %s; the lease now ends at %s", t.ID, t.Subject, t.LeaseExpiresAt.UTC().Format(time.RFC3339)), nil
}

func (h handlers) delete(ctx context.Context, raw json.RawMessage) (string, error) {
	var id *int64
	var detach *bool
	if err := decode(raw, field{"task_id", &id}, field{"detach", &detach}); err != nil {
		return "", err
	}
	tid, err := taskID(id)
	if err != nil {
		return "", err
	}
	t, err := h.store.Get(ctx, tid)
	if err != nil {
		return "", err
	}
	if othersOwner(t, h.cfg.owner) != "" {
		return "", refusal(t, h.cfg.owner, deleteIt)
	}
	var opts []taskgraph.DeleteOption
	if detach != nil && *detach {
		opts = append(opts, taskgraph.Detach())
	}
	err = h.store.Delete(ctx, tid, opts...)
	if errors.Is(err, taskgraph.ErrInvalid) && len(opts) == 0 {
		if t, gerr := h.store.Get(ctx, tid); gerr == nil && len(t.Blocks) > 0 {
			return "", fmt.Errorf("tasks %s depend on task %d: remove those dependencies first (task_update with removeBlockedBy), or call task_delete with detach: true", FormatIDs(t.Blocks), tid)
		}
	}
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("Deleted #%d: %s", t.ID, t.Subject)
	if len(opts) > 0 && len(t.Blocks) > 0 {
		out += fmt.Sprintf("\nNo longer blocked by it: %s", FormatIDs(t.Blocks))
	}
	return out, nil
}

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

// want names the JSON a field's destination takes.
func want(dst any) string {
	switch dst.(type) {
	case **int64:
		return "an integer"
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

// FormatIDs writes a list of task ids the one way the tools and the
// taskgraph command write every list: "[1, 2, 3]", as the reference's
// list does.
func FormatIDs(ids []taskgraph.ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(int64(id), 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// scrub rewrites the parts of the store's messages that are meant for a
// programmer (Go names) into what a model can do instead.
var scrub = strings.NewReplacer(
	"or delete with taskgraph.Detach()", "or call task_delete with detach: true",
	"use Claim, or set Owner in the same patch", "use task_claim",
)

// goConstant matches the name of a Go limit the store's messages cite,
// " (MaxLabels)", which a model has no use for.
var goConstant = regexp.MustCompile(` \(Max[A-Za-z]*\)`)

// describe words an error for the model acting as me.
func describe(err error, me string) string {
	var ce *taskgraph.CycleError
	if errors.As(err, &ce) && len(ce.Path) >= 2 {
		n := len(ce.Path)
		return fmt.Sprintf("adding %d -> %d would create a cycle %s", ce.Path[n-2], ce.Path[n-1], strings.TrimPrefix(ce.Error(), "dependency cycle "))
	}
	var be *taskgraph.BlockedError
	if errors.As(err, &be) {
		s := fmt.Sprintf("task %d is blocked by %s", be.ID, FormatIDs(be.By))
		if len(be.Missing) > 0 {
			s += fmt.Sprintf(" (tasks %s do not exist)", FormatIDs(be.Missing))
		}
		return s
	}
	var cl *taskgraph.ClaimedError
	if errors.As(err, &cl) && cl.Owner != me {
		return fmt.Sprintf("task %d is claimed by %q, not by you (%q)", cl.ID, cl.Owner, me)
	}
	return goConstant.ReplaceAllString(scrub.Replace(err.Error()), "")
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
// derived and added ones, each only when it says something.
type taskJSON struct {
	TaskJSON
	Priority       *taskgraph.Priority `json:"priority,omitempty"`
	Labels         []string            `json:"labels,omitempty"`
	Key            string              `json:"key,omitempty"`
	Reason         string              `json:"reason,omitempty"`
	Result         string              `json:"result,omitempty"`
	LeaseExpiresAt string              `json:"leaseExpiresAt,omitempty"`
	Metadata       map[string]any      `json:"metadata,omitempty"`
}

func render(t taskgraph.Task) string {
	j := taskJSON{TaskJSON: NewTaskJSON(t), Labels: t.Labels, Key: t.Key, Reason: t.Reason, Result: t.Result, Metadata: t.Metadata}
	if t.Priority != taskgraph.DefaultPriority {
		p := t.Priority
		j.Priority = &p
	}
	if !t.LeaseExpiresAt.IsZero() {
		j.LeaseExpiresAt = t.LeaseExpiresAt.UTC().Format(time.RFC3339)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(j) // cannot fail: metadata came from JSON
	return strings.TrimRight(b.String(), "\n")
}

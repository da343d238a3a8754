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
// other than success, and task_plan a whole plan in one call. When
// task_claim_next claims nothing it says whether the graph is finished
// (all done, or stalled on failed and stranded tasks) or what it waits on;
// task_wait blocks until a task is ready for the agent or the graph is
// finished (at most WithWait), so that an agent knows when to stop and
// when to wait. ClaudeCode
// offers the same graph under Claude Code's own tool names and argument
// shapes (TaskCreate, TaskGet, TaskUpdate, TaskList).
//
// task_get, task_list, task_claim_next and task_wait also return their
// result as JSON (Result.Structured, described by Tool.OutputSchema; MCP's
// structuredContent), each task in it a TaskView.
//
// The tools cost little context: the whole set's definitions, output
// schemas included, are about 1,600 tokens, and task_list shows at most
// DefaultListLimit tasks (the ones in progress and ready first), filtered
// by status, owner, label or readiness, and says how many it left out. The
// token-budget test in agenttools/tokenbudget measures both with a real
// tokenizer.
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
	// Structured is the result as JSON, for tools with an OutputSchema
	// (MCP's structuredContent): an object that matches the schema, its
	// tasks as TaskView. Nil for a failed call and for other tools.
	Structured json.RawMessage
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
	// OutputSchema is the JSON Schema of Result.Structured, or nil for a
	// tool that returns text alone.
	OutputSchema json.RawMessage
	Hints        Hints
	call         func(ctx context.Context, in json.RawMessage) (reply, error)
	owner        string
}

// Call runs the tool on the model's input. Every problem the model can act
// on — a missing task, a blocked claim, a task someone else holds, a cycle,
// malformed input — comes back as a Result with IsError set, its text
// starting with "Error: ", and a nil error. A non-nil error means the
// harness, not the model, must act: ctx is done or the store is closed.
func (t Tool) Call(ctx context.Context, input json.RawMessage) (Result, error) {
	out, err := t.call(ctx, input)
	if err == nil {
		res := Result{Text: out.text}
		if out.data != nil {
			res.Structured, _ = json.Marshal(out.data) // cannot fail: metadata came from JSON
		}
		return res, nil
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
	wait   time.Duration
	via    string // the tasks' CreatedVia
	checks *taskgraph.Checks
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

// WithCreatedVia records via (taskgraph.ViaMCP, say) as how the tasks the
// tools create were created (taskgraph.NewTask.CreatedVia), which the
// graph's approval policy may gate (taskgraph.ApprovalPolicy); default
// taskgraph.ViaTools. No tool offers approval: only people approve.
func WithCreatedVia(via string) Option { return func(c *config) { c.via = via } }

// New returns the task tools over store.
func New(store taskgraph.Store, opts ...Option) *Tools {
	h := newHandlers(store, opts)
	return h.bind(h.taskTools())
}

// newHandlers applies opts to the defaults and binds the result to store.
func newHandlers(store taskgraph.Store, opts []Option) handlers {
	c := config{owner: "agent", wait: DefaultWait, via: taskgraph.ViaTools}
	for _, o := range opts {
		o(&c)
	}
	return handlers{store: store, cfg: c}
}

// bind returns tools as the set of the agent h acts for, whose identity
// their errors name.
func (h handlers) bind(tools []Tool) *Tools {
	for i := range tools {
		tools[i].owner = h.cfg.owner
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

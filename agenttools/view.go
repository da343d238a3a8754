// Structured output: the JSON that task_get, task_list, task_claim_next
// and task_wait return beside their text (Result.Structured, MCP's
// structuredContent), its one task view, and the output schemas.

package agenttools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// TaskView is a task in the tools' structured output: the one shape of a
// task in every Result.Structured. Only id, subject and status are always
// present; every other field only when it says something (an absent
// priority is the default, 2). In task_list the description, blocks,
// notes and metadata are left out, as the text's lines leave them out:
// task_get gives them. Full ids everywhere, as in the text.
type TaskView struct {
	ID      taskgraph.ID     `json:"id"`
	Subject string           `json:"subject"`
	Status  taskgraph.Status `json:"status"`
	// State is where a pending task stands: ready, deferred, blocked or
	// stranded (taskgraph.State; a label's limit is not counted, as in
	// the text). A task that is not pending has none: its status says it.
	State       taskgraph.State     `json:"state,omitempty"`
	Priority    *taskgraph.Priority `json:"priority,omitempty"`
	Labels      []string            `json:"labels,omitempty"`
	Owner       string              `json:"owner,omitempty"`
	BlockedBy   []taskgraph.ID      `json:"blockedBy,omitempty"`
	Blocks      []taskgraph.ID      `json:"blocks,omitempty"`
	Parent      taskgraph.ID        `json:"parent,omitempty"`
	Key         string              `json:"key,omitempty"`
	Description string              `json:"description,omitempty"`
	// Why says, in one line, why a pending task cannot start (task_get).
	Why    string `json:"why,omitempty"`
	Reason string `json:"reason,omitempty"`
	Result string `json:"result,omitempty"`
	// LeaseExpiresAt is when the claim of a task in progress lapses
	// unless renewed, to the second.
	LeaseExpiresAt time.Time `json:"leaseExpiresAt,omitzero"`
	// Notes are the latest few notes, the latest first, each cut as the
	// text cuts it, their times to the second.
	Notes    []taskgraph.Note `json:"notes,omitempty"`
	Metadata map[string]any   `json:"metadata,omitempty"`
}

// viewOf returns the view of t in state (used only if t is pending); full
// adds the blocks, description, notes and metadata.
func viewOf(t taskgraph.Task, state taskgraph.State, full bool) TaskView {
	v := TaskView{ID: t.ID, Subject: t.Subject, Status: t.Status, Labels: t.Labels, Owner: t.Owner,
		BlockedBy: t.BlockedBy, Parent: t.Parent, Key: t.Key, Reason: t.Reason, Result: t.Result}
	if t.Status == taskgraph.Pending {
		v.State = state
	}
	if t.Priority != taskgraph.DefaultPriority {
		p := t.Priority
		v.Priority = &p
	}
	// Times to the second, as the text writes them.
	if !t.LeaseExpiresAt.IsZero() {
		v.LeaseExpiresAt = t.LeaseExpiresAt.UTC().Truncate(time.Second)
	}
	if full {
		v.Blocks, v.Description, v.Metadata = t.Blocks, t.Description, t.Metadata
		v.Notes = latestNotes(&t)
		for i := range v.Notes {
			v.Notes[i].At = v.Notes[i].At.UTC().Truncate(time.Second)
		}
	}
	return v
}

// The outcomes of task_claim_next and task_wait in their structured
// output: what the text's first words say.
const (
	outcomeClaimed  = "claimed"  // task_claim_next claimed task
	outcomeReady    = "ready"    // task_wait: task can be claimed now
	outcomeWait     = "wait"     // nothing for the agent now: others work, or tasks are blocked
	outcomeFinished = "finished" // nothing left to do: stop
	outcomeStalled  = "stalled"  // finished, but tasks failed or are stranded: stop, tell a person
)

// getOutput is task_get's structured output.
type getOutput struct {
	Task TaskView `json:"task"`
}

// listOutput is task_list's: the tasks shown, and how many matched but
// were left out.
type listOutput struct {
	Tasks []TaskView `json:"tasks"`
	More  int        `json:"more,omitempty"`
	// Warning says that some task files could not be read.
	Warning string `json:"warning,omitempty"`
}

// nextOutput is task_claim_next's and task_wait's: the outcome, the task
// claimed or ready, and for a stalled graph the tasks that stall it.
type nextOutput struct {
	Outcome  string         `json:"outcome"`
	Task     *TaskView      `json:"task,omitempty"`
	Failed   []taskgraph.ID `json:"failed,omitempty"`
	Stranded []taskgraph.ID `json:"stranded,omitempty"`
}

// The output schemas: short, since every client puts them in the model's
// context with the tools (agenttools/tokenbudget counts them); TaskView's
// fields are documented in docs/tools.md.
var (
	schemaTaskOut = `{"type":"object"}`
	schemaGetOut  = json.RawMessage(`{"type":"object","properties":{"task":` + schemaTaskOut + `},"required":["task"]}`)
	schemaListOut = json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array","items":` + schemaTaskOut + `},"more":{"type":"integer"}},"required":["tasks"]}`)
	schemaNextOut = json.RawMessage(`{"type":"object","properties":{"outcome":{"enum":["claimed","wait","finished","stalled"]},"task":` + schemaTaskOut + `},"required":["outcome"]}`)
	schemaWaitOut = json.RawMessage(`{"type":"object","properties":{"outcome":{"enum":["ready","wait","finished","stalled"]},"task":` + schemaTaskOut + `},"required":["outcome"]}`)
)

// reply is what a handler returns: the text, and the structured output
// of a tool that has an output schema (nil otherwise).
type reply struct {
	text string
	data any
}

// plain makes a handler of a tool without structured output out of f.
func plain(f func(ctx context.Context, raw json.RawMessage) (string, error)) func(context.Context, json.RawMessage) (reply, error) {
	return func(ctx context.Context, raw json.RawMessage) (reply, error) {
		text, err := f(ctx, raw)
		return reply{text: text}, err
	}
}

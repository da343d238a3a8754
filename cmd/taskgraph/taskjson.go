// The JSON form of a task: what --json and export print, and what import
// reads back.

package main

import (
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/slicesx"
	"github.com/taskgraph-dev/taskgraph/internal/taskview"
)

// cliView is a task as --json and export print it: the fields a model
// sees first, as the reference orders them, then everything else a task
// has. State is where the task stands (taskgraph.State: ready, blocked,
// stranded, in_progress, …) in list, ready, show and board; derived, so
// not exported, and ignored by import.
var cliView = taskview.New(taskview.Format{},
	`id subject description status blockedBy blocks owner state? priority? labels? key? parent?
	reason? result? metadata? createdAt? updatedAt? rev claimedAt? leaseExpiresAt? prevOwner?
	notBefore? due? maxAttempts? attempts? backoff? maxRuntime? progressWindow? notes? history?
	needsApproval? createdVia? links? check? acceptance?`)

// taskOut is a task as --json prints it (cliView), with its state where
// the command knows it.
type taskOut struct {
	taskgraph.Task
	State taskgraph.State
}

// MarshalJSON writes o as cliView, compact: encoding/json indents it as
// the command asks.
func (o taskOut) MarshalJSON() ([]byte, error) { return o.appendIndent(nil, "", "") }

// appendIndent appends o as cliView, indented as an Encoder with
// SetIndent(prefix, indent) writes it.
func (o *taskOut) appendIndent(b []byte, prefix, indent string) ([]byte, error) {
	return cliView.AppendIndent(b, &o.Task, &taskview.Derived{State: o.State}, prefix, indent)
}

// taskJSON is cliView as import reads it back. encoding/json decodes by
// tags, so the names are written here again: TestJSONCarriesEveryField
// sends every field of a task through cliView and back through this, so
// the two cannot drift apart. Blocks is derived from the other tasks'
// edges, and State from the graph: import reads neither.
type taskJSON struct {
	ID             taskgraph.ID           `json:"id"`
	Subject        string                 `json:"subject"`
	Description    string                 `json:"description"`
	Status         taskgraph.Status       `json:"status"`
	BlockedBy      []taskgraph.ID         `json:"blockedBy"`
	Owner          string                 `json:"owner"`
	Priority       *taskgraph.Priority    `json:"priority,omitempty"` // absent: the default
	Labels         []string               `json:"labels,omitempty"`
	Key            string                 `json:"key,omitempty"`
	Parent         taskgraph.ID           `json:"parent,omitempty"`
	Reason         string                 `json:"reason,omitempty"`
	Result         string                 `json:"result,omitempty"`
	Metadata       map[string]any         `json:"metadata,omitempty"`
	CreatedAt      *time.Time             `json:"createdAt,omitempty"`
	UpdatedAt      *time.Time             `json:"updatedAt,omitempty"`
	Rev            int64                  `json:"rev"`
	ClaimedAt      *time.Time             `json:"claimedAt,omitempty"`
	LeaseExpiresAt *time.Time             `json:"leaseExpiresAt,omitempty"`
	PrevOwner      string                 `json:"prevOwner,omitempty"`
	NotBefore      *time.Time             `json:"notBefore,omitempty"`
	Due            *time.Time             `json:"due,omitempty"`
	MaxAttempts    int                    `json:"maxAttempts,omitempty"`
	Attempts       int                    `json:"attempts,omitempty"`
	Backoff        duration               `json:"backoff,omitempty"`
	MaxRuntime     duration               `json:"maxRuntime,omitempty"`
	ProgressWindow duration               `json:"progressWindow,omitempty"`
	Notes          []taskgraph.Note       `json:"notes,omitempty"`
	History        []taskgraph.Transition `json:"history,omitempty"`
	// NeedsApproval, CreatedVia, Links, Check and Acceptance are those of
	// taskgraph.Extra.
	NeedsApproval bool             `json:"needsApproval,omitempty"`
	CreatedVia    string           `json:"createdVia,omitempty"`
	Links         []taskgraph.Link `json:"links,omitempty"`
	Check         string           `json:"check,omitempty"`
	Acceptance    []string         `json:"acceptance,omitempty"`
}

// duration is a length of time as the task file writes it ("1m30s").
type duration time.Duration

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = duration(v)
	return err
}

func toJSON(t taskgraph.Task) taskOut { return taskOut{Task: t} }

// toJSONs is ts as --json prints a list: [] when empty.
func toJSONs(ts []taskgraph.Task) []taskOut { return slicesx.Map(ts, toJSON) }

// toJSONs is ts as --json prints a list, each task with its state in v:
// [] when empty.
func (v view) toJSONs(ts []taskgraph.Task) []taskOut {
	return slicesx.Map(ts, v.toJSON)
}

// toJSON is toJSON with t's state.
func (v view) toJSON(t taskgraph.Task) taskOut {
	return taskOut{Task: t, State: v.state[t.ID]}
}

func fromJSON(j taskJSON) taskgraph.Task {
	t := taskgraph.Task{ID: j.ID, Subject: j.Subject, Description: j.Description, Status: j.Status,
		BlockedBy: j.BlockedBy, Owner: j.Owner, Metadata: j.Metadata, Rev: j.Rev, PrevOwner: j.PrevOwner,
		Priority: taskgraph.DefaultPriority, Labels: j.Labels, Key: j.Key, Parent: j.Parent, Reason: j.Reason, Result: j.Result,
		MaxAttempts: j.MaxAttempts, Attempts: j.Attempts, Backoff: time.Duration(j.Backoff),
		Notes: j.Notes, History: j.History}
	if j.Priority != nil {
		t.Priority = *j.Priority
	}
	for _, p := range []struct {
		from *time.Time
		to   *time.Time
	}{{j.CreatedAt, &t.CreatedAt}, {j.UpdatedAt, &t.UpdatedAt}, {j.ClaimedAt, &t.ClaimedAt}, {j.LeaseExpiresAt, &t.LeaseExpiresAt},
		{j.NotBefore, &t.NotBefore}, {j.Due, &t.Due}} {
		if p.from != nil {
			*p.to = *p.from
		}
	}
	// The rare fields, in one Extra, or none when none is set (a task read
	// back compares equal to the one written).
	if j.MaxRuntime != 0 || j.ProgressWindow != 0 || j.NeedsApproval || j.CreatedVia != "" || len(j.Links) > 0 || j.Check != "" || len(j.Acceptance) > 0 {
		t.Extra = &taskgraph.Extra{MaxRuntime: time.Duration(j.MaxRuntime), ProgressWindow: time.Duration(j.ProgressWindow),
			NeedsApproval: j.NeedsApproval, CreatedVia: j.CreatedVia, Links: j.Links, Check: j.Check, Acceptance: j.Acceptance}
	}
	return t
}

// The JSON form of a task: what --json and export print, and what import
// reads back.

package main

import (
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
	"github.com/taskgraph-dev/taskgraph/internal/slicesx"
)

// taskJSON is a task as --json and export print it: the fields a model sees
// in agenttools, then everything else a task has.
type taskJSON struct {
	agenttools.TaskJSON
	// State is where the task stands (taskgraph.State: ready, blocked,
	// stranded, in_progress, …) in list, ready, show and board; derived,
	// so not exported, and ignored by import.
	State          taskgraph.State        `json:"state,omitempty"`
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

func (d duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

func (d *duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	*d = duration(v)
	return err
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toJSON(t taskgraph.Task) taskJSON {
	j := taskJSON{TaskJSON: agenttools.NewTaskJSON(t), Metadata: t.Metadata,
		Labels: t.Labels, Key: t.Key, Parent: t.Parent, Reason: t.Reason, Result: t.Result,
		CreatedAt: timePtr(t.CreatedAt), UpdatedAt: timePtr(t.UpdatedAt), Rev: t.Rev,
		ClaimedAt: timePtr(t.ClaimedAt), LeaseExpiresAt: timePtr(t.LeaseExpiresAt), PrevOwner: t.PrevOwner,
		NotBefore: timePtr(t.NotBefore), Due: timePtr(t.Due),
		MaxAttempts: t.MaxAttempts, Attempts: t.Attempts, Backoff: duration(t.Backoff),
		Notes: t.Notes, History: t.History}
	if t.Priority != taskgraph.DefaultPriority {
		p := t.Priority
		j.Priority = &p
	}
	if x := t.Extra; x != nil {
		j.MaxRuntime, j.ProgressWindow = duration(x.MaxRuntime), duration(x.ProgressWindow)
		j.NeedsApproval, j.CreatedVia, j.Links = x.NeedsApproval, x.CreatedVia, x.Links
		j.Check, j.Acceptance = x.Check, x.Acceptance
	}
	return j
}

// toJSONs is ts as --json prints a list: [] when empty.
func toJSONs(ts []taskgraph.Task) []taskJSON { return slicesx.Map(ts, toJSON) }

// toJSONs is ts as --json prints a list, each task with its state in v:
// [] when empty.
func (v view) toJSONs(ts []taskgraph.Task) []taskJSON {
	return slicesx.Map(ts, v.toJSON)
}

// toJSON is toJSON with t's state.
func (v view) toJSON(t taskgraph.Task) taskJSON {
	j := toJSON(t)
	j.State = v.state[t.ID]
	return j
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

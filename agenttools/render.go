// How a task is written for the model: its JSON and the id lists.

package agenttools

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

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

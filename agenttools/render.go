// How a task is written for the model: its JSON and the id lists.

package agenttools

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
	Parent         taskgraph.ID        `json:"parent,omitempty"`
	Reason         string              `json:"reason,omitempty"`
	Result         string              `json:"result,omitempty"`
	LeaseExpiresAt string              `json:"leaseExpiresAt,omitempty"`
	Metadata       map[string]any      `json:"metadata,omitempty"`
	// Links are the task's commits, pull requests, files and URLs.
	Links []string `json:"links,omitempty"`
	// AwaitingApproval says that no one can claim the task until a
	// person approves it.
	AwaitingApproval bool `json:"awaitingApproval,omitempty"`
	// Notes are the latest few notes, the latest first: what the agents
	// before tried (see renderedNotes).
	Notes []noteJSON `json:"notes,omitempty"`
}

// noteJSON is a note as a model sees it.
type noteJSON struct {
	Author string `json:"author"`
	At     string `json:"at"`
	Text   string `json:"text"`
}

// The budget of a task's notes in the tools' replies: the latest
// maxNotesShown, each cut at maxNoteShown bytes (at most about 400
// tokens in all, whatever the notes).
const (
	maxNotesShown = 3
	maxNoteShown  = 500
)

// latestNotes returns the latest notes of t within the budget, the latest
// first, each cut at maxNoteShown bytes.
func latestNotes(t taskgraph.Task) []taskgraph.Note {
	var out []taskgraph.Note
	for i := len(t.Notes) - 1; i >= 0 && len(out) < maxNotesShown; i-- {
		n := t.Notes[i]
		if len(n.Text) > maxNoteShown {
			cut := maxNoteShown
			for cut > 0 && !utf8.RuneStart(n.Text[cut]) {
				cut--
			}
			n.Text = n.Text[:cut] + "…"
		}
		out = append(out, n)
	}
	return out
}

// renderedNotes returns latestNotes as the text writes them.
func renderedNotes(t taskgraph.Task) []noteJSON {
	var out []noteJSON
	for _, n := range latestNotes(t) {
		out = append(out, noteJSON{Author: n.Author, At: n.At.UTC().Format(time.RFC3339), Text: n.Text})
	}
	return out
}

func render(t taskgraph.Task) string {
	j := taskJSON{TaskJSON: NewTaskJSON(t), Labels: t.Labels, Key: t.Key, Parent: t.Parent, Reason: t.Reason, Result: t.Result, Metadata: t.Metadata,
		Notes: renderedNotes(t)}
	if t.Priority != taskgraph.DefaultPriority {
		p := t.Priority
		j.Priority = &p
	}
	if !t.LeaseExpiresAt.IsZero() {
		j.LeaseExpiresAt = t.LeaseExpiresAt.UTC().Format(time.RFC3339)
	}
	if t.Extra != nil {
		for _, l := range t.Extra.Links {
			j.Links = append(j.Links, l.Ref)
		}
	}
	j.AwaitingApproval = t.AwaitingApproval()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(j) // cannot fail: metadata came from JSON
	return strings.TrimRight(b.String(), "\n")
}

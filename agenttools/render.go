// How a task is written for the model: its text (a view of the fields
// internal/taskview lists) and the id lists.

package agenttools

import (
	"unicode/utf8"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/taskview"
)

// FormatIDs writes a list of task ids the one way the tools and the
// taskgraph command write every list: "[1, 2, 3]", as the reference's
// list does.
func FormatIDs(ids []taskgraph.ID) string { return taskview.FormatIDs(ids) }

// TaskJSON is the head of a task as JSON: the reference's fields, in its
// order, with blockedBy and blocks never null. The tools' task text and
// the taskgraph command's --json start with these fields.
//
// Deprecated: the tools and the taskgraph command no longer use it: a
// task's outward fields are listed once, inside this module. It will be
// removed in the next minor version.
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
//
// Deprecated: see TaskJSON.
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

// textView is a task as the tools' text writes it: the reference's
// fields, in its order, then the derived and added ones,
// each only when it says something; times to the second, links by their
// ref, and the latest few notes, the latest first (what the agents
// before tried: see latestNotes), author first.
var textView = taskview.New(taskview.Format{
	Seconds:     true,
	Notes:       latestNotes,
	AuthorFirst: true,
	LinkRefs:    true,
}, `id subject description status blockedBy blocks owner priority? labels? key? parent?
	reason? result? leaseExpiresAt? metadata? links? awaitingApproval? notes?`)

// The budget of a task's notes in the tools' replies: the latest
// maxNotesShown, each cut at maxNoteShown bytes (at most about 400
// tokens in all, whatever the notes).
const (
	maxNotesShown = 3
	maxNoteShown  = 500
)

// latestNotes returns the latest notes of t within the budget, the latest
// first, each cut at maxNoteShown bytes.
func latestNotes(t *taskgraph.Task) []taskgraph.Note {
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

func render(t taskgraph.Task) string {
	b, _ := textView.AppendIndent(nil, &t, nil, "", "  ") // cannot fail: metadata came from JSON
	return string(b)
}

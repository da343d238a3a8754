// Notes and history: what the agents before you tried, and every
// transition of a task with who made it and when. Both live in the task's
// own file (optional fields the reference's readers ignore), so a write of
// one task stays a write of one file, in every store.

package taskgraph

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
	"unicode/utf8"
)

// Note is a remark an agent left on a task for whoever comes next: what it
// tried, what it found, where it stopped.
type Note struct {
	At     time.Time `json:"at"`
	Author string    `json:"author"`
	Text   string    `json:"text"`
}

// Transition is one entry of a task's history.
type Transition struct {
	At    time.Time    `json:"at"`
	Event HistoryEvent `json:"event"`
	// By is who made the transition: the owner who claimed, released,
	// failed or completed, the previous owner for a lapse, a note's
	// author; "" when a write does not say (Cancel, Reopen, an edit).
	By string `json:"by,omitempty"`
	// Detail is the reason of a failure or cancellation, the result of a
	// completion, the lease of a claim, the fields an edit changed; for
	// the summary entry, how many entries it stands for.
	Detail string `json:"detail,omitempty"`
	// Count is, on the summary entry only, how many older entries it
	// stands for.
	Count int `json:"count,omitempty"`
}

// HistoryEvent names a transition in a task's history.
type HistoryEvent string

// The transitions a history records. Lease renewals are not recorded.
const (
	// HistoryCreated is never stored: a task's creation is its CreatedAt.
	// Readers that list a history (taskgraph history) put it first.
	HistoryCreated   HistoryEvent = "created"
	HistoryClaimed   HistoryEvent = "claimed"
	HistoryLapsed    HistoryEvent = "lapsed" // recorded by the claim that took the task over
	HistoryReleased  HistoryEvent = "released"
	HistoryFailed    HistoryEvent = "failed"
	HistoryCompleted HistoryEvent = "completed"
	HistoryCancelled HistoryEvent = "cancelled"
	HistoryReopened  HistoryEvent = "reopened"
	HistoryEdited    HistoryEvent = "edited"
	HistoryNoted     HistoryEvent = "noted"
	// HistoryApproved is an approval (Approver), by whom.
	HistoryApproved HistoryEvent = "approved"
	// HistoryRejected is a rejection (Approver), by whom, with its reason:
	// it cancelled the task.
	HistoryRejected HistoryEvent = "rejected"
	// HistoryEarlier is the first entry of a history that outgrew
	// MaxHistory, standing for Count older entries.
	HistoryEarlier HistoryEvent = "earlier"
)

// Bounds of notes and history, so that a task's file stays small whatever
// happens to it.
const (
	// MaxNotes is how many notes a task keeps: a new note past it drops
	// the oldest (the history still records that it was written).
	MaxNotes = 20
	// MaxNoteText is the longest note, in bytes.
	MaxNoteText = 2000
	// MaxAuthor is the longest name of a note's author, in bytes: the
	// history records it again.
	MaxAuthor = 256
	// MaxHistory is how many entries a task's history keeps; older ones
	// are summarised in one HistoryEarlier entry.
	MaxHistory = 50
	// maxDetail is the longest detail a history entry keeps, in bytes.
	maxDetail = 500
)

// Noter is implemented by stores that keep notes on tasks (all of this
// module's stores). It is an interface of its own so that Store
// implementations written before notes existed still compile.
type Noter interface {
	// Note appends a note by author to task id, whatever its status, and
	// returns the task. author and text must not be empty.
	Note(ctx context.Context, id ID, author, text string) (Task, error)
}

// NoteArgs validates the arguments of Note, before any task is read.
func (Rulebook) NoteArgs(author, text string) error {
	switch {
	case author == "":
		return &InvalidError{Field: "author", Reason: "must not be empty: say who writes the note"}
	case text == "":
		return &InvalidError{Field: "text", Reason: "must not be empty"}
	case len(text) > MaxNoteText:
		return &InvalidError{Field: "text", Reason: fmt.Sprintf("is %d bytes, over the %d-byte limit (MaxNoteText): keep a note short, and long content outside the graph", len(text), MaxNoteText)}
	}
	if err := texts("author", author, "text", text); err != nil {
		return err
	}
	return nameLength("author", author, MaxAuthor, "MaxAuthor")
}

// Note appends a note by author to t, dropping the oldest past MaxNotes.
func (Rulebook) Note(t *Task, author, text string, now time.Time) error {
	if err := Rules.NoteArgs(author, text); err != nil {
		return err
	}
	advance(t, now)
	notes := append(slices.Clip(t.Notes), Note{At: now, Author: author, Text: text})
	if len(notes) > MaxNotes {
		notes = notes[len(notes)-MaxNotes:]
	}
	t.Notes = notes
	record(t, now, HistoryNoted, author, "")
	return nil
}

// LastNote returns the latest note on t, if any: what whoever takes a
// task over should read first.
func (t Task) LastNote() (Note, bool) {
	if len(t.Notes) == 0 {
		return Note{}, false
	}
	return t.Notes[len(t.Notes)-1], true
}

// record appends a transition to t's history (see appendTransition).
func record(t *Task, now time.Time, ev HistoryEvent, by, detail string) {
	appendTransition(t, Transition{At: now, Event: ev, By: by, Detail: clipDetail(detail)})
}

// clipDetail cuts detail to maxDetail bytes, at a character's start, marked
// with an ellipsis: the full text is the task's reason or result.
func clipDetail(detail string) string {
	if len(detail) <= maxDetail {
		return detail
	}
	cut := maxDetail
	for cut > 0 && !utf8.RuneStart(detail[cut]) {
		cut--
	}
	return detail[:cut] + "…"
}

// appendTransition appends e to t's history, summarising the oldest
// entries past MaxHistory. It never writes into the array t shared with
// the version it was copied from.
func appendTransition(t *Task, e Transition) {
	h := append(slices.Clip(t.History), e)
	if len(h) > MaxHistory {
		h = summarise(h, len(h)-MaxHistory)
	}
	t.History = h
}

// summarise folds the first n+1 entries of h (the first possibly an
// earlier summary) into one HistoryEarlier entry.
func summarise(h []Transition, n int) []Transition {
	total := 0
	for _, e := range h[:n+1] {
		c := 1
		if e.Event == HistoryEarlier {
			c = e.Count
		}
		total = min(total, math.MaxInt-c) + c // a count written by hand does not wrap
	}
	sum := Transition{At: h[n].At, Event: HistoryEarlier, Detail: fmt.Sprintf("%d earlier transitions", total), Count: total}
	return append([]Transition{sum}, h[n+1:]...)
}

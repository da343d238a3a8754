// Bounds on read: what a stored task may hold, checked on every task a
// store reads from outside its own writes — a file written by hand or by
// git, a row written by hand — as the write paths check what they store.

package taskgraph

import "fmt"

// maxBy is the longest name a history entry records as who made its
// transition: an owner, or a note's author.
const maxBy = max(MaxOwner, MaxAuthor)

// Bounded validates what the write paths bound in a task as stored, and
// returns an *InvalidError naming the first value out of range: ids
// (its own, its parent's, its blockers') from 1 to MaxID, MaxAttempts
// and Attempts from 0 to MaxAttemptsLimit, a backoff from 0 to
// MaxBackoff, an owner and a previous owner of at most MaxOwner bytes, a
// key of at most MaxKey, at most MaxNotes notes, each by an author of at
// most MaxAuthor bytes and at most MaxNoteText long, at most MaxHistory
// entries of history, each by at most MaxOwner or MaxAuthor bytes, with
// a count that is not negative, a MaxRuntime and a ProgressWindow from 0
// to MaxLiveness, a CreatedVia as NewTask.CreatedVia allows, at most MaxLinks
// links, each once and at most MaxLinkRef bytes, a check named as
// Rules.CheckArgs allows, at most MaxAcceptance acceptance items of at most
// MaxAcceptanceItem bytes.
//
// Within them no count overflows, RetryDelay and the history's summary
// stay cheap, and no write of the task grows it by more than its own
// arguments (a name too long to fit a task twice would otherwise make
// every write of it too big). The rest — subject, description, reason,
// result, metadata, labels, a history entry's detail — is bounded by the
// size of a task file alone, on read as on write (a merge may unite two
// sides' labels past MaxLabels, and older versions kept a detail whole).
//
// Load runs it on every task it loads; the task-file codec on every file
// it reads, which an out-of-range value makes a *CorruptError (the file is
// never rewritten, as any undecodable file); pgstore's CHECK constraints
// hold its rows to the same bounds. Nothing is clamped: a store that
// clamped would rewrite, at its next write of the task, what a person or
// git wrote, without a word.
func (Rulebook) Bounded(t *Task) error {
	switch {
	case t.ID <= 0 || t.ID > MaxID:
		return &InvalidError{Field: "id", Reason: fmt.Sprintf("%d is not between 1 and %d (MaxID)", t.ID, MaxID)}
	case t.Parent < 0 || t.Parent > MaxID:
		return &InvalidError{Field: "parent", Reason: fmt.Sprintf("%d is not between 0 (none) and %d (MaxID)", t.Parent, MaxID)}
	case t.Attempts < 0 || t.Attempts > MaxAttemptsLimit:
		return &InvalidError{Field: "attempts", Reason: fmt.Sprintf("%d is not between 0 and %d (MaxAttemptsLimit)", t.Attempts, MaxAttemptsLimit)}
	case len(t.Key) > MaxKey:
		return &InvalidError{Field: "key", Reason: fmt.Sprintf("is %d bytes long, over %d (MaxKey)", len(t.Key), MaxKey)}
	case len(t.Notes) > MaxNotes:
		return &InvalidError{Field: "notes", Reason: fmt.Sprintf("%d notes, over %d (MaxNotes)", len(t.Notes), MaxNotes)}
	case len(t.History) > MaxHistory:
		return &InvalidError{Field: "history", Reason: fmt.Sprintf("%d entries, over %d (MaxHistory)", len(t.History), MaxHistory)}
	}
	for i, b := range t.BlockedBy {
		if b <= 0 || b > MaxID {
			return &InvalidError{Field: fmt.Sprintf("blockedBy[%d]", i), Reason: fmt.Sprintf("%d is not between 1 and %d (MaxID)", b, MaxID)}
		}
	}
	if err := Rules.Schedule("", t.MaxAttempts, t.Backoff); err != nil {
		return err
	}
	if x := t.extra(); x.MaxRuntime != 0 || x.ProgressWindow != 0 {
		if err := Rules.Liveness("", x.MaxRuntime, x.ProgressWindow); err != nil {
			return err
		}
	}
	if err := viaArg("createdVia", t.extra().CreatedVia); err != nil {
		return err
	}
	if err := boundedLinks(t.extra().Links); err != nil {
		return err
	}
	if x := t.extra(); x.Check != "" || len(x.Acceptance) > 0 {
		if err := Rules.CheckArgs("", x.Check, x.Acceptance); err != nil {
			return err
		}
	}
	if err := nameLength("owner", t.Owner, MaxOwner, "MaxOwner"); err != nil {
		return err
	}
	if err := nameLength("prevOwner", t.PrevOwner, MaxOwner, "MaxOwner"); err != nil {
		return err
	}
	for i, n := range t.Notes {
		if err := nameLength(fmt.Sprintf("notes[%d].author", i), n.Author, MaxAuthor, "MaxAuthor"); err != nil {
			return err
		}
		if len(n.Text) > MaxNoteText {
			return &InvalidError{Field: fmt.Sprintf("notes[%d].text", i), Reason: fmt.Sprintf("is %d bytes, over the %d-byte limit (MaxNoteText)", len(n.Text), MaxNoteText)}
		}
	}
	for i, h := range t.History {
		if len(h.By) > maxBy {
			return &InvalidError{Field: fmt.Sprintf("history[%d].by", i), Reason: fmt.Sprintf("is %d bytes, over the %d-byte limit of an owner's or an author's name (MaxOwner, MaxAuthor)", len(h.By), maxBy)}
		}
		if h.Count < 0 {
			return &InvalidError{Field: fmt.Sprintf("history[%d].count", i), Reason: fmt.Sprintf("%d is negative", h.Count)}
		}
	}
	return nil
}

// nameLength refuses a name (an owner, an author) in field longer than
// limit bytes, the constant named limitName.
func nameLength(field, name string, limit int, limitName string) error {
	if len(name) > limit {
		return &InvalidError{Field: field, Reason: fmt.Sprintf("is %d bytes, over the %d-byte limit (%s): use a shorter name", len(name), limit, limitName)}
	}
	return nil
}

// Links: what a task produced or refers to — a commit, a pull request, a
// file, a URL — kept on the task as a set (Extra.Links), added by an
// update (Patch.AddLinks). Adding one is progress, as a note is.

package taskgraph

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Bounds of a task's links.
const (
	// MaxLinks is how many links a task keeps.
	MaxLinks = 20
	// MaxLinkRef is the longest link, in bytes.
	MaxLinkRef = 500
)

// Link is a reference a task carries: a commit, a pull request, a file or
// a URL, as text, and when it was added.
type Link struct {
	Ref string    `json:"ref"`
	At  time.Time `json:"at"`
}

// linkArgs validates the links to add: each one line of text, not
// empty, at most MaxLinkRef bytes; at most MaxLinks of them.
func linkArgs(field string, refs []string) error {
	if len(refs) > MaxLinks {
		return &InvalidError{Field: field, Reason: fmt.Sprintf("has %d links, over the limit of %d (MaxLinks)", len(refs), MaxLinks)}
	}
	for _, r := range refs {
		if err := linkRef(field, r); err != nil {
			return err
		}
	}
	return nil
}

// linkRef validates one link.
func linkRef(field, r string) error {
	switch {
	case strings.TrimSpace(r) == "":
		return &InvalidError{Field: field, Reason: "holds an empty link: give a commit, a pull request, a file or a URL"}
	case len(r) > MaxLinkRef:
		return &InvalidError{Field: field, Reason: fmt.Sprintf("holds a link of %d bytes, over the %d-byte limit (MaxLinkRef)", len(r), MaxLinkRef)}
	case strings.ContainsAny(r, "\n\r"):
		return &InvalidError{Field: field, Reason: fmt.Sprintf("holds a link of several lines (%.40q): a link is one line", r)}
	}
	return Rules.Text(field, r)
}

// addLinks adds to t the refs it does not carry yet, at now; a task past
// MaxLinks is refused (*InvalidError). It reports whether any was new.
func addLinks(t *Task, refs []string, now time.Time) (bool, error) {
	links := t.extra().Links
	var added []Link
	for _, r := range refs {
		if !slices.ContainsFunc(links, func(l Link) bool { return l.Ref == r }) && !slices.ContainsFunc(added, func(l Link) bool { return l.Ref == r }) {
			added = append(added, Link{Ref: r, At: now})
		}
	}
	if len(added) == 0 {
		return false, nil
	}
	if len(links)+len(added) > MaxLinks {
		return false, &InvalidError{Field: "addLinks", Reason: fmt.Sprintf("task %d has %d links: %d more would pass the limit of %d (MaxLinks)", t.ID, len(links), len(added), MaxLinks)}
	}
	x := t.editExtra()
	x.Links = append(slices.Clip(links), added...)
	return true, nil
}

// lastLink returns when the newest link of t was added; zero if none.
func (t *Task) lastLink() time.Time {
	var last time.Time
	for _, l := range t.extra().Links {
		if l.At.After(last) {
			last = l.At
		}
	}
	return last
}

// boundedLinks checks the links of a task as read: as linkArgs, each
// once.
func boundedLinks(links []Link) error {
	if len(links) > MaxLinks {
		return &InvalidError{Field: "links", Reason: fmt.Sprintf("has %d links, over the limit of %d (MaxLinks)", len(links), MaxLinks)}
	}
	seen := make(map[string]bool, len(links))
	for _, l := range links {
		if err := linkRef("links", l.Ref); err != nil {
			return err
		}
		if seen[l.Ref] {
			return &InvalidError{Field: "links", Reason: fmt.Sprintf("holds %q twice: links are a set", l.Ref)}
		}
		seen[l.Ref] = true
	}
	return nil
}

// The edit command: a task opened in $EDITOR as JSON, and the edit saved
// as one update that the store checks like any other, or refused and kept.

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"

	"github.com/taskgraph-dev/taskgraph"
)

// editable is the part of a task a person edits.
type editable struct {
	Subject     string           `json:"subject"`
	Description string           `json:"description"`
	Status      taskgraph.Status `json:"status"`
	Owner       string           `json:"owner"`
	BlockedBy   []taskgraph.ID   `json:"blockedBy"`
	Metadata    map[string]any   `json:"metadata"`
	Parent      taskgraph.ID     `json:"parent,omitempty"` // 0: none (add the line to give it one)
	// Check names the check that must pass before the task completes ("":
	// none; add the line to give it one), Acceptance what it must achieve.
	Check      string   `json:"check,omitempty"`
	Acceptance []string `json:"acceptance,omitempty"`
}

func editableOf(t taskgraph.Task) editable {
	ed := editable{Subject: t.Subject, Description: t.Description, Status: t.Status, Owner: t.Owner,
		BlockedBy: t.BlockedBy, Metadata: t.Metadata, Parent: t.Parent}
	if t.Extra != nil {
		ed.Check, ed.Acceptance = t.Extra.Check, t.Extra.Acceptance
	}
	return normal(ed)
}

// normal makes the empty lists and maps of ed compare equal however they
// were written.
func normal(ed editable) editable {
	if ed.BlockedBy == nil {
		ed.BlockedBy = []taskgraph.ID{}
	}
	if len(ed.Metadata) == 0 {
		ed.Metadata = map[string]any{}
	}
	if len(ed.Acceptance) == 0 {
		ed.Acceptance = nil
	}
	return ed
}

// flagsEdit opens the task in $EDITOR and applies the edit as one Update,
// conditional on the task not having changed meanwhile. The store checks it
// like any update (status rules, missing blockers, cycles). A refused edit
// changes nothing, and the text written is kept in a file the message
// names; an edit that changes nothing writes nothing.
func flagsEdit(fs *flag.FlagSet) func(e *env) error {
	from := fs.String("from", "", "start from the text in `FILE` (such as a refused edit that was kept) instead of the task as it is")
	force := fs.Bool("force", false, "save a change to the status or owner of a task someone else holds")
	return func(e *env) error {
		return e.withTask(func(s store, t taskgraph.Task) error {
			before := editableOf(t)
			text, _ := json.MarshalIndent(before, "", "  ")
			text = append(text, '\n')
			if *from != "" {
				var err error
				if text, err = os.ReadFile(*from); err != nil {
					return err
				}
			}
			path, err := editFile(t.ID, text)
			if err != nil {
				return err
			}
			keep := false
			defer func() {
				if !keep {
					os.Remove(path)
				}
			}()
			refused := func(err error) error {
				keep = true
				return fmt.Errorf("edit refused, nothing changed: %w\nYour edit is kept in %s; to try again from it: taskgraph edit %d --from %s", err, path, t.ID, path)
			}
			data, err := e.runEditor(path)
			if err != nil {
				return err
			}
			after, err := parseEdit(data)
			if err != nil {
				return refused(err)
			}
			if reflect.DeepEqual(before, after) {
				return e.printChanged(t, nil, "No changes to %s\n", idText(t.ID))
			}
			p := patchOf(t.Rev, before, after)
			if p.Status != nil || p.Owner != nil {
				if err := e.refuseHeld(t, *force, "saves the edit"); err != nil {
					return refused(err)
				}
			}
			updated, err := s.Update(e.ctx, t.ID, p)
			if err != nil {
				return refused(err)
			}
			return e.printChanged(updated, nil, "Saved %s (rev %d)\n", idText(updated.ID), updated.Rev)
		})
	}
}

// editFile writes text to a new temporary file for editing task id, and
// returns its name.
func editFile(id taskgraph.ID, text []byte) (string, error) {
	f, err := os.CreateTemp("", fmt.Sprintf("taskgraph-edit-%d-*.json", id))
	if err != nil {
		return "", err
	}
	_, err = f.Write(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// runEditor runs $VISUAL, else $EDITOR, else vi on the file at path, on
// this terminal, and returns what it left there.
func (e *env) runEditor(path string) ([]byte, error) {
	editor := envOr("VISUAL", envOr("EDITOR", "vi"))
	cmd := exec.CommandContext(e.ctx, "sh", "-c", editor+` "$1"`, "sh", path)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, e.stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing changed", editor, err)
	}
	return os.ReadFile(path)
}

// parseEdit reads an edited task: the fields of editable and no others.
func parseEdit(data []byte) (editable, error) {
	var after editable
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&after); err != nil {
		return editable{}, fmt.Errorf("the edited task is not valid JSON with the fields subject, description, status, owner, blockedBy, metadata and parent (%v)", err)
	}
	return normal(after), nil
}

// patchOf returns the update that turns before into after, on the task at
// revision rev: only the fields that changed, edges added and removed, and
// metadata keys set or (absent from after) deleted.
func patchOf(rev int64, before, after editable) taskgraph.Patch {
	p := taskgraph.Patch{IfRev: rev}
	if after.Subject != before.Subject {
		p.Subject = &after.Subject
	}
	if after.Description != before.Description {
		p.Description = &after.Description
	}
	if after.Status != before.Status {
		p.Status = &after.Status
	}
	if after.Owner != before.Owner {
		p.Owner = &after.Owner
	}
	for _, b := range after.BlockedBy {
		if !slices.Contains(before.BlockedBy, b) {
			p.AddBlockedBy = append(p.AddBlockedBy, b)
		}
	}
	for _, b := range before.BlockedBy {
		if !slices.Contains(after.BlockedBy, b) {
			p.RemoveBlockedBy = append(p.RemoveBlockedBy, b)
		}
	}
	if after.Parent != before.Parent {
		p.Parent = &after.Parent
	}
	if after.Check != before.Check {
		p.Check = &after.Check
	}
	if !slices.Equal(after.Acceptance, before.Acceptance) {
		acceptance := after.Acceptance
		if acceptance == nil {
			acceptance = []string{}
		}
		p.Acceptance = &acceptance
	}
	if !reflect.DeepEqual(before.Metadata, after.Metadata) {
		p.Metadata = map[string]any{}
		for k, v := range after.Metadata {
			p.Metadata[k] = v
		}
		for k := range before.Metadata {
			if _, ok := after.Metadata[k]; !ok {
				p.Metadata[k] = nil
			}
		}
	}
	return p
}

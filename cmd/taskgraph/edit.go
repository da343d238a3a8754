package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/taskgraph/taskgraph"
)

// editable is the part of a task a person edits.
type editable struct {
	Subject     string           `json:"subject"`
	Description string           `json:"description"`
	Status      taskgraph.Status `json:"status"`
	Owner       string           `json:"owner"`
	BlockedBy   []taskgraph.ID   `json:"blockedBy"`
	Metadata    map[string]any   `json:"metadata"`
}

// cmdEdit opens the task in $EDITOR and applies the edit as one Update,
// conditional on the task not having changed meanwhile. The store checks it
// like any update (status rules, missing blockers, cycles); a refused edit
// changes nothing.
func cmdEdit(e *env) error {
	return e.withTask(func(s store, t taskgraph.Task) error {
		before := editable{t.Subject, t.Description, t.Status, t.Owner, t.BlockedBy, t.Metadata}
		if before.BlockedBy == nil {
			before.BlockedBy = []taskgraph.ID{}
		}
		data, _ := json.MarshalIndent(before, "", "  ")
		tmp, err := os.MkdirTemp("", "taskgraph-edit-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		path := filepath.Join(tmp, fmt.Sprintf("task_%d.json", t.ID))
		if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
			return err
		}
		editor := envOr("VISUAL", envOr("EDITOR", "vi"))
		cmd := exec.CommandContext(e.ctx, "sh", "-c", editor+` "$1"`, "sh", path)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, e.stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w; nothing changed", editor, err)
		}
		data, err = os.ReadFile(path)
		if err != nil {
			return err
		}
		var after editable
		if err := json.Unmarshal(data, &after); err != nil {
			return fmt.Errorf("the edited task is not valid JSON (%v); nothing changed", err)
		}
		p := taskgraph.Patch{IfRev: t.Rev}
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
		p.Metadata = map[string]any{}
		for k, v := range after.Metadata {
			p.Metadata[k] = v
		}
		for k := range before.Metadata {
			if _, ok := after.Metadata[k]; !ok {
				p.Metadata[k] = nil
			}
		}
		updated, err := s.Update(e.ctx, t.ID, p)
		if err != nil {
			return fmt.Errorf("edit refused, nothing changed: %w", err)
		}
		return e.printChanged(updated, nil, "Saved #%d (rev %d)\n", updated.ID, updated.Rev)
	})
}

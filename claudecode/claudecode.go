// Package claudecode reads a Claude Code task list — the directory
// ~/.claude/tasks/<list>/ with one <n>.json a task — into taskgraph tasks,
// keeping ids and edges.
//
// Claude Code stores ids as strings ("3") and keeps both directions of an
// edge (blocks and blockedBy); taskgraph keeps integer ids and derives
// blocks, so an edge named on either side becomes one blockedBy entry.
// Fields taskgraph has no place for (activeForm and anything unknown) are
// kept under the task's metadata with their own names.
package claudecode

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// Metadata keys this package writes besides the unknown fields themselves.
const (
	// KeyID holds the original id when it was not a positive integer.
	KeyID = "claudeCodeId"
	// KeyStatus holds a status taskgraph does not know (read as pending).
	KeyStatus = "claudeCodeStatus"
	// KeyMissing lists blockers that named no task in the list; the edges
	// are dropped, since taskgraph refuses edges to missing tasks.
	KeyMissing = "claudeCodeMissingBlockers"
)

type file struct {
	ID          string         `json:"id"`
	Subject     string         `json:"subject"`
	Description string         `json:"description"`
	Status      string         `json:"status"`
	Owner       string         `json:"owner"`
	Blocks      []string       `json:"blocks"`
	BlockedBy   []string       `json:"blockedBy"`
	Metadata    map[string]any `json:"metadata"`
}

var known = map[string]bool{"id": true, "subject": true, "description": true, "status": true, "owner": true, "blocks": true, "blockedBy": true, "metadata": true}

// Read parses the task list in dir. Numeric ids are kept; other ids get
// new ids above the highest numeric one, in file-name order.
func Read(dir string) ([]taskgraph.Task, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("claudecode: %w", err)
	}
	var files []file
	var extras []map[string]any
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("claudecode: %w", err)
		}
		var f file
		var raw map[string]any
		if err := json.Unmarshal(data, &f); err != nil {
			return nil, fmt.Errorf("claudecode: %s: %w", path, err)
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			return nil, fmt.Errorf("claudecode: %s: %w", path, err)
		}
		if f.ID == "" {
			f.ID = strings.TrimSuffix(e.Name(), ".json")
		}
		if f.Subject == "" {
			return nil, fmt.Errorf("claudecode: %s: no subject", path)
		}
		extra := map[string]any{}
		for k, v := range raw {
			if !known[k] {
				extra[k] = v
			}
		}
		files = append(files, f)
		extras = append(extras, extra)
	}

	// Ids: numeric ones as they are, the rest after the highest.
	ids := map[string]taskgraph.ID{}
	var top taskgraph.ID
	for _, f := range files {
		if n, err := strconv.ParseInt(f.ID, 10, 64); err == nil && n > 0 {
			if _, dup := ids[f.ID]; dup {
				return nil, fmt.Errorf("claudecode: id %q appears twice", f.ID)
			}
			ids[f.ID] = taskgraph.ID(n)
			top = max(top, taskgraph.ID(n))
		}
	}
	for _, f := range files {
		if _, ok := ids[f.ID]; !ok {
			top++
			ids[f.ID] = top
		}
	}

	blockedBy := map[taskgraph.ID][]taskgraph.ID{}
	missing := map[taskgraph.ID][]string{}
	edge := func(blocker string, task taskgraph.ID) {
		b, ok := ids[blocker]
		switch {
		case !ok:
			if !slices.Contains(missing[task], blocker) {
				missing[task] = append(missing[task], blocker)
			}
		case b != task && !slices.Contains(blockedBy[task], b):
			blockedBy[task] = append(blockedBy[task], b)
		}
	}
	for _, f := range files {
		id := ids[f.ID]
		for _, b := range f.BlockedBy {
			edge(b, id)
		}
		for _, d := range f.Blocks {
			if did, ok := ids[d]; ok {
				edge(f.ID, did)
			}
		}
	}

	tasks := make([]taskgraph.Task, 0, len(files))
	for i, f := range files {
		id := ids[f.ID]
		meta := f.Metadata
		if meta == nil {
			meta = map[string]any{}
		}
		for k, v := range extras[i] {
			meta[k] = v
		}
		status := taskgraph.Status(f.Status)
		if !status.Valid() {
			meta[KeyStatus] = f.Status
			status = taskgraph.Pending
		}
		if strconv.FormatInt(int64(id), 10) != f.ID {
			meta[KeyID] = f.ID
		}
		if m := missing[id]; len(m) > 0 {
			meta[KeyMissing] = m
		}
		if len(meta) == 0 {
			meta = nil
		}
		tasks = append(tasks, taskgraph.Task{
			ID: id, Subject: f.Subject, Description: f.Description, Status: status,
			Owner: f.Owner, BlockedBy: blockedBy[id], Metadata: meta, Priority: taskgraph.DefaultPriority,
		})
	}
	slices.SortFunc(tasks, func(a, b taskgraph.Task) int { return int(a.ID - b.ID) })
	return tasks, nil
}

// Import reads the task list in dir and loads it into dst, all or nothing.
func Import(ctx context.Context, dst taskgraph.Loader, dir string) ([]taskgraph.Task, error) {
	tasks, err := Read(dir)
	if err != nil {
		return nil, err
	}
	if err := dst.Load(ctx, tasks); err != nil {
		return nil, fmt.Errorf("claudecode: import %s: %w", dir, err)
	}
	return tasks, nil
}

// The import command: tasks loaded from an export or a Claude Code task
// list, with their ids kept or, with --renumber, given fresh ones.

package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/claudecode"
)

func flagsImport(fs *flag.FlagSet) func(e *env) error {
	claude := fs.String("claude-code", "", "a Claude Code task list `DIR`, e.g. ~/.claude/tasks/<list>")
	renumber := fs.Bool("renumber", false, "give the tasks fresh ids after the graph's own, their edges following, instead of keeping theirs")
	return func(e *env) error {
		var read func() ([]taskgraph.Task, error)
		switch {
		case *claude != "" && len(e.args) == 0:
			read = func() ([]taskgraph.Task, error) { return claudecode.Read(*claude) }
		case *claude == "" && len(e.args) == 1:
			read = func() ([]taskgraph.Task, error) { return e.readExport(e.args[0]) }
		default:
			return usagef("want an export FILE or --claude-code DIR")
		}
		return e.withStore(func(s store) error {
			tasks, err := read()
			if err != nil {
				return err
			}
			ids := make(map[taskgraph.ID]taskgraph.ID, len(tasks))
			if *renumber {
				ids, err = loadRenumbered(e, s, tasks)
			} else {
				for _, t := range tasks {
					ids[t.ID] = t.ID
				}
				err = s.Load(e.ctx, tasks)
				if errors.Is(err, taskgraph.ErrInvalid) && strings.Contains(err.Error(), "is not above") {
					err = fmt.Errorf("%w\nhint: --renumber gives the tasks fresh ids after the graph's own", err)
				}
			}
			if err != nil {
				return err
			}
			pairs := make([]idPair, 0, len(ids))
			for o, n := range ids {
				pairs = append(pairs, idPair{o, n})
			}
			sort.Slice(pairs, func(i, j int) bool { return pairs[i].Old < pairs[j].Old })
			return e.printImported(pairs, *renumber)
		})
	}
}

// readExport reads the tasks of an export file, or of stdin for "-".
func (e *env) readExport(name string) ([]taskgraph.Task, error) {
	r, err := e.openInput(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var in []taskJSON
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return nil, fmt.Errorf("%s is not a taskgraph export (a JSON array of tasks): %w", name, err)
	}
	tasks := make([]taskgraph.Task, len(in))
	for i, j := range in {
		tasks[i] = fromJSON(j)
		if tasks[i].Status == "" {
			tasks[i].Status = taskgraph.Pending // a plan written by hand
		}
	}
	return tasks, nil
}

// loadRenumbered loads tasks under fresh ids, consecutive in the order of
// their old ids, after every id the store has used, with their edges
// remapped; it returns the mapping. Every blocker must be among tasks.
func loadRenumbered(e *env, s store, tasks []taskgraph.Task) (map[taskgraph.ID]taskgraph.ID, error) {
	in := make(map[taskgraph.ID]bool, len(tasks))
	for _, t := range tasks {
		if in[t.ID] {
			return nil, fmt.Errorf("task id %d appears twice", t.ID)
		}
		in[t.ID] = true
	}
	for _, t := range tasks {
		for _, b := range t.BlockedBy {
			if !in[b] {
				return nil, fmt.Errorf("task %d is blocked by %d, which is not among the imported tasks; with --renumber every blocker must be", t.ID, b)
			}
		}
		if t.Parent != 0 && !in[t.Parent] {
			return nil, fmt.Errorf("task %d is under %d, which is not among the imported tasks; with --renumber every parent must be", t.ID, t.Parent)
		}
	}
	sorted := slices.Clone(tasks)
	slices.SortFunc(sorted, func(a, b taskgraph.Task) int { return int(a.ID - b.ID) })
	existing, err := s.List(e.ctx)
	if readFailed(err) {
		return nil, err
	}
	var next taskgraph.ID = 1
	for _, t := range existing {
		next = max(next, t.ID+1)
	}
	for try := 1; ; try++ {
		ids := make(map[taskgraph.ID]taskgraph.ID, len(sorted))
		for i, t := range sorted {
			ids[t.ID] = next + taskgraph.ID(i)
		}
		renamed := make([]taskgraph.Task, len(sorted))
		for i, t := range sorted {
			t.ID = ids[t.ID]
			by := make([]taskgraph.ID, len(t.BlockedBy))
			for j, b := range t.BlockedBy {
				by[j] = ids[b]
			}
			t.BlockedBy, t.Blocks = by, nil
			if t.Parent != 0 {
				t.Parent = ids[t.Parent]
			}
			renamed[i] = t
		}
		err := s.Load(e.ctx, renamed)
		// Ids above every task may still have been used by deleted tasks:
		// the store says which is the highest, and the load is retried
		// above it (nothing was written).
		if hw, ok := highWater(err); ok && hw >= next && try < 10 {
			next = hw + 1
			continue
		}
		return ids, err
	}
}

// highWater reads the highest allocated id from the error of a load whose
// ids were not above it.
func highWater(err error) (taskgraph.ID, bool) {
	var ie *taskgraph.InvalidError
	if !errors.As(err, &ie) || !strings.HasPrefix(ie.Field, "tasks[") {
		return 0, false
	}
	var id, hw int64
	if _, err := fmt.Sscanf(ie.Reason, "id %d is not above %d", &id, &hw); err != nil {
		return 0, false
	}
	return taskgraph.ID(hw), true
}

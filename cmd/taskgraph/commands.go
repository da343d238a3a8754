package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/taskgraph/taskgraph"
	"github.com/taskgraph/taskgraph/agenttools"
	"github.com/taskgraph/taskgraph/claudecode"
)

// taskJSON is a task as --json and export print it: the fields a model sees
// in agenttools, then everything else a task has.
type taskJSON struct {
	agenttools.TaskJSON
	Metadata       map[string]any `json:"metadata,omitempty"`
	CreatedAt      *time.Time     `json:"createdAt,omitempty"`
	UpdatedAt      *time.Time     `json:"updatedAt,omitempty"`
	Rev            int64          `json:"rev"`
	ClaimedAt      *time.Time     `json:"claimedAt,omitempty"`
	LeaseExpiresAt *time.Time     `json:"leaseExpiresAt,omitempty"`
	PrevOwner      string         `json:"prevOwner,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toJSON(t taskgraph.Task) taskJSON {
	return taskJSON{TaskJSON: agenttools.NewTaskJSON(t), Metadata: t.Metadata,
		CreatedAt: timePtr(t.CreatedAt), UpdatedAt: timePtr(t.UpdatedAt), Rev: t.Rev,
		ClaimedAt: timePtr(t.ClaimedAt), LeaseExpiresAt: timePtr(t.LeaseExpiresAt), PrevOwner: t.PrevOwner}
}

func fromJSON(j taskJSON) taskgraph.Task {
	t := taskgraph.Task{ID: j.ID, Subject: j.Subject, Description: j.Description, Status: j.Status,
		BlockedBy: j.BlockedBy, Owner: j.Owner, Metadata: j.Metadata, Rev: j.Rev, PrevOwner: j.PrevOwner}
	for _, p := range []struct {
		from *time.Time
		to   *time.Time
	}{{j.CreatedAt, &t.CreatedAt}, {j.UpdatedAt, &t.UpdatedAt}, {j.ClaimedAt, &t.ClaimedAt}, {j.LeaseExpiresAt, &t.LeaseExpiresAt}} {
		if p.from != nil {
			*p.to = *p.from
		}
	}
	return t
}

func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (e *env) printTasks(ts []taskgraph.Task, all []taskgraph.Task) error {
	if e.json {
		out := make([]taskJSON, len(ts))
		for i, t := range ts {
			out[i] = toJSON(t)
		}
		return e.printJSON(out)
	}
	status := map[taskgraph.ID]taskgraph.Status{}
	for _, t := range all {
		status[t.ID] = t.Status
	}
	for _, t := range ts {
		fmt.Fprintln(e.stdout, e.line(t, status))
	}
	return nil
}

const (
	green  = "\x1b[32m"
	yellow = "\x1b[33m"
	red    = "\x1b[31m"
	dim    = "\x1b[2m"
	reset  = "\x1b[0m"
)

func (e *env) paint(c, s string) string {
	if !e.color {
		return s
	}
	return c + s + reset
}

// line renders a task as the reference's list does, with the owner of a
// claimed task and only the blockers that are not completed.
func (e *env) line(t taskgraph.Task, status map[taskgraph.ID]taskgraph.Status) string {
	var marker string
	switch t.Status {
	case taskgraph.Completed:
		marker = e.paint(green, "[x]")
	case taskgraph.InProgress:
		marker = e.paint(yellow, "[>]")
	default:
		marker = "[ ]"
	}
	s := fmt.Sprintf("%s #%d: %s", marker, t.ID, t.Subject)
	if t.Owner != "" && t.Status != taskgraph.Pending {
		s += e.paint(dim, " @"+t.Owner)
	}
	if t.Status != taskgraph.Completed {
		var open []string
		for _, b := range t.BlockedBy {
			if status[b] != taskgraph.Completed {
				open = append(open, fmt.Sprint(b))
			}
		}
		if len(open) > 0 {
			s += e.paint(red, " (blocked by: ["+strings.Join(open, ", ")+"])")
		}
	}
	return s
}

func (e *env) printTask(t taskgraph.Task) error {
	if e.json {
		return e.printJSON(toJSON(t))
	}
	fmt.Fprintf(e.stdout, "#%d: %s\nstatus:      %s\n", t.ID, t.Subject, t.Status)
	if t.Owner != "" {
		fmt.Fprintf(e.stdout, "owner:       %s\n", t.Owner)
	}
	if !t.LeaseExpiresAt.IsZero() {
		fmt.Fprintf(e.stdout, "lease until: %s\n", t.LeaseExpiresAt.Local().Format(time.RFC3339))
	}
	fmt.Fprintf(e.stdout, "blocked by:  %v\nblocks:      %v\nrev:         %d\n", t.BlockedBy, t.Blocks, t.Rev)
	if t.Description != "" {
		fmt.Fprintf(e.stdout, "\n%s\n", t.Description)
	}
	return nil
}

// printChanged ends a command that changed a task: it returns err if there
// is one, else prints t in full under --json, or else the line format makes
// of args.
func (e *env) printChanged(t taskgraph.Task, err error, format string, args ...any) error {
	if err != nil {
		return err
	}
	if e.json {
		return e.printTask(t)
	}
	fmt.Fprintf(e.stdout, format, args...)
	return nil
}

func cmdInit(e *env) error {
	return e.withNoArgs(func(s store) error {
		if _, err := s.List(e.ctx); err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
			return err
		}
		if !e.json {
			fmt.Fprintf(e.stdout, "Task graph in %s\n", e.where())
		}
		return nil
	})
}

func flagsAdd(fs *flag.FlagSet) func(e *env) error {
	desc := fs.String("desc", "", "description")
	var after, blocks idList
	fs.Var(&after, "after", "`ID`s this task is blocked by (repeat or comma-separate)")
	fs.Var(&blocks, "blocks", "`ID`s this task blocks")
	return func(e *env) error {
		if len(e.args) != 1 {
			return usagef("want the subject as one argument (quote it)")
		}
		return e.withStore(func(s store) error {
			t, err := s.Create(e.ctx, taskgraph.NewTask{Subject: e.args[0], Description: *desc, BlockedBy: after, Blocks: blocks})
			if err != nil {
				return err
			}
			if e.json {
				return e.printTask(t)
			}
			fmt.Fprintf(e.stdout, "Created #%d: %s", t.ID, t.Subject)
			if len(t.BlockedBy) > 0 {
				fmt.Fprintf(e.stdout, " (blocked by: %v)", t.BlockedBy)
			}
			fmt.Fprintln(e.stdout)
			return nil
		})
	}
}

func cmdList(e *env) error {
	return e.withNoArgs(func(s store) error {
		all, err := s.List(e.ctx)
		if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
			return err
		}
		if len(all) == 0 && !e.json {
			fmt.Fprintln(e.stdout, "No tasks.")
		} else if perr := e.printTasks(all, all); perr != nil {
			return perr
		}
		return err // corrupt files: listed the rest, then say so
	})
}

func cmdReady(e *env) error {
	return e.withNoArgs(func(s store) error {
		b, err := s.Board(e.ctx)
		if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
			return err
		}
		if perr := e.printTasks(b.Ready, b.Ready); perr != nil {
			return perr
		}
		if err == nil && len(b.Ready) == 0 {
			if !e.json {
				fmt.Fprintf(e.stderr, "No task is ready (%d blocked, %d in progress).\n", len(b.Blocked), len(b.InProgress))
			}
			return errQuiet{exitUnavailable}
		}
		return err
	})
}

// errQuiet ends a command with an exit status and no message.
type errQuiet struct{ code int }

func (e errQuiet) Error() string { return "" }

func cmdShow(e *env) error {
	return e.withTask(func(_ store, t taskgraph.Task) error { return e.printTask(t) })
}

func (e *env) oneID() (taskgraph.ID, error) {
	ids, err := e.argIDs(1, 0)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// argIDs checks that the command has n arguments and parses the ones at
// the positions at as task ids.
func (e *env) argIDs(n int, at ...int) ([]taskgraph.ID, error) {
	if err := e.wantArgs(n); err != nil {
		return nil, err
	}
	ids := make([]taskgraph.ID, len(at))
	for i, a := range at {
		id, err := parseID(e.args[a])
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// withNoArgs runs f on the store, for a command that takes no arguments.
func (e *env) withNoArgs(f func(s store) error) error {
	if err := e.wantArgs(0); err != nil {
		return err
	}
	return e.withStore(f)
}

// withID runs f on the store and the task id that is the command's one
// argument.
func (e *env) withID(f func(s store, id taskgraph.ID) error) error {
	id, err := e.oneID()
	if err != nil {
		return err
	}
	return e.withStore(func(s store) error { return f(s, id) })
}

// withTask runs f on the store and the task whose id is the command's one
// argument.
func (e *env) withTask(f func(s store, t taskgraph.Task) error) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Get(e.ctx, id)
		if err != nil {
			return err
		}
		return f(s, t)
	})
}

func flagsClaim(next bool) func(fs *flag.FlagSet) func(e *env) error {
	return func(fs *flag.FlagSet) func(e *env) error {
		lease := fs.Duration("lease", 0, "lease the claim for this long (e.g. 30m); renew it with taskgraph renew")
		return func(e *env) error {
			var opts []taskgraph.ClaimOption
			if *lease > 0 {
				opts = append(opts, taskgraph.WithLease(*lease))
			}
			return e.withStore(func(s store) error {
				var t taskgraph.Task
				var err error
				if next {
					if err = e.wantArgs(0); err != nil {
						return err
					}
					t, err = s.ClaimNext(e.ctx, e.owner, opts...)
				} else {
					var id taskgraph.ID
					if id, err = e.oneID(); err != nil {
						return err
					}
					t, err = s.Claim(e.ctx, id, e.owner, opts...)
				}
				return e.printChanged(t, err, "Claimed #%d: %s (owner %s)\n", t.ID, t.Subject, t.Owner)
			})
		}
	}
}

// checkedOwner is the owner done and release insist on: only one given
// explicitly, since the default changes from shell to shell.
func (e *env) checkedOwner() string {
	if e.ownerSet {
		return e.owner
	}
	return ""
}

func cmdDone(e *env) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		c, err := s.Complete(e.ctx, id, e.checkedOwner())
		if err != nil {
			return err
		}
		if e.json {
			un := make([]taskJSON, len(c.Unblocked))
			for i, u := range c.Unblocked {
				un[i] = toJSON(u)
			}
			return e.printJSON(struct {
				Task      taskJSON   `json:"task"`
				Unblocked []taskJSON `json:"unblocked"`
			}{toJSON(c.Task), un})
		}
		fmt.Fprintf(e.stdout, "Completed #%d: %s\n", c.Task.ID, c.Task.Subject)
		if len(c.Unblocked) > 0 {
			parts := make([]string, len(c.Unblocked))
			for i, u := range c.Unblocked {
				parts[i] = fmt.Sprintf("#%d %s", u.ID, u.Subject)
			}
			fmt.Fprintf(e.stdout, "Unblocked: %s\n", strings.Join(parts, ", "))
		}
		return nil
	})
}

func cmdRelease(e *env) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Release(e.ctx, id, e.checkedOwner())
		return e.printChanged(t, err, "Released #%d: %s\n", t.ID, t.Subject)
	})
}

func cmdRenew(e *env) error {
	ids, err := e.argIDs(2, 0)
	if err != nil {
		return err
	}
	ttl, err := time.ParseDuration(e.args[1])
	if err != nil {
		return usagef("%q is not a duration such as 30m", e.args[1])
	}
	return e.withStore(func(s store) error {
		t, err := s.Renew(e.ctx, ids[0], e.owner, ttl)
		return e.printChanged(t, err, "Renewed #%d until %s\n", t.ID, t.LeaseExpiresAt.Local().Format(time.RFC3339))
	})
}

func cmdDep(e *env) error {
	ids, err := e.argIDs(3, 1, 2)
	if err != nil {
		return err
	}
	id, blocker := ids[0], ids[1]
	var p taskgraph.Patch
	switch e.args[0] {
	case "add":
		p.AddBlockedBy = []taskgraph.ID{blocker}
	case "rm", "remove":
		p.RemoveBlockedBy = []taskgraph.ID{blocker}
	default:
		return usagef("%q: want add or rm", e.args[0])
	}
	return e.withStore(func(s store) error {
		t, err := s.Update(e.ctx, id, p)
		return e.printChanged(t, err, "#%d is blocked by %v\n", t.ID, t.BlockedBy)
	})
}

func flagsDelete(fs *flag.FlagSet) func(e *env) error {
	detach := fs.Bool("detach", false, "also remove this task from the blockedBy of the tasks that depend on it")
	return func(e *env) error {
		var opts []taskgraph.DeleteOption
		if *detach {
			opts = append(opts, taskgraph.Detach())
		}
		return e.withID(func(s store, id taskgraph.ID) error {
			if err := s.Delete(e.ctx, id, opts...); err != nil {
				return err
			}
			if !e.json {
				fmt.Fprintf(e.stdout, "Deleted #%d\n", id)
			}
			return nil
		})
	}
}

func cmdCheck(e *env) error {
	if err := e.wantArgs(0); err != nil {
		return err
	}
	if e.storeURL != "" {
		return usagef("check reads a task directory; a --store database enforces the same rules with constraints")
	}
	problems, err := taskgraph.Check(e.ctx, e.dir)
	if err != nil {
		return err
	}
	if e.json {
		type pj struct {
			Kind    taskgraph.ProblemKind `json:"kind"`
			Path    string                `json:"path"`
			ID      taskgraph.ID          `json:"id,omitempty"`
			Message string                `json:"message"`
		}
		out := []pj{}
		for _, p := range problems {
			out = append(out, pj{p.Kind, p.Path, p.ID, p.Message})
		}
		if err := e.printJSON(out); err != nil {
			return err
		}
	} else {
		for _, p := range problems {
			fmt.Fprintln(e.stdout, p)
		}
		if len(problems) == 0 {
			fmt.Fprintf(e.stdout, "%s: no problems\n", e.dir)
		}
	}
	if len(problems) > 0 {
		return errQuiet{exitError}
	}
	return nil
}

func cmdWatch(e *env) error {
	return e.withNoArgs(func(s store) error {
		events, err := s.Watch(e.ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "Watching %s (interrupt to stop)\n", e.where())
		for ev := range events {
			if e.json {
				line, _ := json.Marshal(struct {
					Kind taskgraph.EventKind `json:"kind"`
					Task taskJSON            `json:"task"`
				}{ev.Kind, toJSON(ev.Task)})
				fmt.Fprintf(e.stdout, "%s\n", line)
				continue
			}
			fmt.Fprintf(e.stdout, "%s %-9s #%d: %s (%s", time.Now().Format("15:04:05"), ev.Kind, ev.Task.ID, ev.Task.Subject, ev.Task.Status)
			if ev.Task.Owner != "" {
				fmt.Fprintf(e.stdout, ", %s", ev.Task.Owner)
			}
			fmt.Fprintln(e.stdout, ")")
		}
		return nil
	})
}

func cmdExport(e *env) error {
	return e.withNoArgs(func(s store) error {
		all, err := s.List(e.ctx)
		if err != nil {
			return err // an export must be whole
		}
		out := make([]taskJSON, len(all))
		for i, t := range all {
			out[i] = toJSON(t)
		}
		return e.printJSON(out)
	})
}

func flagsImport(fs *flag.FlagSet) func(e *env) error {
	claude := fs.String("claude-code", "", "a Claude Code task list `DIR`, e.g. ~/.claude/tasks/<list>")
	return func(e *env) error {
		return e.withStore(func(s store) error {
			var tasks []taskgraph.Task
			var err error
			switch {
			case *claude != "" && len(e.args) == 0:
				tasks, err = claudecode.Import(e.ctx, s, *claude)
			case *claude == "" && len(e.args) == 1:
				tasks, err = e.importExport(s, e.args[0])
			default:
				return usagef("want an export FILE or --claude-code DIR")
			}
			if err != nil {
				return err
			}
			if !e.json {
				fmt.Fprintf(e.stdout, "Imported %d tasks into %s\n", len(tasks), e.where())
			}
			return nil
		})
	}
}

func (e *env) importExport(s store, name string) ([]taskgraph.Task, error) {
	var r io.Reader = e.stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	var in []taskJSON
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return nil, fmt.Errorf("%s is not a taskgraph export (a JSON array of tasks): %w", name, err)
	}
	tasks := make([]taskgraph.Task, len(in))
	for i, j := range in {
		tasks[i] = fromJSON(j)
	}
	return tasks, s.Load(e.ctx, tasks)
}

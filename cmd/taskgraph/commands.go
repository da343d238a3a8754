package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
	"github.com/taskgraph-dev/taskgraph/claudecode"
)

// taskJSON is a task as --json and export print it: the fields a model sees
// in agenttools, then everything else a task has.
type taskJSON struct {
	agenttools.TaskJSON
	Priority       *taskgraph.Priority `json:"priority,omitempty"` // absent: the default
	Labels         []string            `json:"labels,omitempty"`
	Key            string              `json:"key,omitempty"`
	Reason         string              `json:"reason,omitempty"`
	Result         string              `json:"result,omitempty"`
	Metadata       map[string]any      `json:"metadata,omitempty"`
	CreatedAt      *time.Time          `json:"createdAt,omitempty"`
	UpdatedAt      *time.Time          `json:"updatedAt,omitempty"`
	Rev            int64               `json:"rev"`
	ClaimedAt      *time.Time          `json:"claimedAt,omitempty"`
	LeaseExpiresAt *time.Time          `json:"leaseExpiresAt,omitempty"`
	PrevOwner      string              `json:"prevOwner,omitempty"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func toJSON(t taskgraph.Task) taskJSON {
	j := taskJSON{TaskJSON: agenttools.NewTaskJSON(t), Metadata: t.Metadata,
		Labels: t.Labels, Key: t.Key, Reason: t.Reason, Result: t.Result,
		CreatedAt: timePtr(t.CreatedAt), UpdatedAt: timePtr(t.UpdatedAt), Rev: t.Rev,
		ClaimedAt: timePtr(t.ClaimedAt), LeaseExpiresAt: timePtr(t.LeaseExpiresAt), PrevOwner: t.PrevOwner}
	if t.Priority != taskgraph.DefaultPriority {
		p := t.Priority
		j.Priority = &p
	}
	return j
}

func toJSONs(ts []taskgraph.Task) []taskJSON {
	out := make([]taskJSON, len(ts))
	for i, t := range ts {
		out[i] = toJSON(t)
	}
	return out
}

func fromJSON(j taskJSON) taskgraph.Task {
	t := taskgraph.Task{ID: j.ID, Subject: j.Subject, Description: j.Description, Status: j.Status,
		BlockedBy: j.BlockedBy, Owner: j.Owner, Metadata: j.Metadata, Rev: j.Rev, PrevOwner: j.PrevOwner,
		Priority: taskgraph.DefaultPriority, Labels: j.Labels, Key: j.Key, Reason: j.Reason, Result: j.Result}
	if j.Priority != nil {
		t.Priority = *j.Priority
	}
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

// view is what a task's line needs to know of the whole graph: the status
// of every task, and which pending tasks are stranded, by what.
type view struct {
	status     map[taskgraph.ID]taskgraph.Status
	strandedBy map[taskgraph.ID]taskgraph.ID
}

// viewOf returns the view of a whole graph.
func viewOf(all []taskgraph.Task) view {
	return viewOfBoard(taskgraph.Resolve(all))
}

// viewOfBoard returns the view of an unfiltered board.
func viewOfBoard(b taskgraph.Board) view {
	v := view{status: map[taskgraph.ID]taskgraph.Status{}, strandedBy: b.StrandedBy}
	for _, l := range [][]taskgraph.Task{b.Ready, b.Blocked, b.Stranded, b.InProgress, b.Completed, b.Failed, b.Cancelled} {
		for _, t := range l {
			v.status[t.ID] = t.Status
		}
	}
	return v
}

// printTasks prints ts, one a line, or as a JSON array.
func (e *env) printTasks(ts []taskgraph.Task, v view) error {
	if e.json {
		return e.printJSON(toJSONs(ts))
	}
	for _, t := range ts {
		fmt.Fprintln(e.stdout, e.line(t, v))
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
// claimed task and only the blockers that are not completed; a priority
// other than the default and labels follow the subject, and a pending task
// that a failed or cancelled blocker strands names it.
func (e *env) line(t taskgraph.Task, v view) string {
	var marker string
	switch t.Status {
	case taskgraph.Completed:
		marker = e.paint(green, "[x]")
	case taskgraph.InProgress:
		marker = e.paint(yellow, "[>]")
	case taskgraph.Failed:
		marker = e.paint(red, "[!]")
	case taskgraph.Cancelled:
		marker = e.paint(dim, "[-]")
	default:
		marker = "[ ]"
	}
	s := fmt.Sprintf("%s #%d: %s", marker, t.ID, t.Subject)
	if t.Priority != taskgraph.DefaultPriority {
		s += " " + t.Priority.String()
	}
	if len(t.Labels) > 0 {
		s += e.paint(dim, " {"+strings.Join(t.Labels, ", ")+"}")
	}
	if t.Owner != "" && t.Status != taskgraph.Pending {
		s += e.paint(dim, " @"+t.Owner)
	}
	if t.Status != taskgraph.Pending {
		return s
	}
	if by := v.strandedBy[t.ID]; by != 0 {
		return s + e.paint(red, fmt.Sprintf(" (cannot start: #%d %s)", by, v.status[by]))
	}
	if open := agenttools.OpenBlockers(t, v.status); len(open) > 0 {
		s += e.paint(red, " (blocked by: "+agenttools.FormatIDs(open)+")")
	}
	return s
}

// blockerStatuses returns the status of each blocker of t that exists.
func (e *env) blockerStatuses(s store, t taskgraph.Task) map[taskgraph.ID]taskgraph.Status {
	m := map[taskgraph.ID]taskgraph.Status{}
	for _, b := range t.BlockedBy {
		if bt, err := s.Get(e.ctx, b); err == nil {
			m[b] = bt.Status
		}
	}
	return m
}

// printTask prints one task in full, or as a JSON object.
func (e *env) printTask(s store, t taskgraph.Task) error {
	if e.json {
		return e.printJSON(toJSON(t))
	}
	w := e.stdout
	state := string(t.Status)
	if t.Status == taskgraph.Pending {
		if open := agenttools.OpenBlockers(t, e.blockerStatuses(s, t)); len(open) > 0 {
			state += ", blocked by " + agenttools.FormatIDs(open)
		} else {
			state += ", ready"
		}
	}
	why := ""
	if t.Status == taskgraph.Pending && !strings.HasSuffix(state, "ready") {
		if all, err := s.List(e.ctx); err == nil || errors.Is(err, taskgraph.ErrCorrupt) {
			if ex, err := taskgraph.Explain(all, t.ID, time.Now()); err == nil {
				why = ex.Text
			}
		}
	}
	fmt.Fprintf(w, "#%d: %s\n", t.ID, t.Subject)
	row := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%-12s %s\n", name+":", value)
		}
	}
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format(time.RFC3339)
	}
	row("status", state)
	row("why", why)
	row("reason", t.Reason)
	row("result", t.Result)
	row("priority", t.Priority.String())
	row("labels", strings.Join(t.Labels, ", "))
	row("key", t.Key)
	row("owner", t.Owner)
	row("claimed", stamp(t.ClaimedAt))
	row("lease until", stamp(t.LeaseExpiresAt))
	row("prev owner", t.PrevOwner)
	row("depends on", agenttools.FormatIDs(t.BlockedBy))
	row("blocks", agenttools.FormatIDs(t.Blocks))
	row("created", stamp(t.CreatedAt))
	row("updated", stamp(t.UpdatedAt))
	row("rev", fmt.Sprint(t.Rev))
	if len(t.Metadata) > 0 {
		fmt.Fprintln(w, "metadata:")
		keys := make([]string, 0, len(t.Metadata))
		for k := range t.Metadata {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := json.Marshal(t.Metadata[k])
			fmt.Fprintf(w, "  %s: %s\n", k, v)
		}
	}
	if t.Description != "" {
		fmt.Fprintf(w, "\n%s\n", t.Description)
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
		return e.printJSON(toJSON(t))
	}
	fmt.Fprintf(e.stdout, format, args...)
	return nil
}

func cmdInit(e *env) error {
	if err := e.wantArgs(0); err != nil {
		return err
	}
	type initJSON struct {
		Dir     string `json:"dir,omitempty"`
		Graph   string `json:"graph,omitempty"`
		Created bool   `json:"created"`
	}
	if e.storeURL != "" {
		return e.withPostgres(true, func(s store, created bool) error {
			if e.json {
				return e.printJSON(initJSON{Graph: e.graph, Created: created})
			}
			if created {
				fmt.Fprintf(e.stdout, "Initialized empty task graph %q\n", e.graph)
			} else {
				fmt.Fprintf(e.stdout, "Task graph %q already exists\n", e.graph)
			}
			return nil
		})
	}
	dir := e.initDir()
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, os.ErrNotExist)
	var shadowed string
	if created && e.dirFrom == "" {
		if wd, err := os.Getwd(); err == nil {
			shadowed, _ = findTasks(wd)
		}
	}
	s, err := openDir(dir, true)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.List(e.ctx); err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
		return err
	}
	if shadowed != "" {
		fmt.Fprintf(e.stderr, "note: commands run under %s now use this graph, not %s\n", filepath.Dir(abs), shadowed)
	}
	if e.json {
		return e.printJSON(initJSON{Dir: abs, Created: created})
	}
	if created {
		fmt.Fprintf(e.stdout, "Initialized empty task graph in %s\n", abs)
	} else {
		fmt.Fprintf(e.stdout, "Task graph already in %s\n", abs)
	}
	return nil
}

func flagsAdd(fs *flag.FlagSet) func(e *env) error {
	desc := fs.String("desc", "", "description")
	var after, blocks idList
	fs.Var(&after, "after", "`ID`s this task is blocked by (repeat or comma-separate)")
	fs.Var(&blocks, "blocks", "`ID`s this task blocks")
	var priority priorityFlag
	fs.Var(&priority, "priority", "`P0` (most urgent) to P4; default P2")
	var labels stringList
	fs.Var(&labels, "label", "a `LABEL` for the task (repeat or comma-separate)")
	key := fs.String("key", "", "a `KEY` naming the task, unique in the graph: adding it again adds nothing")
	return func(e *env) error {
		if len(e.args) != 1 {
			return usagef("want the subject as one argument (quote it)")
		}
		return e.withStore(func(s store) error {
			existed := false
			if *key != "" {
				all, err := s.List(e.ctx)
				if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
					return err
				}
				existed = slices.ContainsFunc(all, func(t taskgraph.Task) bool { return t.Key == *key })
			}
			t, err := s.Create(e.ctx, taskgraph.NewTask{Subject: e.args[0], Description: *desc, BlockedBy: after, Blocks: blocks,
				Priority: priority.p, Labels: labels, Key: *key})
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(toJSON(t))
			}
			if existed {
				fmt.Fprintf(e.stdout, "#%d already has key %q: %s (nothing added)\n", t.ID, t.Key, t.Subject)
				return nil
			}
			fmt.Fprintf(e.stdout, "Created #%d: %s", t.ID, t.Subject)
			if open := agenttools.OpenBlockers(t, e.blockerStatuses(s, t)); len(open) > 0 {
				fmt.Fprintf(e.stdout, " (blocked by: %s)", agenttools.FormatIDs(open))
			}
			fmt.Fprintln(e.stdout)
			return nil
		})
	}
}

func flagsList(fs *flag.FlagSet) func(e *env) error {
	f := listFlags(fs, true)
	return func(e *env) error {
		if err := f.check(); err != nil {
			return err
		}
		return e.withNoArgs(func(s store) error {
			all, err := s.List(e.ctx)
			if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
				return err
			}
			v := viewOf(all)
			shown, more := f.pick(all, v)
			switch {
			case len(all) == 0 && !e.json:
				fmt.Fprintln(e.stdout, "No tasks.")
			case len(shown) == 0 && !e.json:
				fmt.Fprintln(e.stdout, "No tasks match.")
			default:
				if perr := e.printTasks(shown, v); perr != nil {
					return perr
				}
			}
			if more > 0 && !e.json {
				fmt.Fprintf(e.stdout, "… and %d more (raise --limit or filter)\n", more)
			}
			return err // corrupt files: listed the rest, then say so
		})
	}
}

func flagsReady(fs *flag.FlagSet) func(e *env) error {
	f := listFlags(fs, false)
	return func(e *env) error {
		f.ready = true
		if err := f.check(); err != nil {
			return err
		}
		return e.withNoArgs(func(s store) error {
			b, err := s.Board(e.ctx)
			if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
				return err
			}
			v := viewOfBoard(b)
			shown, more := f.pick(b.Ready, v)
			if perr := e.printTasks(shown, v); perr != nil {
				return perr
			}
			if more > 0 && !e.json {
				fmt.Fprintf(e.stdout, "… and %d more (raise --limit or filter)\n", more)
			}
			if err == nil && len(shown) == 0 {
				if !e.json {
					what := "No task is ready"
					if len(f.labels) > 0 {
						what = "No task with labels " + strings.Join(f.labels, ", ") + " is ready"
					}
					fmt.Fprintf(e.stderr, "%s (%d blocked, %d in progress, %d stranded by a failed or cancelled task).\n", what, len(b.Blocked), len(b.InProgress), len(b.Stranded))
				}
				return errQuiet{exitUnavailable}
			}
			return err
		})
	}
}

// errQuiet ends a command with an exit status and no message.
type errQuiet struct{ code int }

func (e errQuiet) Error() string { return "" }

func cmdShow(e *env) error {
	return e.withTask(func(s store, t taskgraph.Task) error { return e.printTask(s, t) })
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

// durationFlag is a lease flag (taskgraph.ParseLease) that keeps the text
// it was given, for messages. A negative lease is kept in err, for check
// to refuse as a usage error that names the flag.
type durationFlag struct {
	d    time.Duration
	text string
	err  error
}

func (f *durationFlag) String() string {
	if f.text != "" {
		return f.text
	}
	return f.d.String()
}

func (f *durationFlag) Set(v string) error {
	d, err := taskgraph.ParseLease(v)
	if err != nil && !strings.HasPrefix(v, "-") {
		return reasonOf(err)
	}
	f.d, f.text, f.err = d, v, err
	return nil
}

// leaseFlag defines --lease, a duration that must not be negative: check
// says so.
func leaseFlag(fs *flag.FlagSet, usage string) *durationFlag {
	f := &durationFlag{}
	fs.Var(f, "lease", usage)
	return f
}

// check refuses a negative lease.
func (f *durationFlag) check() error {
	if f.err != nil {
		return usagef("--lease %s: %v", f, reasonOf(f.err))
	}
	return nil
}

func flagsClaim(next bool) func(fs *flag.FlagSet) func(e *env) error {
	return func(fs *flag.FlagSet) func(e *env) error {
		lease := leaseFlag(fs, "lease the claim for this `DURATION` (e.g. 30m); renew it with taskgraph renew")
		var labels stringList
		if next {
			fs.Var(&labels, "label", "take only a task with this `LABEL` (repeat or comma-separate: all of them)")
		}
		return func(e *env) error {
			if err := lease.check(); err != nil {
				return err
			}
			var opts []taskgraph.ClaimOption
			if lease.d > 0 {
				opts = append(opts, taskgraph.WithLease(lease.d))
			}
			if len(labels) > 0 {
				opts = append(opts, taskgraph.WithLabels(labels...))
			}
			var id taskgraph.ID
			var err error
			if next {
				err = e.wantArgs(0)
			} else {
				id, err = e.oneID()
			}
			if err != nil {
				return err
			}
			return e.withStore(func(s store) error {
				var t taskgraph.Task
				if next {
					t, err = s.ClaimNext(e.ctx, e.owner, opts...)
				} else {
					t, err = s.Claim(e.ctx, id, e.owner, opts...)
				}
				return e.printChanged(t, e.held(err, ""), "Claimed #%d: %s (owner %s)\n", t.ID, t.Subject, t.Owner)
			})
		}
	}
}

// flagsForce gives a command --force, for acting on a task that someone
// else holds.
func flagsForce(f func(e *env, force bool) error) func(fs *flag.FlagSet) func(e *env) error {
	return func(fs *flag.FlagSet) func(e *env) error {
		force := fs.Bool("force", false, "act on the task even if someone else holds it")
		return func(e *env) error { return f(e, *force) }
	}
}

// holder is the owner a command insists on: the user, or no one with
// --force.
func (e *env) holder(force bool) string {
	if force {
		return ""
	}
	return e.owner
}

func flagsDone(fs *flag.FlagSet) func(e *env) error {
	force := fs.Bool("force", false, "act on the task even if someone else holds it")
	result := fs.String("result", "", "record `TEXT` on the task: what was done, for whoever comes after")
	return func(e *env) error { return cmdDone(e, *force, *result) }
}

func cmdDone(e *env, force bool, result string) error {
	var opts []taskgraph.CompleteOption
	if result != "" {
		opts = append(opts, taskgraph.WithResult(result))
	}
	return e.withID(func(s store, id taskgraph.ID) error {
		c, err := s.Complete(e.ctx, id, e.holder(force), opts...)
		if err != nil {
			return e.held(err, "completes it")
		}
		if e.json {
			return e.printJSON(struct {
				Task      taskJSON   `json:"task"`
				Unblocked []taskJSON `json:"unblocked"`
			}{toJSON(c.Task), toJSONs(c.Unblocked)})
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

func cmdRelease(e *env, force bool) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Release(e.ctx, id, e.holder(force))
		return e.printChanged(t, e.held(err, "releases it"), "Released #%d: %s\n", t.ID, t.Subject)
	})
}

func cmdRenew(e *env) error {
	ids, err := e.argIDs(2, 0)
	if err != nil {
		return err
	}
	ttl, err := taskgraph.ParseLease(e.args[1])
	if err == nil {
		err = taskgraph.Rules.RenewArgs(ttl)
	}
	if err != nil {
		return usagef("%s: %v", e.args[1], reasonOf(err))
	}
	return e.withStore(func(s store) error {
		t, err := s.Renew(e.ctx, ids[0], e.owner, ttl)
		return e.printChanged(t, e.held(err, ""), "Renewed #%d until %s\n", t.ID, t.LeaseExpiresAt.Local().Format(time.RFC3339))
	})
}

func cmdDep(e *env) error {
	ids, err := e.argIDs(3, 1, 2)
	if err != nil {
		return err
	}
	id, blocker := ids[0], ids[1]
	add := false
	switch e.args[0] {
	case "add":
		add = true
	case "rm", "remove":
	default:
		return usagef("%q: want add or rm", e.args[0])
	}
	return e.withStore(func(s store) error {
		for try := 1; ; try++ {
			t, err := s.Get(e.ctx, id)
			if err != nil {
				return err
			}
			has := slices.Contains(t.BlockedBy, blocker)
			var p taskgraph.Patch
			switch {
			case add && has:
				return e.printChanged(t, nil, "#%d already depends on #%d; nothing changed\n", id, blocker)
			case !add && !has:
				return fmt.Errorf("#%d is not blocked by #%d (it depends on %s); nothing changed", id, blocker, agenttools.FormatIDs(t.BlockedBy))
			case add:
				p.AddBlockedBy = []taskgraph.ID{blocker}
			default:
				p.RemoveBlockedBy = []taskgraph.ID{blocker}
			}
			p.IfRev = t.Rev
			t, err = s.Update(e.ctx, id, p)
			if errors.Is(err, taskgraph.ErrConflict) && try < 5 {
				continue
			}
			if add {
				return e.printChanged(t, err, "#%d is now blocked by #%d\n", id, blocker)
			}
			return e.printChanged(t, err, "#%d is no longer blocked by #%d\n", id, blocker)
		}
	})
}

func flagsDelete(fs *flag.FlagSet) func(e *env) error {
	detach := fs.Bool("detach", false, "also remove this task from the blockedBy of the tasks that depend on it")
	force := fs.Bool("force", false, "delete the task even if someone else holds it")
	return func(e *env) error {
		var opts []taskgraph.DeleteOption
		if *detach {
			opts = append(opts, taskgraph.Detach())
		}
		return e.withTask(func(s store, t taskgraph.Task) error {
			if t.Status == taskgraph.InProgress && t.Owner != e.owner && !*force {
				return e.held(&taskgraph.ClaimedError{ID: t.ID, Owner: t.Owner}, "deletes it")
			}
			if len(t.Blocks) > 0 && !*detach {
				return fmt.Errorf("tasks %s depend on #%d: remove those edges first (taskgraph dep rm), or delete with --detach", agenttools.FormatIDs(t.Blocks), t.ID)
			}
			if err := s.Delete(e.ctx, t.ID, opts...); err != nil {
				return err
			}
			detached := t.Blocks
			if detached == nil {
				detached = []taskgraph.ID{}
			}
			if e.json {
				return e.printJSON(struct {
					Deleted  taskgraph.ID   `json:"deleted"`
					Detached []taskgraph.ID `json:"detached"`
				}{t.ID, detached})
			}
			fmt.Fprintf(e.stdout, "Deleted #%d: %s", t.ID, t.Subject)
			if len(detached) > 0 {
				fmt.Fprintf(e.stdout, " (no longer blocks %s)", agenttools.FormatIDs(detached))
			}
			fmt.Fprintln(e.stdout)
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
	dir, err := e.taskDir()
	if err != nil {
		return err
	}
	problems, err := taskgraph.Check(e.ctx, dir)
	if err != nil {
		return err
	}
	// Which protocol a store on dir chooses, and why (Open reads nothing
	// of the directory: it only looks at its filesystem).
	var durability taskgraph.Durability
	if s, err := taskgraph.Open(dir, taskgraph.WithoutCreate()); err == nil {
		durability = s.Durability()
		s.Close()
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
			out = append(out, pj{p.Kind, p.Path, p.ID, describe(errors.New(p.Message))})
		}
		if err := e.printJSON(out); err != nil {
			return err
		}
	} else {
		for _, p := range problems {
			fmt.Fprintln(e.stdout, describe(errors.New(p.String())))
		}
		if len(problems) == 0 {
			fmt.Fprintf(e.stdout, "%s: no problems\n", dir)
		}
		if durability.Protocol != "" {
			fmt.Fprintf(e.stdout, "durability: %s\n", durability)
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
		return e.printJSON(toJSONs(all))
	})
}

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
			type pair struct {
				Old taskgraph.ID `json:"old"`
				New taskgraph.ID `json:"new"`
			}
			pairs := make([]pair, 0, len(ids))
			for o, n := range ids {
				pairs = append(pairs, pair{o, n})
			}
			sort.Slice(pairs, func(i, j int) bool { return pairs[i].Old < pairs[j].Old })
			if e.json {
				return e.printJSON(struct {
					Imported int    `json:"imported"`
					IDs      []pair `json:"ids"`
				}{len(pairs), pairs})
			}
			fmt.Fprintf(e.stdout, "Imported %d tasks into %s\n", len(pairs), e.where())
			if *renumber && len(pairs) > 0 {
				parts := make([]string, len(pairs))
				for i, p := range pairs {
					parts[i] = fmt.Sprintf("%d -> %d", p.Old, p.New)
				}
				fmt.Fprintf(e.stdout, "Renumbered: %s\n", strings.Join(parts, ", "))
			}
			return nil
		})
	}
}

// readExport reads the tasks of an export file, or of stdin for "-".
func (e *env) readExport(name string) ([]taskgraph.Task, error) {
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
	}
	sorted := slices.Clone(tasks)
	slices.SortFunc(sorted, func(a, b taskgraph.Task) int { return int(a.ID - b.ID) })
	existing, err := s.List(e.ctx)
	if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
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

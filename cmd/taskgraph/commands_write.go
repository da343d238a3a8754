// The commands that make a task graph and change what it holds: init, add,
// plan, dep and delete. (edit and import have files of their own.)

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
)

func cmdInit(e *env) error {
	if err := e.wantArgs(0); err != nil {
		return err
	}
	if err := e.besideFiles("init"); err != nil {
		return err
	}
	if e.storeURL != "" {
		return e.withPostgres(true, func(s store, created bool) error {
			return e.printInit(initJSON{Graph: e.graph, Created: created})
		})
	}
	dir, err := e.initDir()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	_, statErr := os.Stat(dir)
	created := errors.Is(statErr, os.ErrNotExist)
	var shadowed string
	if created && e.dirFrom == "" {
		if wd, err := os.Getwd(); err == nil {
			shadowed, _ = gitrepo.FindDir(wd)
		}
	}
	s, err := openDir(dir, true)
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.List(e.ctx); readFailed(err) {
		return err
	}
	if err := e.setUpGit(dir); err != nil {
		return err
	}
	if shadowed != "" {
		fmt.Fprintf(e.stderr, "note: commands run under %s now use this graph, not %s\n", filepath.Dir(abs), shadowed)
	}
	return e.printInit(initJSON{Dir: abs, Created: created})
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
	var parent idList
	fs.Var(&parent, "parent", "make the task a child of the task `ID`, which then waits on it")
	maxAttempts := fs.Int("max-attempts", 0, "give the task `N` attempts: a failure or a lapsed lease uses one, and a failure with attempts left retries after the backoff (default: no limit, a failure is final)")
	backoff := fs.Duration("backoff", 0, "wait `DURATION` before the first retry, twice as long before each next (with --max-attempts)")
	maxRuntime := fs.Duration("max-runtime", 0, "end any claim of the task that has run `DURATION`, however its lease is renewed: the attempt lapses and is counted (default: no cap)")
	window := fs.Duration("progress-window", 0, "end any claim of the task that has gone `DURATION` without progress — the claim, a note — however its lease is renewed (default: none)")
	needsApproval := fs.Bool("needs-approval", false, "hold the task until someone approves it (taskgraph approve ID); no one can claim it before")
	check := fs.String("check", "", "the `NAME` of a check in checks.json beside the task files that must pass before the task completes (done runs it)")
	var accept textList
	fs.Var(&accept, "accept", "an acceptance item, in words (`TEXT`; repeat for several): what the task must achieve")
	var notBefore, due whenFlag
	fs.Var(&notBefore, "not-before", "defer the task: not ready before `TIME` (RFC 3339, 2006-01-02, 15:04 today, or a duration from now such as 2h)")
	fs.Var(&due, "due", "when the task should be done, `TIME` as for --not-before: shown, sorted and filtered (list --overdue), never enforced")
	return func(e *env) error {
		if len(e.args) != 1 {
			return usagef("want the subject as one argument (quote it)")
		}
		if len(parent) > 1 {
			return usagef("--parent takes one task ID: a task has one parent")
		}
		if *maxAttempts < 0 || *maxAttempts > taskgraph.MaxAttemptsLimit {
			return usagef("--max-attempts %d: want 0 (no limit) to %d", *maxAttempts, taskgraph.MaxAttemptsLimit)
		}
		if *backoff < 0 || *backoff > taskgraph.MaxBackoff {
			return usagef("--backoff %v: want 0 to %v", *backoff, taskgraph.MaxBackoff)
		}
		if *maxRuntime < 0 || *maxRuntime > taskgraph.MaxLiveness {
			return usagef("--max-runtime %v: want 0 (no cap) to %v", *maxRuntime, taskgraph.MaxLiveness)
		}
		if *window < 0 || *window > taskgraph.MaxLiveness {
			return usagef("--progress-window %v: want 0 (none) to %v", *window, taskgraph.MaxLiveness)
		}
		return e.withStore(func(s store) error {
			existed := false
			if *key != "" {
				all, err := s.List(e.ctx)
				if readFailed(err) {
					return err
				}
				existed = slices.ContainsFunc(all, func(t taskgraph.Task) bool { return t.Key == *key })
			}
			t, err := s.Create(e.ctx, taskgraph.NewTask{Subject: e.args[0], Description: *desc, BlockedBy: after, Blocks: blocks,
				Priority: priority.value(), Labels: labels, Key: *key,
				MaxAttempts: *maxAttempts, Backoff: *backoff, NotBefore: notBefore.t, Due: due.t, Parent: first(parent),
				MaxRuntime: *maxRuntime, ProgressWindow: *window, NeedsApproval: *needsApproval, CreatedVia: taskgraph.ViaCLI,
				Check: *check, Acceptance: accept})
			if err != nil {
				return err
			}
			return e.printAdded(s, t, existed)
		})
	}
}

// maxPlanFile is the largest plan file, in bytes, that plan reads.
const maxPlanFile = 64 << 20

func cmdPlan(e *env) error {
	if err := e.wantArgs(1); err != nil {
		return usagef("want a plan FILE (or - for stdin)")
	}
	r, err := e.openInput(e.args[0])
	if err != nil {
		return err
	}
	defer r.Close()
	// Read at most maxPlanFile (and a byte, to tell): /dev/zero or an
	// endless pipe is refused instead of read until memory runs out.
	data, err := io.ReadAll(io.LimitReader(r, maxPlanFile+1))
	if err != nil {
		return err
	}
	if len(data) > maxPlanFile {
		return fmt.Errorf("%s: the plan is larger than %d MiB: split it into several plans (tasks of one may name those of another by key)", e.args[0], maxPlanFile>>20)
	}
	plan, err := agenttools.ParsePlan(data)
	if err != nil {
		return fmt.Errorf("%s: %w", e.args[0], err)
	}
	return e.withStore(func(s store) error {
		before, err := s.List(e.ctx)
		if readFailed(err) {
			return err
		}
		existed := map[string]bool{}
		for _, t := range before {
			if t.Key != "" {
				existed[t.Key] = true
			}
		}
		tasks, err := s.CreatePlan(e.ctx, plan)
		if err != nil {
			return err
		}
		return e.printPlanned(s, tasks, existed)
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
				return e.printChanged(t, nil, "%s already depends on %s; nothing changed\n", idText(id), idText(blocker))
			case !add && !has:
				return fmt.Errorf("%s is not blocked by %s (it depends on %s); nothing changed", idText(id), idText(blocker), idsText(t.BlockedBy))
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
				return e.printChanged(t, err, "%s is now blocked by %s\n", idText(id), idText(blocker))
			}
			return e.printChanged(t, err, "%s is no longer blocked by %s\n", idText(id), idText(blocker))
		}
	})
}

func flagsDelete(fs *flag.FlagSet) func(e *env) error {
	detach := fs.Bool("detach", false, "also remove this task from the blockedBy of the tasks that depend on it, and from its children as their parent")
	force := forceFlag(fs, "delete")
	return func(e *env) error {
		var opts []taskgraph.DeleteOption
		if *detach {
			opts = append(opts, taskgraph.Detach())
		}
		return e.withTask(func(s store, t taskgraph.Task) error {
			if err := e.refuseHeld(t, *force, "deletes it"); err != nil {
				return err
			}
			if len(t.Blocks) > 0 && !*detach {
				return fmt.Errorf("tasks %s depend on %s: remove those edges first (taskgraph dep rm), or delete with --detach", idsText(t.Blocks), idText(t.ID))
			}
			if err := s.Delete(e.ctx, t.ID, opts...); err != nil {
				return err
			}
			return e.printDeleted(t)
		})
	}
}

func cmdNote(e *env) error {
	ids, err := e.argIDs(2, 0)
	if err != nil {
		return err
	}
	if err := taskgraph.Rules.NoteArgs(e.owner, e.args[1]); err != nil {
		return usagef("%v", err)
	}
	return e.withStore(func(s store) error {
		t, err := s.Note(e.ctx, ids[0], e.owner, e.args[1])
		return e.printChanged(t, err, "Noted on %s: %s\n", idText(t.ID), t.Subject)
	})
}

// whenFlag is a time on the command line: RFC 3339, a date (local
// midnight), a time of day (today, local), or a duration from now.
type whenFlag struct{ t time.Time }

func (w *whenFlag) String() string {
	if w.t.IsZero() {
		return ""
	}
	return w.t.Format(time.RFC3339)
}

func (w *whenFlag) Set(v string) error {
	t, err := parseWhen(v, time.Now())
	if err != nil {
		return err
	}
	w.t = t
	return nil
}

// parseWhen reads a time as whenFlag does, relative to now.
func parseWhen(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, now.Location()); err == nil {
			return t, nil
		}
	}
	if t, err := time.ParseInLocation("15:04", v, now.Location()); err == nil {
		y, m, d := now.Date()
		return time.Date(y, m, d, t.Hour(), t.Minute(), 0, 0, now.Location()), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: give RFC 3339 (2026-12-05T14:00:00Z), a date (2026-12-05), a time today (14:00) or a duration from now (2h)", v)
}

func flagsLiveness(fs *flag.FlagSet) func(e *env) error {
	maxRuntime := fs.Duration("max-runtime", 0, "the label's default max runtime, `DURATION` (0: none)")
	window := fs.Duration("progress-window", 0, "the label's default no-progress window, `DURATION` (0: none)")
	return func(e *env) error {
		switch len(e.args) {
		case 0:
			return e.withStore(func(s store) error {
				all, err := s.LivenessDefaults(e.ctx)
				if err != nil {
					return err
				}
				if e.json {
					return e.printJSON(all)
				}
				for _, l := range slices.Sorted(maps.Keys(all)) {
					fmt.Fprintf(e.stdout, "%s max runtime %v, no-progress window %v\n", l, all[l].MaxRuntime, all[l].ProgressWindow)
				}
				return nil
			})
		case 1:
			d := taskgraph.LivenessDefault{MaxRuntime: *maxRuntime, ProgressWindow: *window}
			if err := taskgraph.Rules.LivenessDefaultArgs(e.args[0], d); err != nil {
				return usagef("liveness %s: %v", e.args[0], reasonOf(err))
			}
			return e.withStore(func(s store) error {
				if err := s.SetLivenessDefault(e.ctx, e.args[0], d); err != nil {
					return err
				}
				if d == (taskgraph.LivenessDefault{}) {
					fmt.Fprintf(e.stdout, "No default liveness for %s\n", e.args[0])
				} else {
					fmt.Fprintf(e.stdout, "Tasks created with %s get max runtime %v, no-progress window %v (0: none)\n", e.args[0], d.MaxRuntime, d.ProgressWindow)
				}
				return nil
			})
		}
		return usagef("want LABEL and --max-runtime, --progress-window, or nothing to list the defaults")
	}
}

func cmdLimit(e *env) error {
	switch len(e.args) {
	case 0:
		return e.withStore(func(s store) error {
			limits, err := s.Limits(e.ctx)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(limits)
			}
			for _, l := range slices.Sorted(maps.Keys(limits)) {
				fmt.Fprintf(e.stdout, "%s %d\n", l, limits[l])
			}
			return nil
		})
	case 2:
		n, err := strconv.Atoi(e.args[1])
		if err != nil {
			return usagef("limit %s %s: N is a whole number, 0 to remove the limit", e.args[0], e.args[1])
		}
		if err := taskgraph.Rules.LimitArgs(e.args[0], n); err != nil {
			return usagef("limit %s %s: %v", e.args[0], e.args[1], reasonOf(err))
		}
		return e.withStore(func(s store) error {
			if err := s.SetLimit(e.ctx, e.args[0], n); err != nil {
				return err
			}
			if n == 0 {
				fmt.Fprintf(e.stdout, "No limit on %s\n", e.args[0])
			} else {
				fmt.Fprintf(e.stdout, "At most %d tasks labelled %s in progress at once\n", n, e.args[0])
			}
			return nil
		})
	}
	return usagef("want LABEL N, or nothing to list the limits")
}

// first returns the first id of ids, or 0.
func first(ids idList) taskgraph.ID {
	if len(ids) == 0 {
		return 0
	}
	return ids[0]
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// stranded returns the tasks that cause strands, as of now, in s.
func (e *env) stranded(s store, cause taskgraph.ID) ([]taskgraph.Task, error) {
	b, err := s.Board(e.ctx)
	if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
		return nil, err
	}
	var out []taskgraph.Task
	for _, t := range b.Stranded {
		if b.StrandedBy[t.ID] == cause {
			out = append(out, t)
		}
	}
	return out, nil
}

// printOutcome ends fail and cancel: the task, and what it strands.
func (e *env) printOutcome(s store, verb string, t taskgraph.Task) error {
	stranded, err := e.stranded(s, t.ID)
	if err != nil {
		return err
	}
	if e.json {
		return e.printJSON(struct {
			Task     taskJSON   `json:"task"`
			Stranded []taskJSON `json:"stranded"`
		}{toJSON(t), toJSONs(stranded)})
	}
	fmt.Fprintf(e.stdout, "%s #%d: %s (%s)\n", verb, t.ID, t.Subject, t.Reason)
	if len(stranded) > 0 {
		parts := make([]string, len(stranded))
		for i, u := range stranded {
			parts[i] = fmt.Sprintf("#%d %s", u.ID, u.Subject)
		}
		fmt.Fprintf(e.stdout, "Cannot start until #%d is reopened: %s\n", t.ID, strings.Join(parts, ", "))
	}
	return nil
}

// idAndReason parses ID REASON.
func (e *env) idAndReason() (taskgraph.ID, string, error) {
	if len(e.args) != 2 {
		return 0, "", usagef("want the task id and the reason (quote it)")
	}
	id, err := parseID(e.args[0])
	if err != nil {
		return 0, "", err
	}
	if strings.TrimSpace(e.args[1]) == "" {
		return 0, "", usagef("the reason must not be empty: say why, for whoever reopens the task")
	}
	return id, e.args[1], nil
}

func flagsFail(fs *flag.FlagSet) func(e *env) error {
	force := fs.Bool("force", false, "fail the task even if someone else holds it")
	return func(e *env) error {
		id, reason, err := e.idAndReason()
		if err != nil {
			return err
		}
		return e.withStore(func(s store) error {
			t, err := s.Fail(e.ctx, id, e.holder(*force), reason)
			if err != nil {
				return e.held(err, "fails it")
			}
			return e.printOutcome(s, "Failed", t)
		})
	}
}

func flagsCancel(fs *flag.FlagSet) func(e *env) error {
	force := fs.Bool("force", false, "cancel the task even if someone else holds it")
	return func(e *env) error {
		id, reason, err := e.idAndReason()
		if err != nil {
			return err
		}
		return e.withStore(func(s store) error {
			t, err := s.Get(e.ctx, id)
			if err != nil {
				return err
			}
			if t.Status == taskgraph.InProgress && t.Owner != e.owner && !*force {
				return e.held(&taskgraph.ClaimedError{ID: t.ID, Owner: t.Owner}, "cancels it")
			}
			if t, err = s.Cancel(e.ctx, id, reason); err != nil {
				return err
			}
			return e.printOutcome(s, "Cancelled", t)
		})
	}
}

func cmdReopen(e *env) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Reopen(e.ctx, id)
		return e.printChanged(t, err, "Reopened #%d: %s\n", t.ID, t.Subject)
	})
}

func cmdExplain(e *env) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		all, err := s.List(e.ctx)
		if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
			return err
		}
		ex, err := taskgraph.Explain(all, id, time.Now())
		if err != nil {
			return err
		}
		if e.json {
			type blocker struct {
				ID        taskgraph.ID     `json:"id"`
				Subject   string           `json:"subject"`
				Status    taskgraph.Status `json:"status"`
				Owner     string           `json:"owner,omitempty"`
				LeaseLeft string           `json:"leaseLeft,omitempty"`
			}
			out := struct {
				ID         taskgraph.ID    `json:"id"`
				State      taskgraph.State `json:"state"`
				Waiting    []blocker       `json:"waiting"`
				Missing    []taskgraph.ID  `json:"missing"`
				StrandedBy taskgraph.ID    `json:"strandedBy,omitempty"`
				Text       string          `json:"text"`
			}{ID: id, State: ex.State, Waiting: []blocker{}, Missing: ex.Missing, StrandedBy: ex.StrandedBy, Text: ex.Text}
			if out.Missing == nil {
				out.Missing = []taskgraph.ID{}
			}
			for _, w := range ex.Waiting {
				b := blocker{ID: w.ID, Subject: w.Subject, Status: w.Status, Owner: w.Owner}
				if w.LeaseLeft != 0 {
					b.LeaseLeft = w.LeaseLeft.Round(time.Second).String()
				}
				out.Waiting = append(out.Waiting, b)
			}
			return e.printJSON(out)
		}
		fmt.Fprintf(e.stdout, "#%d: %s\n%s\n", ex.Task.ID, ex.Task.Subject, describe(errors.New(ex.Text)))
		for _, w := range ex.Waiting {
			line := fmt.Sprintf("  waits on #%d: %s (%s", w.ID, w.Subject, w.Status)
			if w.Owner != "" {
				line += ", " + w.Owner
			}
			switch {
			case w.LeaseLeft > 0:
				line += fmt.Sprintf(", lease %s left", w.LeaseLeft.Round(time.Second))
			case w.LeaseLeft < 0:
				line += ", lease lapsed"
			}
			fmt.Fprintln(e.stdout, line+")")
		}
		return nil
	})
}

// maxPlanFile is the largest plan file, in bytes, that plan reads.
const maxPlanFile = 64 << 20

func cmdPlan(e *env) error {
	if err := e.wantArgs(1); err != nil {
		return usagef("want a plan FILE (or - for stdin)")
	}
	var r io.Reader = e.stdin
	if name := e.args[0]; name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
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
		if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
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
		if e.json {
			return e.printJSON(toJSONs(tasks))
		}
		all, err := s.List(e.ctx)
		if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
			return err
		}
		v := viewOf(all)
		created := 0
		for _, t := range tasks {
			line := strings.Replace(e.line(t, v), fmt.Sprintf("#%d: ", t.ID), fmt.Sprintf("#%d %s: ", t.ID, t.Key), 1)
			if existed[t.Key] {
				line += " (existed; unchanged)"
			} else {
				created++
			}
			fmt.Fprintln(e.stdout, line)
		}
		fmt.Fprintf(e.stdout, "Created %d of %d tasks in %s\n", created, len(tasks), e.where())
		return nil
	})
}

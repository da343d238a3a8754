// How each command reports what it did or found: its lines of text, or
// the JSON object --json prints instead.

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
	"github.com/taskgraph-dev/taskgraph/internal/jsontext"
	"github.com/taskgraph-dev/taskgraph/internal/taskview"
)

// initJSON is init's report: the directory, or with --store the graph.
type initJSON struct {
	Dir     string `json:"dir,omitempty"`
	Graph   string `json:"graph,omitempty"`
	Created bool   `json:"created"`
}

// printInit reports init: the task graph created, or found already there.
func (e *env) printInit(r initJSON) error {
	if e.json {
		return e.printJSON(r)
	}
	switch {
	case e.storeURL != "" && r.Created:
		fmt.Fprintf(e.stdout, "Initialized empty task graph %q\n", r.Graph)
	case e.storeURL != "":
		fmt.Fprintf(e.stdout, "Task graph %q already exists\n", r.Graph)
	case r.Created:
		fmt.Fprintf(e.stdout, "Initialized empty task graph in %s\n", r.Dir)
	default:
		fmt.Fprintf(e.stdout, "Task graph already in %s\n", r.Dir)
	}
	return nil
}

// printAdded reports add: the task created with its open blockers, or the
// task that already had its key.
func (e *env) printAdded(s store, t taskgraph.Task, existed bool) error {
	if e.json {
		return e.printJSON(toJSON(t))
	}
	if existed {
		fmt.Fprintf(e.stdout, "%s already has key %q: %s (nothing added)\n", idText(t.ID), t.Key, t.Subject)
		return nil
	}
	fmt.Fprintf(e.stdout, "Created %s: %s", idText(t.ID), t.Subject)
	if open := agenttools.OpenBlockers(t, e.blockerStatuses(s, t)); len(open) > 0 {
		fmt.Fprintf(e.stdout, " (blocked by: %s)", idsText(open))
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// printListed reports list: the tasks shown of all, or why there are none.
// A limit leaves more out only when it shows some.
func (e *env) printListed(all, shown []*taskgraph.Task, more int, v view) error {
	if len(shown) == 0 && !e.json {
		if len(all) == 0 {
			fmt.Fprintln(e.stdout, "No tasks.")
		} else {
			fmt.Fprintln(e.stdout, "No tasks match.")
		}
		return nil
	}
	return e.printPicked(shown, more, v)
}

// printNoneReady says on stderr, unless --json, that no task (with labels)
// is ready, and where the others stand.
func (e *env) printNoneReady(labels []string, b taskgraph.Board) {
	if e.json {
		return
	}
	what := "No task is ready"
	if len(labels) > 0 {
		what = "No task with labels " + strings.Join(labels, ", ") + " is ready"
	}
	fmt.Fprintf(e.stderr, "%s (%d awaiting approval, %d deferred, %d held back by a limit, %d blocked, %d in progress, %d stranded by a failed or cancelled task).\n", what, len(b.AwaitingApproval), len(b.Deferred), len(b.Limited), len(b.Blocked), len(b.InProgress), len(b.Stranded))
}

// printBoard reports board: each of the board's lists under its state,
// the tasks one a line (ready ones in claim order, the others by id); with
// --json an object keyed by state, each an array of tasks with their
// state.
func (e *env) printBoard(b taskgraph.Board) error {
	v := viewOfBoard(b)
	if e.json {
		// As printJSON prints a map of state to tasks (the states in
		// order), each task written as list --json writes it.
		lists := b.Lists()
		slices.SortFunc(lists, func(x, y taskgraph.StateList) int { return strings.Compare(string(x.State), string(y.State)) })
		w := bufio.NewWriterSize(e.stdout, 64<<10)
		w.WriteString("{")
		var j taskOut
		for k, g := range lists {
			if k > 0 {
				w.WriteString(",")
			}
			w.Write(jsontext.AppendString([]byte("\n  "), string(g.State), false))
			w.WriteString(": ")
			if err := writeJSONArray(w, "  ", len(g.Tasks), func(i int) any { j = v.toJSON(g.Tasks[i]); return &j }); err != nil {
				return err
			}
		}
		w.WriteString("\n}\n")
		return w.Flush()
	}
	for _, g := range b.Lists() {
		title := strings.ReplaceAll(string(g.State), "_", " ")
		fmt.Fprintf(e.stdout, "%s%s (%d)\n", strings.ToUpper(title[:1]), title[1:], len(g.Tasks))
		for _, t := range g.Tasks {
			fmt.Fprintf(e.stdout, "  %s\n", e.line(t, v))
		}
	}
	return nil
}

// nextOutcomeJSON is what next --json prints when it claims nothing.
type nextOutcomeJSON struct {
	// Outcome is "nothing_ready" (exit status 3), "finished" (5) or
	// "stalled" (6: finished, with tasks failed or stranded).
	Outcome  string         `json:"outcome"`
	Message  string         `json:"message"`
	Failed   []taskgraph.ID `json:"failed,omitempty"`
	Stranded []taskgraph.ID `json:"stranded,omitempty"`
}

// cannotClaim ends next when it claimed nothing, as b stands: it says why
// (on stderr, or as JSON on stdout) and returns the exit status, 3 if
// work is left, 5 if the graph is finished, 6 if it is finished with
// tasks failed or stranded. labels are next's --label and parent its
// --under (0: none), b the board of the tasks under it; hint adds how to
// wait; waited is how long next --wait waited, if it gave up.
func (e *env) cannotClaim(b taskgraph.Board, labels []string, parent taskgraph.ID, hint bool, waited time.Duration) error {
	out := nextOutcomeJSON{Outcome: "finished", Message: "finished: nothing left to do" + underText(parent)}
	code := exitFinished
	var stalled *taskgraph.StalledError
	switch {
	case errors.As(b.Stall(), &stalled):
		out = nextOutcomeJSON{Outcome: "stalled", Failed: stalled.Failed, Stranded: stalled.Stranded,
			Message: stallText(stalled, parent)}
		code = exitStalled
	case !b.Finished():
		out = nextOutcomeJSON{Outcome: "nothing_ready", Message: e.nothingReadyText(b, labels, parent, hint, waited)}
		code = exitUnavailable
	}
	if e.json {
		if err := e.printJSON(out); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stderr, "taskgraph next: %s\n", out.Message)
	}
	return errQuiet{code}
}

// stallText says which tasks keep a finished graph (or what is under
// parent, if not 0) from being all done: "finished, but 3 tasks failed or
// are stranded: #4 (failed), #5, #10 (stranded); …".
func stallText(s *taskgraph.StalledError, parent taskgraph.ID) string {
	var parts []string
	for _, g := range []struct {
		ids  []taskgraph.ID
		what string
	}{{s.Failed, "failed"}, {s.Stranded, "stranded"}} {
		if len(g.ids) > 0 {
			names := make([]string, len(g.ids))
			for i, id := range g.ids {
				names[i] = idText(id)
			}
			parts = append(parts, strings.Join(names, ", ")+" ("+g.what+")")
		}
	}
	return fmt.Sprintf("finished%s, but %d tasks failed or are stranded: %s; reopen a failed task (taskgraph reopen ID) to go on, and taskgraph explain ID says what strands a task",
		underText(parent), len(s.Failed)+len(s.Stranded), strings.Join(parts, ", "))
}

// nothingReadyText says why next claimed nothing while work is left, as b
// stands: what is in progress and when the first lease that could free a
// task lapses, or the missing tasks that the blocked ones wait on.
func (e *env) nothingReadyText(b taskgraph.Board, labels []string, parent taskgraph.ID, hint bool, waited time.Duration) string {
	var parts []string
	if len(b.Ready) > 0 {
		// Ready, but not for these labels.
		parts = append(parts, fmt.Sprintf("%d ready without the labels %s", len(b.Ready), strings.Join(labels, ", ")))
	}
	if n := len(b.InProgress); n > 0 {
		mine := 0
		var lapse time.Duration
		now := time.Now()
		for _, t := range b.InProgress {
			if t.Owner == e.owner {
				mine++
			}
			if left := t.LeaseExpiresAt.Sub(now); !t.LeaseExpiresAt.IsZero() && left > 0 && hasAll(t.Labels, labels) && (lapse == 0 || left < lapse) {
				lapse = left
			}
		}
		switch mine {
		case 0:
			parts = append(parts, fmt.Sprintf("%d in progress by others", n))
		case n:
			parts = append(parts, fmt.Sprintf("%d in progress by you (%s)", n, e.owner))
		default:
			parts = append(parts, fmt.Sprintf("%d in progress (%d by you)", n, mine))
		}
		if lapse > 0 {
			parts = append(parts, "the next lease lapses in "+lapse.Round(time.Second).String())
		} else {
			parts = append(parts, "held without a lease that lapses")
		}
	} else if len(b.Blocked) > 0 {
		var missing []taskgraph.ID
		for _, ids := range b.Missing {
			for _, id := range ids {
				if !slices.Contains(missing, id) {
					missing = append(missing, id)
				}
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			parts = append(parts, fmt.Sprintf("%d blocked on missing tasks %s (create them, or remove the edges with taskgraph dep rm)",
				len(b.Blocked), taskview.FormatIDs(missing)))
		} else {
			parts = append(parts, fmt.Sprintf("%d blocked", len(b.Blocked)))
		}
	}
	if len(b.Limited) > 0 {
		parts = append(parts, fmt.Sprintf("%d held back by a label's limit (taskgraph limit)", len(b.Limited)))
	}
	if len(b.AwaitingApproval) > 0 {
		parts = append(parts, fmt.Sprintf("%d awaiting approval (taskgraph approve ID)", len(b.AwaitingApproval)))
	}
	if len(b.Deferred) > 0 { // by NotBefore: the first can start first
		parts = append(parts, fmt.Sprintf("%d deferred, the first until %s", len(b.Deferred), when(b.Deferred[0].NotBefore)))
	}
	what := "nothing ready now" + underText(parent)
	if waited > 0 {
		what += fmt.Sprintf(" (waited %s)", waited)
	}
	s := what + ": " + strings.Join(parts, ", ")
	if hint {
		// The same command, as given (the same graph, identity, labels
		// and parent), waiting: --wait first, before a "--" there may be.
		s += "; " + shellLine(append([]string{"taskgraph", "next", "--wait"}, e.given...)) + " waits for one"
	}
	return s
}

// underText is what next says of where it looked: " under #5" with
// --under 5, nothing without.
func underText(parent taskgraph.ID) string {
	if parent == 0 {
		return ""
	}
	return " under " + idText(parent)
}

// printCompleted reports done: the task, and the tasks it made ready.
func (e *env) printCompleted(c taskgraph.Completion) error {
	if e.json {
		return e.printJSON(struct {
			Task      taskOut   `json:"task"`
			Unblocked []taskOut `json:"unblocked"`
		}{toJSON(c.Task), toJSONs(c.Unblocked)})
	}
	fmt.Fprintf(e.stdout, "Completed %s: %s\n", idText(c.Task.ID), c.Task.Subject)
	if len(c.Unblocked) > 0 {
		fmt.Fprintf(e.stdout, "Unblocked: %s\n", taskNames(c.Unblocked))
	}
	return nil
}

// printOutcome reports fail and cancel (verb): the task, and the tasks it
// strands.
func (e *env) printOutcome(verb string, t taskgraph.Task, stranded []taskgraph.Task) error {
	if e.json {
		return e.printJSON(struct {
			Task     taskOut   `json:"task"`
			Stranded []taskOut `json:"stranded"`
		}{toJSON(t), toJSONs(stranded)})
	}
	if t.Status == taskgraph.Pending { // a failure with attempts left: a retry
		fmt.Fprintf(e.stdout, "%s %s: %s (attempt %d of %d); it will be retried from %s\n", verb, idText(t.ID), t.Subject, t.Attempts, t.MaxAttempts, when(t.NotBefore))
		return nil
	}
	fmt.Fprintf(e.stdout, "%s %s: %s (%s)\n", verb, idText(t.ID), t.Subject, t.Reason)
	if len(stranded) > 0 {
		fmt.Fprintf(e.stdout, "Cannot start until %s is reopened: %s\n", idText(t.ID), taskNames(stranded))
	}
	return nil
}

// printDeleted reports delete: the task, and the tasks it blocked, which
// it no longer blocks.
func (e *env) printDeleted(t taskgraph.Task) error {
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
	fmt.Fprintf(e.stdout, "Deleted %s: %s", idText(t.ID), t.Subject)
	if len(detached) > 0 {
		fmt.Fprintf(e.stdout, " (no longer blocks %s)", idsText(detached))
	}
	fmt.Fprintln(e.stdout)
	return nil
}

// problemJSON is a problem check found, as --json prints it.
type problemJSON struct {
	Kind    taskgraph.ProblemKind `json:"kind"`
	Path    string                `json:"path"`
	ID      taskgraph.ID          `json:"id,omitempty"`
	Message string                `json:"message"`
}

// printProblems reports check on dir: its problems, and which durability
// protocol a store on it chooses (none known: Protocol "").
func (e *env) printProblems(dir string, problems []taskgraph.Problem, durability taskgraph.Durability) error {
	if e.json {
		out := []problemJSON{}
		for _, p := range problems {
			out = append(out, problemJSON{p.Kind, p.Path, p.ID, describe(errors.New(p.Message))})
		}
		return e.printJSON(out)
	}
	for _, p := range problems {
		fmt.Fprintln(e.stdout, describe(errors.New(p.String())))
	}
	if len(problems) == 0 {
		fmt.Fprintf(e.stdout, "%s: no problems\n", dir)
	}
	if durability.Protocol != "" {
		fmt.Fprintf(e.stdout, "durability: %s\n", durability)
	}
	return nil
}

// blockerJSON is a task an explained task waits on, as --json prints it.
type blockerJSON struct {
	ID        taskgraph.ID     `json:"id"`
	Subject   string           `json:"subject"`
	Status    taskgraph.Status `json:"status"`
	Owner     string           `json:"owner,omitempty"`
	LeaseLeft string           `json:"leaseLeft,omitempty"`
}

// printExplanation reports explain of task id: where it stands, and each
// task it waits on with its owner and lease.
func (e *env) printExplanation(id taskgraph.ID, ex taskgraph.Explanation) error {
	if e.json {
		out := struct {
			ID         taskgraph.ID    `json:"id"`
			State      taskgraph.State `json:"state"`
			Waiting    []blockerJSON   `json:"waiting"`
			Missing    []taskgraph.ID  `json:"missing"`
			StrandedBy taskgraph.ID    `json:"strandedBy,omitempty"`
			Text       string          `json:"text"`
		}{ID: id, State: ex.State, Waiting: []blockerJSON{}, Missing: ex.Missing, StrandedBy: ex.StrandedBy, Text: ex.Text}
		if out.Missing == nil {
			out.Missing = []taskgraph.ID{}
		}
		for _, w := range ex.Waiting {
			b := blockerJSON{ID: w.ID, Subject: w.Subject, Status: w.Status, Owner: w.Owner}
			if w.LeaseLeft != 0 {
				b.LeaseLeft = w.LeaseLeft.Round(time.Second).String()
			}
			out.Waiting = append(out.Waiting, b)
		}
		return e.printJSON(out)
	}
	fmt.Fprintf(e.stdout, "%s: %s\n%s\n", idText(ex.Task.ID), ex.Task.Subject, describe(errors.New(ex.Text)))
	for _, w := range ex.Waiting {
		line := fmt.Sprintf("  waits on %s: %s (%s", idText(w.ID), w.Subject, w.Status)
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
}

// printEvent reports one change watch saw: a line of text, or with --json
// one JSON object a line.
func (e *env) printEvent(ev taskgraph.Event) {
	if e.json {
		line, _ := json.Marshal(struct {
			Kind taskgraph.EventKind `json:"kind"`
			Task taskOut             `json:"task"`
		}{ev.Kind, toJSON(ev.Task)})
		fmt.Fprintf(e.stdout, "%s\n", line)
		return
	}
	fmt.Fprintf(e.stdout, "%s %-9s %s: %s (%s", time.Now().Format("15:04:05"), ev.Kind, idText(ev.Task.ID), ev.Task.Subject, ev.Task.Status)
	if ev.Task.Owner != "" {
		fmt.Fprintf(e.stdout, ", %s", ev.Task.Owner)
	}
	fmt.Fprintln(e.stdout, ")")
}

// idPair is an imported task's id in its export and in the graph.
type idPair struct {
	Old taskgraph.ID `json:"old"`
	New taskgraph.ID `json:"new"`
}

// printImported reports import: how many tasks, and with renumbered their
// new ids.
func (e *env) printImported(pairs []idPair, renumbered bool) error {
	if e.json {
		return e.printJSON(struct {
			Imported int      `json:"imported"`
			IDs      []idPair `json:"ids"`
		}{len(pairs), pairs})
	}
	fmt.Fprintf(e.stdout, "Imported %d tasks into %s\n", len(pairs), e.where())
	if renumbered && len(pairs) > 0 {
		parts := make([]string, len(pairs))
		for i, p := range pairs {
			parts[i] = fmt.Sprintf("%d -> %d", p.Old, p.New)
		}
		fmt.Fprintf(e.stdout, "Renumbered: %s\n", strings.Join(parts, ", "))
	}
	return nil
}

// printPlanned reports plan: each task of the plan as list shows it, with
// its key, those whose key existed before marked, and how many it created.
func (e *env) printPlanned(s store, tasks []taskgraph.Task, existed map[string]bool) error {
	if e.json {
		return e.printJSON(toJSONs(tasks))
	}
	all, err := s.List(e.ctx)
	if readFailed(err) {
		return err
	}
	v := viewOf(all, nil) // a plan's new tasks: their limits do not matter
	created := 0
	for _, t := range tasks {
		line := strings.Replace(e.line(t, v), v.idText(t.ID)+": ", v.idText(t.ID)+" "+t.Key+": ", 1)
		if existed[t.Key] {
			line += " (existed; unchanged)"
		} else {
			created++
		}
		fmt.Fprintln(e.stdout, line)
	}
	fmt.Fprintf(e.stdout, "Created %d of %d tasks in %s\n", created, len(tasks), e.where())
	return nil
}

// shellLine is args as a shell command line that runs them: each argument
// a shell would split or expand is single-quoted (a leading "=" too, which
// zsh expands).
func shellLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || a[0] == '=' || strings.ContainsFunc(a, func(r rune) bool {
			return !strings.ContainsRune("-_./:=@%+,", r) && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
		}) {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

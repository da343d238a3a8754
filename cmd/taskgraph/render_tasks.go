// How tasks print: a task's one-line and full forms, lists of them, their
// colours, and the JSON output every command writes with.

package main

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

func (e *env) printJSON(v any) error {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printJSONArray prints the n elements elem gives as printJSON prints a
// slice of them, byte for byte, one element at a time: a list of 100,000
// tasks is never held whole, as values or as text.
func (e *env) printJSONArray(n int, elem func(i int) any) error {
	w := bufio.NewWriterSize(e.stdout, 64<<10)
	if err := writeJSONArray(w, "", n, elem); err != nil {
		return err
	}
	w.WriteString("\n")
	return w.Flush()
}

// writeJSONArray writes the n elements elem gives as an Encoder with
// SetIndent(prefix, "  ") writes a slice of them, the first line not
// prefixed, no newline at the end. A task (a *taskOut) is written
// indented by cliView itself, not compact and indented again by
// encoding/json.
func writeJSONArray(w *bufio.Writer, prefix string, n int, elem func(i int) any) error {
	if n == 0 {
		w.WriteString("[]")
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix+"  ", "  ")
	var out []byte
	w.WriteString("[")
	for i := range n {
		if i > 0 {
			w.WriteString(",")
		}
		w.WriteString("\n" + prefix + "  ")
		v := elem(i)
		if j, ok := v.(*taskOut); ok {
			var err error
			if out, err = j.appendIndent(out[:0], prefix+"  ", "  "); err == nil {
				w.Write(out)
				continue
			}
		}
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return err
		}
		w.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	w.WriteString("\n" + prefix + "]")
	return nil
}

// view is what a task's line needs to know of the whole graph: the status
// and the state of every task, and which pending tasks are stranded, by
// what.
type view struct {
	status     map[taskgraph.ID]taskgraph.Status
	state      map[taskgraph.ID]taskgraph.State
	strandedBy map[taskgraph.ID]taskgraph.ID
	parent     map[taskgraph.ID]taskgraph.ID // of the tasks that have one
	// shared holds the numbers of the short forms (%N) that name more
	// than one task of the graph, whose tasks a line names by full id;
	// nil when the view does not hold the whole graph, or no id is a
	// block's.
	shared map[taskgraph.ID]bool
}

// idText is how a line names task id: its short form (idText), or its
// full id where the short form names several tasks of the graph, so that
// what a person reads can be typed back.
func (v view) idText(id taskgraph.ID) string {
	if v.shared[id%idBlock] {
		return "#" + strconv.FormatInt(int64(id), 10)
	}
	return idText(id)
}

// idsText is idsText with the view's names.
func (v view) idsText(ids []taskgraph.ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strings.TrimPrefix(v.idText(id), "#")
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// viewOf returns the view of a whole graph.
func viewOf(all []taskgraph.Task, limits map[string]int) view {
	return viewOfBoard(taskgraph.Resolve(all, taskgraph.WithLimits(limits)))
}

// viewOfBoard returns the view of an unfiltered board.
func viewOfBoard(b taskgraph.Board) view {
	n := 0
	for _, g := range b.Lists() {
		n += len(g.Tasks)
	}
	v := view{status: make(map[taskgraph.ID]taskgraph.Status, n), state: make(map[taskgraph.ID]taskgraph.State, n), strandedBy: b.StrandedBy,
		parent: map[taskgraph.ID]taskgraph.ID{}}
	blocks := false // some id is a block's: a short form may be shared
	for _, g := range b.Lists() {
		for _, t := range g.Tasks {
			v.status[t.ID] = t.Status
			v.state[t.ID] = g.State
			if t.Parent != 0 {
				v.parent[t.ID] = t.Parent
			}
			blocks = blocks || t.ID >= idBlock
		}
	}
	if blocks {
		seen := make(map[taskgraph.ID]bool, n)
		v.shared = map[taskgraph.ID]bool{}
		for id := range v.status {
			if seen[id%idBlock] {
				v.shared[id%idBlock] = true
			}
			seen[id%idBlock] = true
		}
	}
	return v
}

// allOf returns every task of an unfiltered board, by id: pointers into
// its lists, not copies (a Task is hundreds of bytes).
func allOf(b taskgraph.Board) []*taskgraph.Task {
	var all []*taskgraph.Task
	for _, l := range b.Lists() {
		all = append(all, pointersTo(l.Tasks)...)
	}
	slices.SortFunc(all, func(a, b *taskgraph.Task) int { return cmp.Compare(a.ID, b.ID) })
	return all
}

// pointersTo returns pointers to the tasks of ts, in order.
func pointersTo(ts []taskgraph.Task) []*taskgraph.Task {
	ps := make([]*taskgraph.Task, len(ts))
	for i := range ts {
		ps[i] = &ts[i]
	}
	return ps
}

// under reports whether task id is under root: a child, a child's child,
// ... (a loop of parent links ends the walk).
func (v view) under(id, root taskgraph.ID) bool {
	for range len(v.parent) + 1 {
		p, ok := v.parent[id]
		if !ok {
			return false
		}
		if p == root {
			return true
		}
		id = p
	}
	return false
}

// viewOfReady is the view of ready tasks alone: each is ready, and so
// every blocker of each is completed.
func viewOfReady(ready []taskgraph.Task) view {
	v := view{status: map[taskgraph.ID]taskgraph.Status{}, state: map[taskgraph.ID]taskgraph.State{}}
	for _, t := range ready {
		v.status[t.ID], v.state[t.ID] = t.Status, taskgraph.StateReady
		for _, b := range t.BlockedBy {
			v.status[b] = taskgraph.Completed
		}
	}
	return v
}

// printTasks prints ts, one a line, or as a JSON array of tasks with their
// state.
func (e *env) printTasks(ts []*taskgraph.Task, v view) error {
	if e.json {
		// One taskOut for them all, each written before the next is
		// made: not a copy of each boxed in an interface.
		var j taskOut
		return e.printJSONArray(len(ts), func(i int) any { j = v.toJSON(*ts[i]); return &j })
	}
	for _, t := range ts {
		fmt.Fprintln(e.stdout, e.line(*t, v))
	}
	return nil
}

// printPicked prints the tasks a listing picked, and then, unless --json,
// how many more its limit left out.
func (e *env) printPicked(shown []*taskgraph.Task, more int, v view) error {
	if err := e.printTasks(shown, v); err != nil {
		return err
	}
	if more > 0 && !e.json {
		fmt.Fprintf(e.stdout, "… and %d more (raise --limit or filter)\n", more)
	}
	return nil
}

// taskNames names ts for a message: "#1 subject, #2 subject".
func taskNames(ts []taskgraph.Task) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = idText(t.ID) + " " + t.Subject
	}
	return strings.Join(parts, ", ")
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
	s := fmt.Sprintf("%s %s: %s", marker, v.idText(t.ID), t.Subject)
	if t.Priority != taskgraph.DefaultPriority {
		s += " " + t.Priority.String()
	}
	if len(t.Labels) > 0 {
		s += e.paint(dim, " {"+strings.Join(t.Labels, ", ")+"}")
	}
	if t.Owner != "" && t.Status != taskgraph.Pending {
		s += e.paint(dim, " @"+t.Owner)
	}
	now := time.Now()
	if t.Overdue(now) {
		s += e.paint(red, " (overdue: due "+when(t.Due)+")")
	} else if !t.Due.IsZero() && !t.Status.Terminal() {
		s += e.paint(dim, " (due "+when(t.Due)+")")
	}
	if t.Status != taskgraph.Pending {
		return s
	}
	if v.state[t.ID] == taskgraph.StateLimited {
		s += e.paint(dim, " (held back by a limit)")
	}
	if t.AwaitingApproval() {
		s += e.paint(red, " (awaiting approval)")
	}
	if t.Deferred(now) {
		s += e.paint(dim, " (not before "+when(t.NotBefore)+")")
	}
	if by := v.strandedBy[t.ID]; by != 0 {
		return s + e.paint(red, fmt.Sprintf(" (cannot start: %s %s)", v.idText(by), v.status[by]))
	}
	if open := agenttools.OpenBlockers(t, v.status); len(open) > 0 {
		s += e.paint(red, " (blocked by: "+v.idsText(open)+")")
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

// standing returns where t stands, for show: its status, with a pending
// task's open blockers or "ready", and why a pending task that is not
// ready waits (the explanation's text; "" if it cannot be had).
func (e *env) standing(s store, t taskgraph.Task) (state, why string) {
	state = string(t.Status)
	if t.Status != taskgraph.Pending {
		return state, ""
	}
	open := agenttools.OpenBlockers(t, e.blockerStatuses(s, t))
	if t.AwaitingApproval() {
		state += ", awaiting approval (taskgraph approve " + idText(t.ID) + ")"
		if len(open) == 0 {
			return state, ""
		}
	}
	if len(open) == 0 && t.Deferred(time.Now()) {
		return state + ", deferred until " + when(t.NotBefore), ""
	}
	if len(open) == 0 {
		return state + ", ready", ""
	}
	state += ", blocked by " + idsText(open)
	if all, err := s.List(e.ctx); !readFailed(err) {
		if ex, err := taskgraph.Explain(all, t.ID, time.Now()); err == nil {
			why = ex.Text
		}
	}
	return state, why
}

// stateOf returns where t, a task of s, stands: its status, or for a
// pending task ready, blocked or stranded (taskgraph.Explain).
func (e *env) stateOf(s store, t taskgraph.Task) (taskgraph.State, error) {
	if t.Status != taskgraph.Pending {
		return taskgraph.State(t.Status), nil
	}
	all, err := s.List(e.ctx)
	if readFailed(err) {
		return "", err
	}
	ex, err := taskgraph.Explain(all, t.ID, time.Now())
	return ex.State, err
}

// printTask prints one task in full, or as a JSON object with its state.
func (e *env) printTask(s store, t taskgraph.Task) error {
	if e.json {
		j := toJSON(t)
		state, err := e.stateOf(s, t)
		if err != nil {
			return err
		}
		j.State = state
		return e.printJSON(j)
	}
	w := e.stdout
	state, why := e.standing(s, t)
	fmt.Fprintf(w, "%s: %s\n", idText(t.ID), t.Subject)
	row := func(name, value string) {
		if value != "" {
			fmt.Fprintf(w, "%-12s %s\n", name+":", value)
		}
	}
	if t.ID >= idBlock { // the full id, for the places that want it
		row("id", strconv.FormatInt(int64(t.ID), 10))
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
	if t.Extra != nil && t.Extra.MaxRuntime > 0 {
		row("max runtime", t.Extra.MaxRuntime.String())
	}
	if t.Extra != nil && t.Extra.ProgressWindow > 0 {
		row("no progress", t.Extra.ProgressWindow.String()+" ends a claim (a claim or a note is progress)")
	}
	if _, c := t.Lapse(); c != taskgraph.ClockLease {
		row("claim ends", t.ClockText(time.Now()))
	}
	if t.Extra != nil && t.Extra.Check != "" {
		row("check", t.Extra.Check+" (must pass before it completes: taskgraph done runs it)")
	}
	if t.Extra != nil {
		for i, a := range t.Extra.Acceptance {
			row(fmt.Sprintf("acceptance %d", i+1), a)
		}
	}
	row("prev owner", t.PrevOwner)
	if t.Extra != nil {
		row("created via", t.Extra.CreatedVia)
		for i, l := range t.Extra.Links {
			name := ""
			if i == 0 {
				name = "links:"
			}
			fmt.Fprintf(w, "%-12s %s (%s)\n", name, l.Ref, stamp(l.At))
		}
	}
	if t.Status == taskgraph.Pending {
		row("not before", stamp(t.NotBefore))
	}
	row("due", stamp(t.Due))
	if t.MaxAttempts > 0 {
		row("attempts", fmt.Sprintf("%d used of %d, backoff %v", t.Attempts, t.MaxAttempts, t.Backoff))
	}
	if t.Parent != 0 {
		row("parent", idText(t.Parent))
	}
	row("depends on", idsText(t.BlockedBy))
	row("blocks", idsText(t.Blocks))
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
	if all, err := s.List(e.ctx); !readFailed(err) {
		if r, children := taskgraph.RollupOf(all, t.ID); r.Total > 0 {
			v := viewOf(all, nil)
			fmt.Fprintf(w, "\nchildren, %s:\n", r)
			byID := map[taskgraph.ID]taskgraph.Task{}
			for _, c := range all {
				byID[c.ID] = c
			}
			for _, id := range children {
				fmt.Fprintf(w, "  %s\n", e.line(byID[id], v))
			}
		}
	}
	e.printNotes(t, len(t.Notes))
	if n := len(t.History); n > 0 {
		fmt.Fprintln(w, "\nhistory (taskgraph history for all):")
		for _, h := range t.History[max(n-showHistory, 0):] {
			fmt.Fprintf(w, "  %s\n", historyLine(h))
		}
	}
	return nil
}

// when renders a time for a line: local, to the minute.
func when(t time.Time) string { return t.Local().Format("2006-01-02 15:04") }

// showHistory is how many of a task's last transitions show prints.
const showHistory = 5

// printNotes prints the latest n notes of t, the latest first.
func (e *env) printNotes(t taskgraph.Task, n int) {
	if len(t.Notes) == 0 || n <= 0 {
		return
	}
	fmt.Fprintln(e.stdout, "\nnotes, latest first:")
	for i := len(t.Notes) - 1; i >= max(len(t.Notes)-n, 0); i-- {
		note := t.Notes[i]
		fmt.Fprintf(e.stdout, "  %s %s: %s\n", note.At.Local().Format(time.RFC3339), note.Author, note.Text)
	}
}

// historyLine renders one transition: when, what, who, and its detail.
func historyLine(h taskgraph.Transition) string {
	line := h.At.Local().Format(time.RFC3339) + " " + string(h.Event)
	switch {
	case h.By == "":
	case h.Event == taskgraph.HistoryLapsed:
		line += ", held by " + h.By
	default:
		line += " by " + h.By
	}
	if h.Detail != "" {
		line += ": " + h.Detail
	}
	return line
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

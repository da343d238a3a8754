// Listings: task_list's filters and limit, which tasks a listing shows
// when not all fit, and how each is written on its line.

package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// DefaultListLimit is how many tasks task_list shows unless the model
// asks for another limit: with its structured output, about 750 tokens of
// a realistic plan whose ids have twelve digits.
const DefaultListLimit = 15

// ccListLimit is how many tasks Claude Code's TaskList shows, which has no
// structured output: about 900 tokens of a realistic plan.
const ccListLimit = 50

// maxListLimit bounds the limit a model may ask for.
const maxListLimit = 10000

// listInput is task_list's input, decoded: the filters and the limit.
type listInput struct {
	status *taskgraph.Status
	owner  string
	label  string
	ready  bool
	limit  int
}

func decodeList(raw json.RawMessage) (listInput, error) {
	var (
		status, owner, label *string
		ready                *bool
		limit                *int64
		in                   = listInput{limit: DefaultListLimit}
	)
	err := decode(raw, field{"status", &status}, field{"owner", &owner}, field{"label", &label},
		field{"ready", &ready}, field{"limit", &limit})
	if err != nil {
		return in, err
	}
	if status != nil {
		s, err := taskgraph.ParseStatus(*status)
		if err != nil {
			return in, err
		}
		in.status = &s
	}
	if owner != nil {
		in.owner = *owner
	}
	if label != nil && *label != "" {
		// A label no task can carry is a mistake, not a filter that
		// matches nothing.
		if _, err := taskgraph.Rules.Labels("label", []string{*label}); err != nil {
			var inv *taskgraph.InvalidError
			if errors.As(err, &inv) {
				return in, fmt.Errorf("label: %s", inv.Reason)
			}
			return in, err
		}
		in.label = *label
	}
	in.ready = ready != nil && *ready
	if limit != nil {
		if *limit < 1 || *limit > maxListLimit {
			return in, fmt.Errorf("limit must be between 1 and %d, not %d", maxListLimit, *limit)
		}
		in.limit = int(*limit)
	}
	return in, nil
}

// statuses are every status a task can have, in lifecycle order.
var statuses = []taskgraph.Status{taskgraph.Pending, taskgraph.InProgress, taskgraph.Completed, taskgraph.Failed, taskgraph.Cancelled}

func (h handlers) list(ctx context.Context, raw json.RawMessage) (reply, error) {
	in, err := decodeList(raw)
	if err != nil {
		return reply{}, err
	}
	all, corrupt, err := h.listAll(ctx)
	if err != nil {
		return reply{}, err
	}
	sel := selectTasks(all, in)
	out := listOutput{Tasks: make([]TaskView, len(sel.shown)), More: len(sel.hidden)}
	for i, t := range sel.shown {
		out.Tasks[i] = viewOf(t, sel.board.state[t.ID], false)
	}
	if corrupt != nil {
		out.Warning = unreadable(corrupt)
	}
	return reply{renderSelection(sel, corrupt), out}, nil
}

// listAll returns every task the store can read. corrupt is the store's
// ErrCorrupt error when some task files could not be read, which the
// listings warn of and the other callers pass over; err is any other
// error, and then all is nil.
func (h handlers) listAll(ctx context.Context) (all []taskgraph.Task, corrupt, err error) {
	all, err = h.store.List(ctx)
	if err != nil && !errors.Is(err, taskgraph.ErrCorrupt) {
		return nil, nil, err
	}
	return all, err, nil
}

// unreadable is the line that ends a listing of a store some of whose
// task files could not be read (corrupt, from listAll).
func unreadable(corrupt error) string {
	return "Warning: some task files are unreadable and were skipped: " + corrupt.Error()
}

// listRank orders the tasks a truncated list shows first: what is being
// worked on, then what can start, then what waits, then what cannot start,
// then the outcomes.
func listRank(t taskgraph.Task, b *board) int {
	switch {
	case t.Status == taskgraph.InProgress:
		return 0
	case b.ready[t.ID]:
		return 1
	case t.Status == taskgraph.Pending && b.strandedBy[t.ID] == 0:
		return 2
	case t.Status == taskgraph.Pending:
		return 3
	case t.Status == taskgraph.Failed:
		return 4
	case t.Status == taskgraph.Completed:
		return 5
	default:
		return 6
	}
}

// board is what the listings need to know of the whole graph.
type board struct {
	status     map[taskgraph.ID]taskgraph.Status
	state      map[taskgraph.ID]taskgraph.State
	ready      map[taskgraph.ID]bool
	strandedBy map[taskgraph.ID]taskgraph.ID
}

func boardOf(all []taskgraph.Task) *board {
	b := &board{status: make(map[taskgraph.ID]taskgraph.Status, len(all)), state: make(map[taskgraph.ID]taskgraph.State, len(all)),
		ready: map[taskgraph.ID]bool{}}
	for _, t := range all {
		b.status[t.ID] = t.Status
	}
	r := taskgraph.Resolve(all)
	for _, l := range r.Lists() {
		for _, t := range l.Tasks {
			b.state[t.ID] = l.State
		}
	}
	for _, t := range r.Ready {
		b.ready[t.ID] = true
	}
	b.strandedBy = r.StrandedBy
	if b.strandedBy == nil {
		b.strandedBy = map[taskgraph.ID]taskgraph.ID{}
	}
	return b
}

// selection is what a listing shows: the tasks that match, by id, up to
// the limit, and those left out.
type selection struct {
	all    int // tasks in the graph
	shown  []taskgraph.Task
	hidden []taskgraph.Task
	board  *board // of the whole graph
}

// selectTasks picks the tasks of all that in selects. When more match than
// in.limit, it keeps the tasks in progress first, then the ready, then the
// other pending, then the finished; shown is sorted by id.
func selectTasks(all []taskgraph.Task, in listInput) selection {
	sel := selection{all: len(all), board: boardOf(all)}
	var match []taskgraph.Task
	for _, t := range all {
		if (in.status == nil || t.Status == *in.status) && (in.owner == "" || t.Owner == in.owner) &&
			(!in.ready || sel.board.ready[t.ID]) && (in.label == "" || slices.Contains(t.Labels, in.label)) {
			match = append(match, t)
		}
	}
	sel.shown = match
	if len(match) > in.limit {
		sorted := slices.Clone(match)
		sort.SliceStable(sorted, func(i, j int) bool {
			ri, rj := listRank(sorted[i], sel.board), listRank(sorted[j], sel.board)
			return ri < rj || ri == rj && sorted[i].ID < sorted[j].ID
		})
		sel.shown, sel.hidden = sorted[:in.limit], sorted[in.limit:]
	}
	sort.Slice(sel.shown, func(i, j int) bool { return sel.shown[i].ID < sel.shown[j].ID })
	return sel
}

// renderSelection prints sel's tasks as the reference's list_all does,
// one a line by id, showing only the blockers that are not completed yet,
// and ends with a line that says how many it left out; corrupt is
// listAll's.
func renderSelection(sel selection, corrupt error) string {
	var lines []string
	switch {
	case sel.all == 0 && corrupt == nil:
		return "No tasks."
	case len(sel.shown) == 0 && corrupt == nil:
		lines = append(lines, "No tasks match.")
	}
	for _, t := range sel.shown {
		lines = append(lines, listLine(t, sel.board.status, sel.board.strandedBy))
	}
	if len(sel.hidden) > 0 {
		lines = append(lines, fmt.Sprintf("… and %d more: %s (use limit or filters)", len(sel.hidden), countByStatus(sel.hidden)))
	}
	if corrupt != nil {
		lines = append(lines, unreadable(corrupt))
	}
	return strings.Join(lines, "\n")
}

// markers are the list's status boxes: the reference's three, and ours.
var markers = map[taskgraph.Status]string{taskgraph.Pending: "[ ]", taskgraph.InProgress: "[>]", taskgraph.Completed: "[x]",
	taskgraph.Failed: "[!]", taskgraph.Cancelled: "[-]"}

// listLine is one task as the reference's list prints it, with what this
// one adds only when it says something: a priority other than the
// default, labels, and for a pending task that cannot start because a
// blocker failed or was cancelled, that task (strandedBy; nil for none).
func listLine(t taskgraph.Task, status map[taskgraph.ID]taskgraph.Status, strandedBy map[taskgraph.ID]taskgraph.ID) string {
	line := fmt.Sprintf("%s #%d: %s", markers[t.Status], t.ID, t.Subject)
	if t.Priority != taskgraph.DefaultPriority {
		line += " " + t.Priority.String()
	}
	if len(t.Labels) > 0 {
		line += " {" + strings.Join(t.Labels, ", ") + "}"
	}
	if t.Owner != "" && t.Status != taskgraph.Pending {
		line += " @" + t.Owner
	}
	if t.Status != taskgraph.Pending {
		return line
	}
	if by := strandedBy[t.ID]; by != 0 {
		return line + fmt.Sprintf(" (cannot start: #%d %s)", by, status[by])
	}
	if open := OpenBlockers(t, status); len(open) > 0 {
		line += " (blocked by: " + FormatIDs(open) + ")"
	}
	return line
}

// countByStatus says how many of ts have each status: "3 pending, 1
// completed".
func countByStatus(ts []taskgraph.Task) string {
	n := map[taskgraph.Status]int{}
	for _, t := range ts {
		n[t.Status]++
	}
	var parts []string
	for _, s := range statuses {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// OpenBlockers returns the blockers of t that are not completed, by the
// statuses in status; a blocker missing from status counts as open. It is
// what "blocked by" means in every listing of the tools and the taskgraph
// command.
func OpenBlockers(t taskgraph.Task, status map[taskgraph.ID]taskgraph.Status) []taskgraph.ID {
	var open []taskgraph.ID
	for _, b := range t.BlockedBy {
		if status[b] != taskgraph.Completed {
			open = append(open, b)
		}
	}
	return open
}

// This file holds the text of Agree: the results of the operations and
// their arguments rendered as text, one task per line, so that a
// difference names the task and the field; and the report of the first
// difference, a disagreement.

package taskgraphtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// disagreement is how the two stores first differed.
type disagreement struct {
	step    int      // 0-based; -1 for the checks after the last step
	op      string   // the operation, as Go-like source
	ref     string   // what MemStore returned
	got     string   // what the store under test returned
	history []string // the operations before it, most recent last
}

func (d *disagreement) Error() string {
	var b strings.Builder
	if d.step < 0 {
		fmt.Fprintf(&b, "after the last step, %s: the stores disagree", d.op)
	} else {
		fmt.Fprintf(&b, "step %d, %s: the stores disagree", d.step, d.op)
	}
	refLines, gotLines := strings.Split(d.ref, "\n"), strings.Split(d.got, "\n")
	for i := range max(len(refLines), len(gotLines)) {
		r, g := lineAt(refLines, i), lineAt(gotLines, i)
		if r != g {
			fmt.Fprintf(&b, "\n  first difference, line %d of the result:\n    MemStore: %s\n    store:    %s", i+1, r, g)
			break
		}
	}
	if len(d.ref)+len(d.got) < 4000 {
		fmt.Fprintf(&b, "\n  MemStore returned:\n%s\n  the store returned:\n%s", indent(d.ref), indent(d.got))
	}
	if len(d.history) > 0 {
		fmt.Fprintf(&b, "\n  the operations before it:")
		for _, h := range d.history {
			fmt.Fprintf(&b, "\n    %s", h)
		}
	}
	return b.String()
}

func lineAt(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(nothing)"
}

func indent(s string) string { return "    " + strings.ReplaceAll(s, "\n", "\n    ") }

func taskResult(t tg.Task, err error) result {
	if err != nil {
		return errResult(err)
	}
	return result{text: fmtTask(t), task: t}
}

func errResult(err error) result {
	return result{text: fmtErr(err), err: err}
}

func listResult(ts []tg.Task, err error) result {
	if err != nil {
		return errResult(err)
	}
	lines := []string{fmt.Sprintf("list of %d:", len(ts))}
	for _, t := range ts {
		lines = append(lines, "  "+fmtTask(t))
	}
	return result{text: strings.Join(lines, "\n")}
}

func boardResult(b tg.Board, err error) result {
	if err != nil {
		return errResult(err)
	}
	var lines []string
	for _, part := range b.Lists() {
		name := strings.ReplaceAll(string(part.State), "_", " ") // "in progress", as the transcripts have always read
		lines = append(lines, fmt.Sprintf("board %s, %d:", name, len(part.Tasks)))
		for _, t := range part.Tasks {
			lines = append(lines, "  "+fmtTask(t))
		}
	}
	var missing []string
	for _, id := range slices.Sorted(maps.Keys(b.Missing)) {
		if len(b.Missing[id]) > 0 {
			missing = append(missing, fmt.Sprintf("%d:%v", id, b.Missing[id]))
		}
	}
	lines = append(lines, fmt.Sprintf("board missing: %v", missing))
	var stranded []string
	for _, id := range slices.Sorted(maps.Keys(b.StrandedBy)) {
		stranded = append(stranded, fmt.Sprintf("%d:%d", id, b.StrandedBy[id]))
	}
	lines = append(lines, fmt.Sprintf("board stranded by: %v, finished: %v", stranded, b.Finished()))
	return result{text: strings.Join(lines, "\n")}
}

var sentinels = []struct {
	name string
	err  error
}{
	{"ErrNotFound", tg.ErrNotFound}, {"ErrBlocked", tg.ErrBlocked}, {"ErrClaimed", tg.ErrClaimed},
	{"ErrConflict", tg.ErrConflict}, {"ErrCycle", tg.ErrCycle}, {"ErrInvalid", tg.ErrInvalid},
	{"ErrCorrupt", tg.ErrCorrupt}, {"ErrNoReady", tg.ErrNoReady}, {"ErrClosed", tg.ErrClosed},
}

// fmtErr renders an error as its text and the sentinels it matches.
func fmtErr(err error) string {
	if err == nil {
		return "ok"
	}
	var is []string
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			is = append(is, s.name)
		}
	}
	return fmt.Sprintf("error %q matching %v", err.Error(), is)
}

// taskFields are the exported fields of Task, in declaration order.
var taskFields = func() []reflect.StructField {
	var out []reflect.StructField
	for _, sf := range reflect.VisibleFields(reflect.TypeFor[tg.Task]()) {
		if sf.IsExported() && !sf.Anonymous {
			out = append(out, sf)
		}
	}
	return out
}()

// fmtTask renders every exported field of t, so that a field added to
// Task takes part without a change here.
func fmtTask(t tg.Task) string {
	v := reflect.ValueOf(t)
	var b strings.Builder
	b.WriteByte('{')
	for i, sf := range taskFields {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(sf.Name)
		b.WriteByte(':')
		switch x := v.FieldByIndex(sf.Index).Interface().(type) {
		case time.Time:
			b.WriteString(fmtTime(x))
		case []tg.ID:
			b.WriteString(fmtIDs(x))
		case map[string]any:
			b.WriteString(fmtMeta(x))
		case string:
			b.WriteString(strconv.Quote(x))
		case tg.Status:
			b.WriteString(strconv.Quote(string(x)))
		case []tg.Note:
			for _, n := range x {
				fmt.Fprintf(&b, "[%s %q %q]", fmtTime(n.At), n.Author, n.Text)
			}
		case []tg.Transition:
			for _, h := range x {
				fmt.Fprintf(&b, "[%s %s %q %q %d]", fmtTime(h.At), h.Event, h.By, h.Detail, h.Count)
			}
		case *tg.Extra:
			if x != nil { // its fields, not its address
				fmt.Fprintf(&b, "{MaxRuntime:%v ProgressWindow:%v NeedsApproval:%v CreatedVia:%q Links:[", x.MaxRuntime, x.ProgressWindow, x.NeedsApproval, x.CreatedVia)
				for _, l := range x.Links {
					fmt.Fprintf(&b, "[%q %s]", l.Ref, fmtTime(l.At))
				}
				fmt.Fprintf(&b, "] Check:%q Acceptance:%q}", x.Check, x.Acceptance)
			}
		default:
			fmt.Fprint(&b, x)
		}
	}
	b.WriteByte('}')
	return b.String()
}

func fmtNewTask(nt tg.NewTask) string {
	var f []string
	f = append(f, fmt.Sprintf("Subject:%q", nt.Subject))
	if nt.Description != "" {
		f = append(f, fmt.Sprintf("Description:%q", nt.Description))
	}
	if nt.Owner != "" {
		f = append(f, fmt.Sprintf("Owner:%q", nt.Owner))
	}
	if nt.BlockedBy != nil {
		f = append(f, "BlockedBy:"+fmtIDs(nt.BlockedBy))
	}
	if nt.Blocks != nil {
		f = append(f, "Blocks:"+fmtIDs(nt.Blocks))
	}
	if nt.Metadata != nil {
		f = append(f, "Metadata:"+fmtMeta(nt.Metadata))
	}
	if nt.Priority != tg.DefaultPriority {
		f = append(f, fmt.Sprint("Priority:", nt.Priority.Level()))
	}
	if nt.Labels != nil {
		f = append(f, fmt.Sprintf("Labels:%q", nt.Labels))
	}
	if nt.Key != "" {
		f = append(f, fmt.Sprintf("Key:%q", nt.Key))
	}
	if nt.MaxAttempts != 0 || nt.Backoff != 0 {
		f = append(f, fmt.Sprintf("MaxAttempts:%d Backoff:%v", nt.MaxAttempts, nt.Backoff))
	}
	if !nt.NotBefore.IsZero() {
		f = append(f, "NotBefore:"+fmtTime(nt.NotBefore))
	}
	if nt.Parent != 0 || nt.Under != "" {
		f = append(f, fmt.Sprintf("Parent:%d Under:%q", nt.Parent, nt.Under))
	}
	if nt.After != nil {
		f = append(f, fmt.Sprintf("After:%q", nt.After))
	}
	if nt.MaxRuntime != 0 || nt.ProgressWindow != 0 {
		f = append(f, fmt.Sprintf("MaxRuntime:%v ProgressWindow:%v", nt.MaxRuntime, nt.ProgressWindow))
	}
	if nt.Check != "" || nt.Acceptance != nil {
		f = append(f, fmt.Sprintf("Check:%q Acceptance:%q", nt.Check, nt.Acceptance))
	}
	return "{" + strings.Join(f, " ") + "}"
}

func fmtPlan(nts []tg.NewTask) string {
	var parts []string
	for _, nt := range nts {
		parts = append(parts, fmtNewTask(nt))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func fmtPatch(p tg.Patch) string {
	var f []string
	if p.Subject != nil {
		f = append(f, fmt.Sprintf("Subject:%q", *p.Subject))
	}
	if p.Description != nil {
		f = append(f, fmt.Sprintf("Description:%q", *p.Description))
	}
	if p.Status != nil {
		f = append(f, fmt.Sprintf("Status:%q", *p.Status))
	}
	if p.Owner != nil {
		f = append(f, fmt.Sprintf("Owner:%q", *p.Owner))
	}
	for _, e := range []struct {
		name string
		ids  []tg.ID
	}{{"AddBlockedBy", p.AddBlockedBy}, {"RemoveBlockedBy", p.RemoveBlockedBy}, {"AddBlocks", p.AddBlocks}, {"RemoveBlocks", p.RemoveBlocks}} {
		if e.ids != nil {
			f = append(f, e.name+":"+fmtIDs(e.ids))
		}
	}
	if p.NotBefore != nil {
		f = append(f, "NotBefore:"+fmtTime(*p.NotBefore))
	}
	if p.MaxAttempts != nil {
		f = append(f, fmt.Sprintf("MaxAttempts:%d", *p.MaxAttempts))
	}
	if p.Backoff != nil {
		f = append(f, fmt.Sprintf("Backoff:%v", *p.Backoff))
	}
	if p.MaxRuntime != nil {
		f = append(f, fmt.Sprintf("MaxRuntime:%v", *p.MaxRuntime))
	}
	if p.ProgressWindow != nil {
		f = append(f, fmt.Sprintf("ProgressWindow:%v", *p.ProgressWindow))
	}
	if p.Check != nil {
		f = append(f, fmt.Sprintf("Check:%q", *p.Check))
	}
	if p.Acceptance != nil {
		f = append(f, fmt.Sprintf("Acceptance:%q", *p.Acceptance))
	}
	if p.Metadata != nil {
		f = append(f, "Metadata:"+fmtMeta(p.Metadata))
	}
	if p.Priority != nil {
		f = append(f, fmt.Sprint("Priority:", p.Priority.Level()))
	}
	if p.Labels != nil {
		f = append(f, fmt.Sprintf("Labels:%q", *p.Labels))
	}
	if p.IfRev != 0 {
		f = append(f, fmt.Sprint("IfRev:", p.IfRev))
	}
	return "{" + strings.Join(f, " ") + "}"
}

func fmtIDs(ids []tg.ID) string {
	if len(ids) == 0 {
		return "[]"
	}
	return fmt.Sprint(ids)
}

// fmtMeta renders metadata as JSON, keys sorted; {} and nil alike.
func fmtMeta(m map[string]any) string {
	if len(m) == 0 {
		return "{}"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprintf("%v", m)
	}
	return string(b)
}

// fmtTime renders an instant in UTC to the microsecond, the precision of
// the coarsest store (PostgreSQL).
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
}

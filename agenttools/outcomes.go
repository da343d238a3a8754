// Outcomes other than success: task_fail, which says what it leaves unable
// to start, and the line of task_get and TaskGet that says why a task waits.

package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// get shows a task in full and, for one that cannot start now, the line
// that says why.
func (h handlers) get(ctx context.Context, id taskgraph.ID) (reply, error) {
	t, err := h.store.Get(ctx, id)
	if err != nil {
		return reply{}, err
	}
	ex, err := h.explainPending(ctx, t)
	if err != nil {
		return reply{}, err
	}
	v := viewOf(t, taskgraph.StateReady, true)
	why := ""
	if ex != nil {
		why = whyText(ex)
		v.State, v.Why = ex.State, why
	}
	out := render(t)
	if len(t.BlockedBy) > 0 { // a parent's children are among its blockers
		all, _, err := h.listAll(ctx)
		if err != nil {
			return reply{}, err
		}
		if r, children := taskgraph.RollupOf(all, t.ID); r.Total > 0 {
			out += fmt.Sprintf("\nChildren %s: %s", FormatIDs(children), r)
		}
	}
	if why != "" {
		out += "\n" + why
	}
	return reply{out, getOutput{Task: v}}, nil
}

// explainPending explains t if it is a pending task that cannot start,
// and returns nil if it can, is not pending, or went away meanwhile.
func (h handlers) explainPending(ctx context.Context, t taskgraph.Task) (*taskgraph.Explanation, error) {
	if t.Status != taskgraph.Pending {
		return nil, nil
	}
	all, _, err := h.listAll(ctx)
	if err != nil {
		return nil, err
	}
	ex, err := taskgraph.Explain(all, t.ID, time.Now())
	if err != nil || ex.State == taskgraph.StateReady {
		return nil, nil
	}
	return &ex, nil
}

// whyText is an explanation's line, with id lists as the tools write them.
func whyText(ex *taskgraph.Explanation) string {
	return goIDList.ReplaceAllStringFunc(ex.Text, func(m string) string { return strings.ReplaceAll(m, " ", ", ") })
}

// goIDList matches an id list as Go prints a slice, "[1 2 3]", to be
// written as every list of the tools is, "[1, 2, 3]".
var goIDList = regexp.MustCompile(`\[(\d+(?: \d+)+)\]`)

func (h handlers) fail(ctx context.Context, raw json.RawMessage) (string, error) {
	var reason *string
	tid, err := decodeID(raw, "task_id", taskID, field{"reason", &reason})
	if err != nil {
		return "", err
	}
	if reason == nil || strings.TrimSpace(*reason) == "" {
		return "", errors.New("reason is required: say why the task failed, for whoever reopens it")
	}
	t, err := h.store.Fail(ctx, tid, h.cfg.owner, *reason)
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("Failed #%d: %s", t.ID, t.Subject)
	if t.Status == taskgraph.Pending { // attempts remain: it will be retried
		return out + fmt.Sprintf("\nAttempt %d of %d; it will be retried from %s.", t.Attempts, t.MaxAttempts, t.NotBefore.UTC().Format(time.RFC3339)), nil
	}
	all, _, err := h.listAll(ctx)
	if err != nil {
		return "", err
	}
	b := taskgraph.Resolve(all)
	var stranded []string
	for _, s := range b.Stranded {
		if b.StrandedBy[s.ID] == t.ID {
			stranded = append(stranded, fmt.Sprintf("#%d %s", s.ID, s.Subject))
		}
	}
	if len(stranded) > 0 {
		out += "\nThese cannot start until it is reopened: " + strings.Join(stranded, ", ")
	}
	return out, nil
}

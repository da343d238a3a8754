// The handlers of New's tools that create, claim, complete, release, renew
// or delete one task (the others are in claims, list, plan and outcomes).

package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// handlers run the tools' calls, on store, as the agent cfg describes.
type handlers struct {
	store taskgraph.Store
	cfg   config
}

// byID makes a tool whose only input is a task_id out of f, which is given
// the decoded id.
func byID[R any](f func(ctx context.Context, id taskgraph.ID) (R, error)) func(context.Context, json.RawMessage) (R, error) {
	return func(ctx context.Context, raw json.RawMessage) (R, error) {
		tid, err := decodeID(raw, "task_id", taskID)
		if err != nil {
			var none R
			return none, err
		}
		return f(ctx, tid)
	}
}

func (h handlers) create(ctx context.Context, raw json.RawMessage) (string, error) {
	var (
		subject, description, key, check *string
		blockedBy                        []int64
		priority                         *priorityArg
		parent                           *int64
		labels, acceptance               []string
	)
	if err := decode(raw, field{"subject", &subject}, field{"description", &description}, field{"blockedBy", &blockedBy},
		field{"priority", &priority}, field{"labels", &labels}, field{"key", &key}, field{"parent", &parent},
		field{"check", &check}, field{"acceptance", &acceptance}); err != nil {
		return "", err
	}
	if subject == nil {
		return "", errors.New("subject is required")
	}
	by, err := taskIDs("blockedBy", blockedBy)
	if err != nil {
		return "", err
	}
	nt := taskgraph.NewTask{Subject: *subject, BlockedBy: by, Labels: labels, Acceptance: acceptance}
	if check != nil {
		nt.Check = *check
	}
	if description != nil {
		nt.Description = *description
	}
	if key != nil {
		nt.Key = *key
	}
	if nt.Priority, err = newPriority(priority); err != nil {
		return "", err
	}
	if parent != nil {
		ps, err := taskIDs("parent", []int64{*parent})
		if err != nil {
			return "", err
		}
		nt.Parent = ps[0]
	}
	nt.CreatedVia = h.cfg.via
	t, err := h.store.Create(ctx, nt)
	if err != nil {
		return "", err
	}
	return render(t), nil
}

func (h handlers) claimOpts() []taskgraph.ClaimOption {
	if h.cfg.lease != 0 { // a negative one is refused by the store, as everywhere
		return []taskgraph.ClaimOption{taskgraph.WithLease(h.cfg.lease)}
	}
	return nil
}

func (h handlers) claim(ctx context.Context, id taskgraph.ID) (string, error) {
	t, err := h.store.Claim(ctx, id, h.cfg.owner, h.claimOpts()...)
	if err != nil {
		return "", err
	}
	return claimed(t), nil
}

// claimed is the reply to a claim: the task, headed by what happened.
func claimed(t taskgraph.Task) string {
	return fmt.Sprintf("Claimed #%d: %s\n%s", t.ID, t.Subject, render(t))
}

func (h handlers) claimNext(ctx context.Context, raw json.RawMessage) (reply, error) {
	labels, under, err := h.decodeWhere(raw)
	if err != nil {
		return reply{}, err
	}
	opts := h.claimOpts()
	all := append(slices.Clone(h.cfg.labels), labels...) // the agent's role, then the model's
	if len(all) > 0 {
		opts = append(opts, taskgraph.WithLabels(all...))
	}
	if under != 0 {
		opts = append(opts, taskgraph.WithUnder(under))
	}
	t, err := h.store.ClaimNext(ctx, h.cfg.owner, opts...)
	if errors.Is(err, taskgraph.ErrNoReady) {
		sorted, _ := h.labelsFor(labels) // ClaimNext took them: valid
		return h.nothingReady(ctx, sorted, under)
	}
	if err != nil {
		return reply{}, err
	}
	v := viewOf(t, "", true)
	return reply{claimed(t), nextOutput{Outcome: outcomeClaimed, Task: &v}}, nil
}

func (h handlers) complete(ctx context.Context, raw json.RawMessage) (string, error) {
	var result *string
	tid, err := decodeID(raw, "task_id", taskID, field{"result", &result})
	if err != nil {
		return "", err
	}
	var opts []taskgraph.CompleteOption
	if result != nil {
		opts = append(opts, taskgraph.WithResult(*result))
	}
	c, err := h.completeTask(ctx, tid, opts...)
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("Completed #%d: %s", c.Task.ID, c.Task.Subject)
	if len(c.Unblocked) > 0 {
		parts := make([]string, len(c.Unblocked))
		for i, u := range c.Unblocked {
			parts[i] = fmt.Sprintf("#%d %s", u.ID, u.Subject)
		}
		out += "\nUnblocked: " + strings.Join(parts, ", ")
	}
	return out, nil
}

func (h handlers) note(ctx context.Context, raw json.RawMessage) (string, error) {
	var text *string
	tid, err := decodeID(raw, "task_id", taskID, field{"text", &text})
	if err != nil {
		return "", err
	}
	if text == nil {
		return "", errors.New("text is required")
	}
	n, ok := h.store.(taskgraph.Noter)
	if !ok {
		return "", fmt.Errorf("this task store (%T) keeps no notes", h.store)
	}
	t, err := n.Note(ctx, tid, h.cfg.owner, *text)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Noted on #%d: %s", t.ID, t.Subject), nil
}

func (h handlers) release(ctx context.Context, id taskgraph.ID) (string, error) {
	t, err := h.store.Release(ctx, id, h.cfg.owner)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Released #%d: %s", t.ID, t.Subject), nil
}

func (h handlers) renew(ctx context.Context, raw json.RawMessage) (string, error) {
	var seconds *int64
	tid, err := decodeID(raw, "task_id", taskID, field{"seconds", &seconds})
	if err != nil {
		return "", err
	}
	ttl := h.cfg.lease
	switch {
	case seconds != nil:
		if ttl, err = taskgraph.Rules.LeaseSeconds("seconds", *seconds); err == nil {
			err = taskgraph.Rules.RenewArgs(ttl)
		}
		if err != nil {
			return "", asField("seconds", err)
		}
	case ttl <= 0:
		return "", errors.New("seconds is required: claims made here have no lease to renew by default")
	}
	t, err := h.store.Renew(ctx, tid, h.cfg.owner, ttl)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Renewed #%d: %s; the lease now ends at %s", t.ID, t.Subject, t.LeaseExpiresAt.UTC().Format(time.RFC3339)), nil
}

func (h handlers) delete(ctx context.Context, raw json.RawMessage) (string, error) {
	var detach *bool
	tid, err := decodeID(raw, "task_id", taskID, field{"detach", &detach})
	if err != nil {
		return "", err
	}
	t, err := h.deletable(ctx, tid)
	if err != nil {
		return "", err
	}
	var opts []taskgraph.DeleteOption
	if detach != nil && *detach {
		opts = append(opts, taskgraph.Detach())
	}
	err = h.store.Delete(ctx, tid, opts...)
	if errors.Is(err, taskgraph.ErrInvalid) && len(opts) == 0 {
		if t, gerr := h.store.Get(ctx, tid); gerr == nil && len(t.Blocks) > 0 {
			return "", fmt.Errorf("tasks %s depend on task %d: remove those dependencies first (task_update with removeBlockedBy), or call task_delete with detach: true", FormatIDs(t.Blocks), tid)
		}
	}
	if err != nil {
		return "", err
	}
	out := fmt.Sprintf("Deleted #%d: %s", t.ID, t.Subject)
	if len(opts) > 0 && len(t.Blocks) > 0 {
		out += fmt.Sprintf("\nNo longer blocked by it: %s", FormatIDs(t.Blocks))
	}
	return out, nil
}

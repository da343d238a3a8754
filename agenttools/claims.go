// Claims: no tool changes the status or owner of a task another identity
// holds or completed, or deletes it; task_update and TaskUpdate obey it.

package agenttools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskgraph-dev/taskgraph"
)

// maxUpdateTries bounds how often update re-reads a task that changed
// between its decision and its write.
const maxUpdateTries = 8

func (h handlers) update(ctx context.Context, raw json.RawMessage) (string, error) {
	in, err := decodeUpdate(raw)
	if err != nil {
		return "", err
	}
	t, err := h.apply(ctx, in, "task_claim")
	if err != nil {
		return "", err
	}
	return render(t), nil
}

// apply makes the change in asks for and returns the task as it is after
// it; claimWith names how another agent takes a task, for the message
// that refuses an owner argument naming someone else.
func (h handlers) apply(ctx context.Context, in updateInput, claimWith string) (taskgraph.Task, error) {
	if in.owner != nil && *in.owner != "" && *in.owner != h.cfg.owner {
		return taskgraph.Task{}, fmt.Errorf("owner can only be %q (yours) or \"\" (to give back a task you hold): a task's owner is whoever claims it, so another agent takes a task with %s", h.cfg.owner, claimWith)
	}
	for try := 1; ; try++ {
		t, err := h.store.Get(ctx, in.id)
		if err != nil {
			return taskgraph.Task{}, err
		}
		out, err := h.updateOnce(ctx, t, in)
		if errors.Is(err, taskgraph.ErrConflict) && try < maxUpdateTries {
			continue // the task changed since it was read: decide again
		}
		return out, err
	}
}

// updateOnce applies in to t, the task as just read. A write it makes on a
// decision taken from t is conditional on t's rev, so a task that changed
// meanwhile gives ErrConflict and nothing is written.
func (h handlers) updateOnce(ctx context.Context, t taskgraph.Task, in updateInput) (taskgraph.Task, error) {
	me := h.cfg.owner
	want, err := h.target(t, in)
	if err != nil {
		return t, err
	}
	if want != nil {
		if other := othersOwner(t, me); other != "" {
			// Only a claim can take a task someone else holds, and only
			// once their lease has lapsed; the store decides that.
			if !(*want == taskgraph.InProgress && t.Status == taskgraph.InProgress && !in.hasFields()) {
				return t, refusal(t, me, changeStatus)
			}
		}
	}
	switch {
	case want == nil && !in.hasFields():
		return t, nil // nothing to change
	case want == nil:
		return h.store.Update(ctx, t.ID, in.fields)
	case *want == taskgraph.InProgress && !in.hasFields() && t.Status != taskgraph.Completed:
		return h.store.Claim(ctx, t.ID, me, h.claimOpts()...)
	case *want == taskgraph.Completed && !in.hasFields() && t.Status == taskgraph.InProgress:
		c, err := h.completeTask(ctx, t.ID)
		return c.Task, err
	case *want == taskgraph.Pending && !in.hasFields() && t.Status == taskgraph.InProgress:
		return h.store.Release(ctx, t.ID, me)
	case *want == taskgraph.Pending && t.Status.Terminal():
		// Reopen checks that nothing the task blocks has started; the
		// fields go first, so that removing an edge to a started task
		// in the same call lets the reopen through.
		if !in.hasFields() {
			return h.store.Reopen(ctx, t.ID)
		}
		if _, err := h.store.Update(ctx, t.ID, in.fields); err != nil {
			return t, err
		}
		out, err := h.store.Reopen(ctx, t.ID)
		if err != nil {
			// Say exactly what happened: half of the call took effect.
			return out, fmt.Errorf("the other changes were saved, but the task was not reopened: %w", err)
		}
		return out, nil
	}
	p := in.fields
	p.Status, p.IfRev = want, t.Rev
	if *want != taskgraph.Pending {
		p.Owner = &me // starting or finishing a task makes it the agent's
	}
	out, err := h.store.Update(ctx, t.ID, p)
	if err == nil && *want == taskgraph.InProgress && h.cfg.lease > 0 {
		out, err = h.store.Renew(ctx, t.ID, me, h.cfg.lease)
	}
	return out, err
}

// target returns the status that in asks t to take, or nil for none: the
// status argument, or what the owner argument means for t. A status t
// already has is no change, except in_progress, which may be a claim.
func (h handlers) target(t taskgraph.Task, in updateInput) (*taskgraph.Status, error) {
	want := in.status
	if in.owner != nil {
		take := *in.owner != "" // the agent's own identity: checked by update
		switch {
		case take && want != nil && *want == taskgraph.Pending:
			return nil, errors.New("owner names you but status is pending: to give a task back, set owner to \"\" or status to pending")
		case take && want != nil:
		case take && t.Status == taskgraph.Completed:
			if o := othersOwner(t, h.cfg.owner); o != "" {
				return nil, refusal(t, h.cfg.owner, changeStatus)
			}
		case take:
			s := taskgraph.InProgress
			want = &s
		case want != nil && *want != taskgraph.Pending:
			return nil, fmt.Errorf("owner \"\" gives a task back, which contradicts status %s", *want)
		case t.Status.Terminal():
			return nil, fmt.Errorf("task %d is %s: there is no claim to give back", t.ID, t.Status)
		case t.Status == taskgraph.InProgress:
			s := taskgraph.Pending
			want = &s
		}
	}
	if want != nil && *want == t.Status && t.Status != taskgraph.InProgress {
		return nil, nil
	}
	return want, nil
}

// othersOwner returns the identity other than me that holds t (a claim in
// progress) or completed it, or "" if there is none.
func othersOwner(t taskgraph.Task, me string) string {
	if t.Status != taskgraph.Pending && t.Owner != "" && t.Owner != me {
		return t.Owner
	}
	return ""
}

// refusal is the error for a change to a task that another identity holds
// or completed; what names the change.
func refusal(t taskgraph.Task, me, what string) error {
	switch t.Status {
	case taskgraph.Completed:
		return fmt.Errorf("task %d was completed by %q, not by you (%q): only they can %s", t.ID, t.Owner, me, what)
	case taskgraph.Failed:
		return fmt.Errorf("task %d was failed by %q, not by you (%q): only they can %s", t.ID, t.Owner, me, what)
	case taskgraph.Cancelled:
		return fmt.Errorf("task %d was cancelled while %q held it, not you (%q): only they can %s", t.ID, t.Owner, me, what)
	}
	return fmt.Errorf("task %d is claimed by %q, not by you (%q): only its holder can %s", t.ID, t.Owner, me, what)
}

// deletable returns the task id as it is before a deletion, or the
// refusal if another identity holds or completed it.
func (h handlers) deletable(ctx context.Context, id taskgraph.ID) (taskgraph.Task, error) {
	t, err := h.store.Get(ctx, id)
	if err != nil {
		return t, err
	}
	if othersOwner(t, h.cfg.owner) != "" {
		return t, refusal(t, h.cfg.owner, deleteIt)
	}
	return t, nil
}

// What a refusal says only the owner may do.
const (
	changeStatus = "change its status or owner"
	deleteIt     = "delete it"
)

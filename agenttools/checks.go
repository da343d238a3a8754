// Verified completion in the tools: a task may name a check (never a
// command: no tool can define or edit one, the checks file is not theirs
// to write), and the tools run it only when the harness gives them the
// checks (WithChecks; taskgraph mcp --run-checks).

package agenttools

import (
	"context"
	"fmt"

	"github.com/taskgraph-dev/taskgraph"
)

// WithChecks makes task_complete (and task_update, TaskUpdate to
// completed) run the check a task names, from checks, before completing
// it: a passing check completes it with its evidence, a failing one
// fails the attempt with the evidence as the reason. Without it the tools
// run no command, and the store refuses to complete a task with a check
// (taskgraph.ErrUnverified): a person or a worker that runs checks
// (taskgraph done) completes it.
func WithChecks(checks *taskgraph.Checks) Option {
	return func(c *config) { c.checks = checks }
}

// completeTask completes task id for the agent, with opts, running its
// check first if the tools were given the checks.
func (h handlers) completeTask(ctx context.Context, id taskgraph.ID, opts ...taskgraph.CompleteOption) (taskgraph.Completion, error) {
	if h.cfg.checks != nil {
		t, err := h.store.Get(ctx, id)
		if err != nil {
			return taskgraph.Completion{}, err
		}
		if t.Extra != nil && t.Extra.Check != "" && t.Status == taskgraph.InProgress && t.Owner == h.cfg.owner {
			ev, err := h.cfg.checks.RunHeld(ctx, h.store, t, nil)
			if err != nil {
				return taskgraph.Completion{}, err
			}
			if !ev.Passed() {
				failed, err := h.store.Fail(ctx, id, h.cfg.owner, ev.String())
				if err != nil {
					return taskgraph.Completion{}, err
				}
				return taskgraph.Completion{}, fmt.Errorf("task %d was not completed: %s; the attempt failed, and the task is %s now: fix the cause, then claim it again", id, ev.String(), failed.Status)
			}
			opts = append(opts, taskgraph.WithEvidence(ev))
		}
	}
	return h.store.Complete(ctx, id, h.cfg.owner, opts...)
}

// The commands that move a task through its life: claim and next (which
// says whether to wait or stop when it cannot claim), done, fail and
// cancel, reopen, release and renew; and who may act on a task someone
// else holds.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

func flagsClaim(next bool) func(fs *flag.FlagSet) func(e *env) error {
	return func(fs *flag.FlagSet) func(e *env) error {
		lease := leaseFlag(fs, "lease the claim for this `DURATION` (e.g. 30m); renew it with taskgraph renew")
		var labels stringList
		var wait *bool
		var timeout *time.Duration
		var under idList
		if next {
			fs.Var(&labels, "label", "take only a task with this `LABEL` (repeat or comma-separate: all of them)")
			fs.Var(&under, "under", "take only a task under the task `ID` (its children, their children, ...)")
			wait = fs.Bool("wait", false, "if nothing is ready, wait until a task can be claimed or the graph is finished")
			timeout = fs.Duration("timeout", 0, "with --wait, give up after `DURATION` (e.g. 10m; exit status 3)")
		}
		return func(e *env) error {
			if err := lease.check(); err != nil {
				return err
			}
			var opts []taskgraph.ClaimOption
			if lease.d > 0 {
				opts = append(opts, taskgraph.WithLease(lease.d))
			}
			if len(labels) > 0 {
				opts = append(opts, taskgraph.WithLabels(labels...))
			}
			if next {
				if err := e.wantArgs(0); err != nil {
					return err
				}
				if len(under) > 1 {
					return usagef("--under takes one task ID")
				}
				var parent taskgraph.ID // 0: anywhere in the graph
				if len(under) == 1 {
					parent = under[0]
					opts = append(opts, taskgraph.WithUnder(parent))
				}
				if *timeout < 0 {
					return usagef("--timeout %s: a timeout cannot be negative: give how long to wait, e.g. 10m", *timeout)
				}
				if *timeout > 0 && !*wait {
					return usagef("--timeout %s bounds --wait: give --wait too", *timeout)
				}
				return e.withStore(func(s store) error { return e.claimNext(s, opts, labels, parent, *wait, *timeout) })
			}
			id, err := e.oneID()
			if err != nil {
				return err
			}
			return e.withStore(func(s store) error {
				t, err := s.Claim(e.ctx, id, e.owner, opts...)
				return e.printClaimed(t, err)
			})
		}
	}
}

// printClaimed reports claim and next: the task claimed, or err.
func (e *env) printClaimed(t taskgraph.Task, err error) error {
	if err := e.printChanged(t, e.held(err, ""), "Claimed %s: %s (owner %s)\n", idText(t.ID), t.Subject, t.Owner); err != nil || e.json {
		return err
	}
	e.printNotes(t, 1) // what the one before tried, first
	return nil
}

// claimNext is next: it claims the most urgent ready task with labels
// (under the task parent, if not 0), or says why it cannot — nothing is
// ready now (exit status 3), the graph (or what is under parent) is
// finished (5), or finished with tasks failed or stranded (6). With wait
// it waits (taskgraph.Await) until it claims one or the graph is
// finished, at most timeout if that is not 0.
func (e *env) claimNext(s store, opts []taskgraph.ClaimOption, labels []string, parent taskgraph.ID, wait bool, timeout time.Duration) error {
	ctx := e.ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		t, err := s.ClaimNext(e.ctx, e.owner, opts...)
		if !errors.Is(err, taskgraph.ErrNoReady) {
			return e.printClaimed(t, err)
		}
		b, err := s.Board(e.ctx, taskgraph.Under(parent))
		if err != nil {
			// A task that cannot be read may be the one to do: the
			// board without it says neither finished nor what to
			// wait on.
			return err
		}
		if b.Finished() || !wait {
			return e.cannotClaim(b, labels, parent, !wait, 0)
		}
		// Wait, then claim again: another agent may take the task first.
		if _, err := taskgraph.Await(ctx, s, taskgraph.WorkLabels(labels...), taskgraph.WorkUnder(parent)); err != nil {
			if e.ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			if b, err = s.Board(e.ctx, taskgraph.Under(parent)); err != nil {
				return err
			}
			return e.cannotClaim(b, labels, parent, false, timeout)
		}
	}
}

// flagsForce gives a command --force, for acting on a task that someone
// else holds.
func flagsForce(f func(e *env, force bool) error) func(fs *flag.FlagSet) func(e *env) error {
	return func(fs *flag.FlagSet) func(e *env) error {
		force := forceFlag(fs, "act on")
		return func(e *env) error { return f(e, *force) }
	}
}

// holder is the owner a command insists on: the user, or no one with
// --force.
func (e *env) holder(force bool) string {
	if force {
		return ""
	}
	return e.owner
}

// refuseHeld refuses to act on t when it is in progress under someone
// else's name and force is not set; what names what --force would do
// ("cancels it"): for the store calls that take no holder to check
// (cancel, delete, an edit's update).
func (e *env) refuseHeld(t taskgraph.Task, force bool, what string) error {
	if t.Status == taskgraph.InProgress && t.Owner != e.owner && !force {
		return e.held(&taskgraph.ClaimedError{ID: t.ID, Owner: t.Owner}, what)
	}
	return nil
}

func flagsDone(fs *flag.FlagSet) func(e *env) error {
	force := forceFlag(fs, "act on")
	result := fs.String("result", "", "record `TEXT` on the task: what was done, for whoever comes after")
	noVerify := fs.Bool("no-verify", false, "complete a task that names a check without running it (for a person: the history records the skip)")
	return func(e *env) error { return cmdDone(e, *force, *result, *noVerify) }
}

// cmdDone completes a task; one that names a check completes only if the
// check, run here, passes (or with --no-verify): a failing check fails
// the attempt, with the evidence as the reason.
func cmdDone(e *env, force bool, result string, noVerify bool) error {
	var opts []taskgraph.CompleteOption
	if result != "" {
		opts = append(opts, taskgraph.WithResult(result))
	}
	if noVerify {
		opts = append(opts, taskgraph.SkipCheck())
	}
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Get(e.ctx, id)
		if err != nil {
			return err
		}
		holder := e.holder(force)
		check := ""
		if t.Extra != nil {
			check = t.Extra.Check
		}
		// Only a task the caller may complete is worth its check's run:
		// Complete says why any other is refused.
		if check != "" && !noVerify && t.Status == taskgraph.InProgress && (holder == "" || holder == t.Owner) {
			ev, err := e.runCheck(s, t)
			if err != nil {
				return err
			}
			if !ev.Passed() {
				failed, err := s.Fail(e.ctx, id, holder, ev.String())
				if err != nil {
					return e.held(err, "fails it")
				}
				return checkFailedError{id: failed.ID, status: failed.Status, evidence: ev.String()}
			}
			opts = append(opts, taskgraph.WithEvidence(ev))
		}
		c, err := s.Complete(e.ctx, id, holder, opts...)
		if err != nil {
			return e.held(err, "completes it")
		}
		return e.printCompleted(c)
	})
}

// runCheck runs the check of task t, from the graph's checks file
// (loadChecks), keeping its claim alive meanwhile (Checks.RunHeld). Its
// output goes to stderr.
func (e *env) runCheck(s store, t taskgraph.Task) (taskgraph.Evidence, error) {
	checks, err := e.loadChecks()
	if err != nil {
		return taskgraph.Evidence{}, err
	}
	fmt.Fprintf(e.stderr, "Running check %s for %s in %s\n", t.Extra.Check, idText(t.ID), checks.Dir)
	return checks.RunHeld(e.ctx, s, t, e.stderr)
}

// checkFailedError is the outcome of done on a task whose check failed:
// the task failed that attempt (or is pending again, to retry).
type checkFailedError struct {
	id       taskgraph.ID
	status   taskgraph.Status
	evidence string
}

func (c checkFailedError) Error() string {
	then := "it is failed: reopen it once the cause is fixed"
	if c.status == taskgraph.Pending {
		then = "the attempt failed; it will be retried (see taskgraph history)"
	}
	return fmt.Sprintf("task %d was not completed: %s; %s", c.id, c.evidence, then)
}

func flagsFail(fs *flag.FlagSet) func(e *env) error {
	return endFlags(fs, "fail", "Failed", func(e *env, s store, id taskgraph.ID, reason string, force bool) (taskgraph.Task, error) {
		t, err := s.Fail(e.ctx, id, e.holder(force), reason)
		return t, e.held(err, "fails it")
	})
}

func flagsCancel(fs *flag.FlagSet) func(e *env) error {
	return endFlags(fs, "cancel", "Cancelled", func(e *env, s store, id taskgraph.ID, reason string, force bool) (taskgraph.Task, error) {
		t, err := s.Get(e.ctx, id)
		if err != nil {
			return t, err
		}
		if err := e.refuseHeld(t, force, "cancels it"); err != nil {
			return t, err
		}
		return s.Cancel(e.ctx, id, reason)
	})
}

// endFlags makes fail or cancel, which end a task with a reason: ID REASON
// and --force (its help begins with what), end run on the store, then the
// task reported under verb with the tasks it strands.
func endFlags(fs *flag.FlagSet, what, verb string, end func(e *env, s store, id taskgraph.ID, reason string, force bool) (taskgraph.Task, error)) func(e *env) error {
	force := forceFlag(fs, what)
	return func(e *env) error {
		id, reason, err := e.idAndReason()
		if err != nil {
			return err
		}
		return e.withStore(func(s store) error {
			t, err := end(e, s, id, reason, *force)
			if err != nil {
				return err
			}
			stranded, err := e.stranded(s, t.ID)
			if err != nil {
				return err
			}
			return e.printOutcome(verb, t, stranded)
		})
	}
}

// stranded returns the tasks that cause strands, as of now, in s.
func (e *env) stranded(s store, cause taskgraph.ID) ([]taskgraph.Task, error) {
	b, err := s.Board(e.ctx)
	if readFailed(err) {
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

func cmdReopen(e *env) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Reopen(e.ctx, id)
		return e.printChanged(t, err, "Reopened %s: %s\n", idText(t.ID), t.Subject)
	})
}

func cmdRelease(e *env, force bool) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Release(e.ctx, id, e.holder(force))
		return e.printChanged(t, e.held(err, "releases it"), "Released %s: %s\n", idText(t.ID), t.Subject)
	})
}

func cmdRenew(e *env) error {
	ids, err := e.argIDs(2, 0)
	if err != nil {
		return err
	}
	ttl, err := taskgraph.ParseLease(e.args[1])
	if err == nil {
		err = taskgraph.Rules.RenewArgs(ttl)
	}
	if err != nil {
		return usagef("%s: %v", e.args[1], reasonOf(err))
	}
	return e.withStore(func(s store) error {
		t, err := s.Renew(e.ctx, ids[0], e.owner, ttl)
		return e.printChanged(t, e.held(err, ""), "Renewed %s until %s\n", idText(t.ID), t.LeaseExpiresAt.Local().Format(time.RFC3339))
	})
}

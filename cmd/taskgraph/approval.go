// Approval gates and links on the command line: approve, reject, link,
// and the graph's approval policy.

package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// cmdApprove approves a task awaiting approval, as --owner (the person
// at the keyboard by default): the history records who.
func cmdApprove(e *env) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Approve(e.ctx, id, e.owner)
		return e.printChanged(t, err, "Approved %s: %s (by %s; it can be claimed now)\n", idText(t.ID), t.Subject, e.owner)
	})
}

// cmdReject rejects a task awaiting approval, which cancels it, and says
// which tasks that strands.
func cmdReject(e *env) error {
	id, reason, err := e.idAndReason()
	if err != nil {
		return err
	}
	return e.withStore(func(s store) error {
		t, err := s.Reject(e.ctx, id, e.owner, reason)
		if err != nil {
			return err
		}
		stranded, err := e.stranded(s, t.ID)
		if err != nil {
			return err
		}
		return e.printOutcome("Rejected (cancelled)", t, stranded)
	})
}

// cmdLink adds links to a task: a set, so a link it carries is left as
// it is.
func cmdLink(e *env) error {
	if len(e.args) < 2 {
		return usagef("want the task id and at least one link (a commit, a pull request, a file or a URL)")
	}
	id, err := e.parseID(e.args[0])
	if err != nil {
		return err
	}
	refs := e.args[1:]
	if err := taskgraph.Rules.PatchArgs(taskgraph.Patch{AddLinks: refs}); err != nil {
		return usagef("%v", reasonOf(err))
	}
	return e.withStore(func(s store) error {
		t, err := s.Update(e.ctx, id, taskgraph.Patch{AddLinks: refs})
		return e.printChanged(t, err, "Linked %s: %s\n", idText(t.ID), strings.Join(refs, ", "))
	})
}

// flagsApproval sets or lists the approval policy.
func flagsApproval(fs *flag.FlagSet) func(e *env) error {
	var labels, via stringList
	fs.Var(&labels, "label", "new tasks with `LABEL` need approval (repeat or comma-separate)")
	fs.Var(&via, "via", "new tasks created through `WAY` need approval: tools (the agent tools), mcp (taskgraph mcp, the hub's /mcp), cli")
	none := fs.Bool("none", false, "remove the policy: no new task needs approval unless its creator asks (add --needs-approval)")
	return func(e *env) error {
		if len(e.args) > 0 {
			return usagef("want --label, --via, --none, or nothing to print the policy")
		}
		set := *none || len(labels)+len(via) > 0
		p := taskgraph.ApprovalPolicy{Labels: labels, Via: via}
		if *none && len(labels)+len(via) > 0 {
			return usagef("--none removes the policy: give it alone")
		}
		if set {
			if _, err := taskgraph.Rules.ApprovalPolicyArgs(p); err != nil {
				return usagef("approval: %v", reasonOf(err))
			}
		}
		return e.withStore(func(s store) error {
			if set {
				if err := s.SetApprovalPolicy(e.ctx, p); err != nil {
					return err
				}
			}
			got, err := s.ApprovalPolicy(e.ctx)
			if err != nil {
				return err
			}
			if e.json {
				return e.printJSON(got)
			}
			if len(got.Labels)+len(got.Via) == 0 {
				fmt.Fprintln(e.stdout, "No approval policy: a new task needs approval only if its creator asks (add --needs-approval)")
				return nil
			}
			if len(got.Labels) > 0 {
				fmt.Fprintf(e.stdout, "New tasks labelled %s need approval\n", strings.Join(got.Labels, ", "))
			}
			if len(got.Via) > 0 {
				fmt.Fprintf(e.stdout, "New tasks created through %s need approval\n", strings.Join(got.Via, ", "))
			}
			return nil
		})
	}
}

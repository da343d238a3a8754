// How an error is worded for the model: in terms of the tools and of the
// agent acting, without the Go names meant for a programmer.

package agenttools

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// scrub rewrites the parts of the store's messages that are meant for a
// programmer (Go names) into what a model can do instead.
var scrub = strings.NewReplacer(
	"or delete with taskgraph.Detach()", "or call task_delete with detach: true",
	"use Claim, or set Owner in the same patch", "use task_claim",
)

// goConstant matches the name of a Go limit the store's messages cite,
// " (MaxLabels)", which a model has no use for.
var goConstant = regexp.MustCompile(` \(Max[A-Za-z]*\)`)

// describe words an error for the model acting as me.
func describe(err error, me string) string {
	var ce *taskgraph.CycleError
	if errors.As(err, &ce) && len(ce.Path) >= 2 {
		names := ce.Names()
		n := len(names)
		return fmt.Sprintf("adding %s -> %s would create a cycle %s", names[n-2], names[n-1], strings.Join(names, " -> "))
	}
	var be *taskgraph.BlockedError
	if errors.As(err, &be) {
		s := fmt.Sprintf("task %d is blocked by %s", be.ID, FormatIDs(be.By))
		if len(be.Missing) > 0 {
			s += fmt.Sprintf(" (tasks %s do not exist)", FormatIDs(be.Missing))
		}
		if len(be.OutOfOrder) > 0 {
			s += fmt.Sprintf(" (tasks %s were completed before their own blockers, so they count as unfinished until those are)", FormatIDs(be.OutOfOrder))
		}
		return s
	}
	var cl *taskgraph.ClaimedError
	if errors.As(err, &cl) && cl.Owner != me {
		return fmt.Sprintf("task %d is claimed by %q, not by you (%q)", cl.ID, cl.Owner, me)
	}
	return goConstant.ReplaceAllString(scrub.Replace(err.Error()), "")
}

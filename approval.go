// Approval gates: a task that needs a person's approval before anyone may
// claim it (Extra.NeedsApproval), set by its creator or by the graph's
// policy (ApprovalPolicy: per label, and per way of creation, CreatedVia).
// Approve lets it run; Reject cancels it. Who approved or rejected, and
// when, is in the task's history. Every store decides alike: the rules are
// here, the stores only persist.

package taskgraph

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The ways a task is created, for Extra.CreatedVia and ApprovalPolicy.Via.
const (
	// ViaCLI is a task created by the taskgraph command.
	ViaCLI = "cli"
	// ViaTools is a task created by a model through the agent tools
	// (agenttools).
	ViaTools = "tools"
	// ViaMCP is a task created through the MCP server (the agent tools
	// served over MCP, by taskgraph mcp or the hub).
	ViaMCP = "mcp"
)

// maxVia is the longest CreatedVia, in bytes.
const maxVia = 16

// AwaitingApproval reports whether t waits for approval: it is pending
// and needs approval (Extra.NeedsApproval). Such a task is in no other
// list of a Board than AwaitingApproval, and no one may claim it until
// it is approved (Approver).
func (t *Task) AwaitingApproval() bool {
	return t.Status == Pending && t.Extra != nil && t.Extra.NeedsApproval
}

// waiting reports whether t, a pending task, may not start at now for a
// reason of its own: its NotBefore is to come, or it awaits approval.
func (t *Task) waiting(now time.Time) bool { return t.Deferred(now) || t.AwaitingApproval() }

// Approver is implemented by stores that gate tasks on approval (all of
// this module's stores). It is an interface of its own so that Store
// implementations written before it still compile. Only people approve:
// the agent tools never offer it, and through the hub it takes an admin
// token. On a local graph anyone who can run the CLI can approve: the
// history records who said they did, so the gate is advisory there.
type Approver interface {
	// Approve lets task id, which awaits approval, be claimed, and records
	// by and the time in its history.
	Approve(ctx context.Context, id ID, by string) (Task, error)
	// Reject cancels task id, which awaits approval, for reason, and
	// records by in its history; its dependents become stranded, as with
	// Cancel.
	Reject(ctx context.Context, id ID, by, reason string) (Task, error)
}

// ApproveArgs validates the arguments of Approve, before any task is read.
func (Rulebook) ApproveArgs(by string) error {
	if by == "" {
		return &InvalidError{Field: "by", Reason: "must not be empty: say who approves"}
	}
	if err := Rules.Text("by", by); err != nil {
		return err
	}
	return nameLength("by", by, MaxOwner, "MaxOwner")
}

// RejectArgs validates the arguments of Reject, before any task is read.
func (Rulebook) RejectArgs(by, reason string) error {
	if err := Rules.ApproveArgs(by); err != nil {
		return err
	}
	return reasonArg(reason)
}

// notAwaiting is the error of an approval or rejection of a task that
// does not await approval.
func notAwaiting(t *Task, what string) error {
	why := "it does not need approval"
	if t.Status != Pending {
		why = "it is " + string(t.Status)
	}
	return &InvalidError{Field: "id", Reason: fmt.Sprintf("task %d cannot be %s: %s; only a pending task awaiting approval can", t.ID, what, why)}
}

// Approve lets t, which must await approval, be claimed, recording by.
func (Rulebook) Approve(t *Task, by string, now time.Time) error {
	if err := Rules.ApproveArgs(by); err != nil {
		return err
	}
	if !t.AwaitingApproval() {
		return notAwaiting(t, "approved")
	}
	advance(t, now)
	t.Extra.NeedsApproval = false
	t.tidy()
	record(t, now, HistoryApproved, by, "")
	return nil
}

// Reject cancels t, which must await approval, for reason, recording by.
// It still needs approval if it is reopened.
func (Rulebook) Reject(t *Task, by, reason string, now time.Time) error {
	if err := Rules.RejectArgs(by, reason); err != nil {
		return err
	}
	if !t.AwaitingApproval() {
		return notAwaiting(t, "rejected")
	}
	advance(t, now)
	t.Status, t.Reason = Cancelled, reason
	record(t, now, HistoryRejected, by, reason)
	return nil
}

// viaArg validates a way of creation (CreatedVia): "" or a short
// lowercase word such as ViaTools.
func viaArg(field, via string) error {
	if len(via) > maxVia {
		return &InvalidError{Field: field, Reason: fmt.Sprintf("is %d bytes, over the %d-byte limit: name the way a task was created in a word, such as %q", len(via), maxVia, ViaTools)}
	}
	for _, c := range via {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return &InvalidError{Field: field, Reason: fmt.Sprintf("%q is not a word of lowercase letters, digits and dashes, such as %q", via, ViaTools)}
		}
	}
	return nil
}

// ApprovalPolicy says which new tasks need approval besides those whose
// creator asks for it (NewTask.NeedsApproval): those created with one of
// Labels, and those created through one of Via (such as ViaTools and
// ViaMCP: every task a model creates). A change leaves the tasks that
// exist as they are.
type ApprovalPolicy struct {
	Labels []string `json:"labels,omitempty"`
	Via    []string `json:"via,omitempty"`
}

// ApprovalPolicer is implemented by stores that keep an ApprovalPolicy
// (all of this module's stores), where they keep the labels' limits
// (Limiter): the meta file of a FileStore, which git commits with the
// graph, pgstore's table. It is an interface of its own so that Store
// implementations written before it still compile.
type ApprovalPolicer interface {
	// SetApprovalPolicy replaces the graph's policy; the zero value
	// removes it.
	SetApprovalPolicy(ctx context.Context, p ApprovalPolicy) error
	// ApprovalPolicy returns the graph's policy.
	ApprovalPolicy(ctx context.Context) (ApprovalPolicy, error)
}

// ApprovalPolicyArgs validates a policy — labels as Labels allows them,
// ways of creation as NewTask.CreatedVia, at most MaxLabels of each — and
// returns it as stores keep and return it: each list sorted bytewise,
// without duplicates, nil when empty.
func (Rulebook) ApprovalPolicyArgs(p ApprovalPolicy) (ApprovalPolicy, error) {
	if _, err := Rules.Labels("labels", p.Labels); err != nil {
		return ApprovalPolicy{}, err
	}
	if len(p.Via) > MaxLabels {
		return ApprovalPolicy{}, &InvalidError{Field: "via", Reason: fmt.Sprintf("has %d ways, over the limit of %d", len(p.Via), MaxLabels)}
	}
	for _, v := range p.Via {
		if v == "" {
			return ApprovalPolicy{}, &InvalidError{Field: "via", Reason: "holds an empty way: name one such as " + ViaTools}
		}
		if err := viaArg("via", v); err != nil {
			return ApprovalPolicy{}, err
		}
	}
	return normalPolicy(p), nil
}

// normalPolicy returns p as stores keep and return it: each list sorted
// bytewise, without duplicates, nil when empty.
func normalPolicy(p ApprovalPolicy) ApprovalPolicy {
	norm := func(s []string) []string {
		s = slices.Compact(slices.Sorted(slices.Values(s)))
		if len(s) == 0 {
			return nil
		}
		return s
	}
	return ApprovalPolicy{Labels: norm(p.Labels), Via: norm(p.Via)}
}

// DefaultApproval returns nts with the policy applied: a task created
// with a label of p.Labels, or through a way of p.Via, needs approval.
// Stores run it on what Create and CreatePlan are given, before the rule
// that creates the tasks.
func (Rulebook) DefaultApproval(nts []NewTask, p ApprovalPolicy) []NewTask {
	if len(p.Labels)+len(p.Via) == 0 {
		return nts
	}
	var out []NewTask
	for i, nt := range nts {
		if nt.NeedsApproval || !slices.Contains(p.Via, nt.CreatedVia) && !slices.ContainsFunc(nt.Labels, func(l string) bool { return slices.Contains(p.Labels, l) }) {
			continue
		}
		if out == nil {
			out = slices.Clone(nts)
		}
		out[i].NeedsApproval = true
	}
	if out == nil {
		return nts
	}
	return out
}

// ErrAwaitingApproval is matched by the error of a claim, or an update to
// in_progress, of a task that awaits approval: see AwaitingApprovalError.
var ErrAwaitingApproval = errors.New("task awaits approval")

// AwaitingApprovalError says that task ID cannot start before a person
// approves it (Approver). It matches ErrAwaitingApproval.
type AwaitingApprovalError struct{ ID ID }

func (e *AwaitingApprovalError) Error() string {
	return fmt.Sprintf("task %d awaits approval: a person must approve it (taskgraph approve %d) before anyone can claim it", e.ID, e.ID)
}

// Is reports whether target is ErrAwaitingApproval.
func (e *AwaitingApprovalError) Is(target error) bool { return target == ErrAwaitingApproval }

// clonePolicy returns a copy of p that shares nothing with it.
func clonePolicy(p ApprovalPolicy) ApprovalPolicy {
	return ApprovalPolicy{Labels: slices.Clone(p.Labels), Via: slices.Clone(p.Via)}
}

// metaApprovalOf is p as the meta file holds it: nil if empty.
func metaApprovalOf(p ApprovalPolicy) *ApprovalPolicy {
	if len(p.Labels)+len(p.Via) == 0 {
		return nil
	}
	return &p
}

// mergeApproval merges the approval and the links of a task's three
// versions (their Extra: bx, ox, tx) into out: NeedsApproval and
// CreatedVia by the three-way rule, the links as a set (every link of
// either side, at its earliest time, in time order), the oldest MaxLinks
// kept if together they pass it.
func (m *merger) mergeApproval(out *Task, bx, ox, tx Extra) {
	needs := pick(m, "needsApproval", bx.NeedsApproval, ox.NeedsApproval, tx.NeedsApproval, same)
	via := pick(m, "createdVia", bx.CreatedVia, ox.CreatedVia, tx.CreatedVia, same)
	at := map[string]time.Time{}
	for _, l := range slices.Concat(ox.Links, tx.Links) {
		if t, ok := at[l.Ref]; !ok || l.At.Before(t) {
			at[l.Ref] = l.At
		}
	}
	var links []Link
	for ref, when := range at {
		links = append(links, Link{Ref: ref, At: when.UTC()})
	}
	slices.SortFunc(links, func(a, b Link) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return strings.Compare(a.Ref, b.Ref)
	})
	if len(links) > MaxLinks {
		m.conflict("the two sides' links together are %d, over the limit of %d (MaxLinks): the %d newest were dropped", len(links), MaxLinks, len(links)-MaxLinks)
		links = links[:MaxLinks]
	}
	if needs || via != "" || len(links) > 0 {
		x := out.editExtra()
		x.NeedsApproval, x.CreatedVia, x.Links = needs, via, links
	} else if out.Extra != nil {
		out.Extra.NeedsApproval, out.Extra.CreatedVia, out.Extra.Links = false, "", nil
		out.tidy()
	}
}

// mergePolicy merges three versions of the meta file's approval policy:
// each list as a set, a label or a way either side added or removed
// (and the other left alone) added or removed.
func mergePolicy(base, ours, theirs *ApprovalPolicy) ApprovalPolicy {
	var b, o, t ApprovalPolicy
	for _, c := range []struct {
		from *ApprovalPolicy
		to   *ApprovalPolicy
	}{{base, &b}, {ours, &o}, {theirs, &t}} {
		if c.from != nil {
			*c.to = *c.from
		}
	}
	return normalPolicy(ApprovalPolicy{Labels: mergeSet(b.Labels, o.Labels, t.Labels), Via: mergeSet(b.Via, o.Via, t.Via)})
}

// approvals is the approval mechanism of the local stores, a type of its
// own that MemStore and FileStore embed: Approver over their engine, and
// ApprovalPolicer, which keeps the policy with setPolicy where the store
// keeps its settings (a FileStore's meta file, beside the limits).
type approvals struct {
	e         engine
	setPolicy func(ctx context.Context, p ApprovalPolicy) error
}

// Approve lets a task awaiting approval be claimed; see [Approver].
func (a approvals) Approve(ctx context.Context, id ID, by string) (Task, error) {
	return ops{a.e}.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planApprove(id, by, now) })
}

// Reject cancels a task awaiting approval; see [Approver].
func (a approvals) Reject(ctx context.Context, id ID, by, reason string) (Task, error) {
	return ops{a.e}.writeTask(ctx, writeOneTask, func(g *graph, now time.Time) (*plan, error) { return g.planReject(id, by, reason, now) })
}

// SetApprovalPolicy sets which new tasks need approval; see
// [ApprovalPolicer].
func (a approvals) SetApprovalPolicy(ctx context.Context, p ApprovalPolicy) error {
	p, err := Rules.ApprovalPolicyArgs(p)
	if err != nil {
		return err
	}
	return a.setPolicy(ctx, p)
}

// ApprovalPolicy returns which new tasks need approval; see
// [ApprovalPolicer].
func (a approvals) ApprovalPolicy(ctx context.Context) (ApprovalPolicy, error) {
	var out ApprovalPolicy
	err := a.e.read(ctx, nil, func(g *graph) error {
		out = clonePolicy(g.approval)
		return nil
	})
	return out, err
}

// setMetaPolicy keeps p, valid and normal, in s's meta file, which git
// merges as a set of labels and a set of ways (mergePolicy).
func setMetaPolicy(ctx context.Context, s *FileStore, p ApprovalPolicy) error {
	if err := s.acquire(ctx, true); err != nil {
		return err
	}
	err := s.commitMeta(func() (undo func()) {
		old := s.g.approval
		s.g.approval = p
		return func() { s.g.approval = old }
	})
	s.afterUnlock(s.unlock())
	return err
}

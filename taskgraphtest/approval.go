// Conformance cases for approval gates (Approver, ApprovalPolicer) and
// links (Patch.AddLinks).

package taskgraphtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// approverOf returns s as an Approver, failing the test if it is not one.
func approverOf(t *testing.T, s tg.Store) tg.Approver {
	a, ok := s.(tg.Approver)
	require.True(t, ok, "%T does not implement taskgraph.Approver", s)
	return a
}

// testApproval: a task that needs approval is stored so, listed only as
// awaiting approval, refused to every claim (Claim, ClaimNext, an update
// to in_progress) until approved; approval and rejection record who and
// when; a rejection cancels the task and strands its dependents; neither
// applies to a task that does not await approval; bad arguments are
// refused and change nothing.
func testApproval(t *testing.T, s tg.Store) {
	ap := approverOf(t, s)
	gated, err := s.Create(ctx, tg.NewTask{Subject: "deploy", NeedsApproval: true, CreatedVia: tg.ViaCLI})
	require.NoError(t, err)
	require.NotNil(t, gated.Extra)
	assert.True(t, gated.Extra.NeedsApproval)
	assert.Equal(t, tg.ViaCLI, gated.Extra.CreatedVia)
	assert.True(t, gated.AwaitingApproval())
	dep, err := s.Create(ctx, tg.NewTask{Subject: "after deploy", BlockedBy: []tg.ID{gated.ID}})
	require.NoError(t, err)
	plain, err := s.Create(ctx, tg.NewTask{Subject: "plain"})
	require.NoError(t, err)
	assert.Nil(t, plain.Extra, "a task without approval or a way of creation has no Extra")

	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{gated.ID}, ids(b.AwaitingApproval))
	assert.Equal(t, []tg.ID{plain.ID}, ids(b.Ready), "awaiting approval is not ready")
	assert.False(t, b.Finished())
	ready, err := s.List(ctx, tg.ReadyOnly())
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{plain.ID}, ids(ready))
	tasks, err := s.List(ctx)
	require.NoError(t, err)
	ex, err := tg.Explain(tasks, gated.ID, time.Now())
	require.NoError(t, err)
	assert.Equal(t, tg.StateAwaitingApproval, ex.State)

	_, err = s.Claim(ctx, gated.ID, "agent")
	var ae *tg.AwaitingApprovalError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, gated.ID, ae.ID)
	st := tg.InProgress
	_, err = s.Update(ctx, gated.ID, tg.Patch{Status: &st, Owner: ptr("agent")})
	assert.ErrorIs(t, err, tg.ErrAwaitingApproval)
	got, err := s.ClaimNext(ctx, "agent")
	require.NoError(t, err)
	assert.Equal(t, plain.ID, got.ID, "ClaimNext passes over a task awaiting approval")
	_, err = s.ClaimNext(ctx, "agent2")
	assert.ErrorIs(t, err, tg.ErrNoReady)

	for _, c := range []struct{ by, reason string }{{"", "r"}, {"alice", ""}, {string(make([]byte, tg.MaxOwner+1)), "r"}} {
		_, err := ap.Reject(ctx, gated.ID, c.by, c.reason)
		assert.ErrorIs(t, err, tg.ErrInvalid, "%q %q", c.by, c.reason)
	}
	_, err = ap.Approve(ctx, gated.ID, "")
	assert.ErrorIs(t, err, tg.ErrInvalid)
	_, err = ap.Approve(ctx, plain.ID, "alice")
	assert.ErrorIs(t, err, tg.ErrInvalid, "a task that does not await approval")
	_, err = ap.Approve(ctx, 999, "alice")
	assert.ErrorIs(t, err, tg.ErrNotFound)
	still, err := s.Get(ctx, gated.ID)
	require.NoError(t, err)
	assert.Equal(t, gated.Rev, still.Rev, "a refused approval writes nothing")

	ok, err := ap.Approve(ctx, gated.ID, "alice")
	require.NoError(t, err)
	assert.False(t, ok.AwaitingApproval())
	assert.Equal(t, tg.ViaCLI, ok.Extra.CreatedVia, "approval keeps the way of creation")
	last := ok.History[len(ok.History)-1]
	assert.Equal(t, tg.HistoryApproved, last.Event)
	assert.Equal(t, "alice", last.By)
	assert.False(t, last.At.IsZero())
	_, err = ap.Approve(ctx, gated.ID, "alice")
	assert.ErrorIs(t, err, tg.ErrInvalid, "approved once")
	claimed, err := s.ClaimNext(ctx, "agent2")
	require.NoError(t, err)
	assert.Equal(t, gated.ID, claimed.ID, "approved: claimable")

	risky, err := s.Create(ctx, tg.NewTask{Subject: "drop table", NeedsApproval: true})
	require.NoError(t, err)
	child, err := s.Create(ctx, tg.NewTask{Subject: "after drop", BlockedBy: []tg.ID{risky.ID}})
	require.NoError(t, err)
	no, err := ap.Reject(ctx, risky.ID, "bob", "too risky")
	require.NoError(t, err)
	assert.Equal(t, tg.Cancelled, no.Status)
	assert.Equal(t, "too risky", no.Reason)
	last = no.History[len(no.History)-1]
	assert.Equal(t, tg.HistoryRejected, last.Event)
	assert.Equal(t, "bob", last.By)
	assert.Equal(t, "too risky", last.Detail)
	b, err = s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, risky.ID, b.StrandedBy[child.ID], "a rejection strands dependents as a cancel does")
	assert.Empty(t, b.AwaitingApproval)
	_, err = ap.Reject(ctx, risky.ID, "bob", "again")
	assert.ErrorIs(t, err, tg.ErrInvalid)
	back, err := s.Reopen(ctx, risky.ID)
	require.NoError(t, err)
	assert.True(t, back.AwaitingApproval(), "reopened, a rejected task needs approval again")
	_ = dep

	_, err = s.Create(ctx, tg.NewTask{Subject: "x", CreatedVia: "Not A Way"})
	assert.ErrorIs(t, err, tg.ErrInvalid)
}

// testApprovalPolicy: the graph's policy makes the tasks created with one
// of its labels, or through one of its ways, need approval (Create and
// CreatePlan); it is kept sorted and without duplicates; a change leaves
// existing tasks as they are; a bad policy is refused.
func testApprovalPolicy(t *testing.T, s tg.Store) {
	ap, ok := s.(tg.ApprovalPolicer)
	require.True(t, ok, "%T does not implement taskgraph.ApprovalPolicer", s)
	p, err := ap.ApprovalPolicy(ctx)
	require.NoError(t, err)
	assert.Equal(t, tg.ApprovalPolicy{}, p)
	require.NoError(t, ap.SetApprovalPolicy(ctx, tg.ApprovalPolicy{Labels: []string{"prod", "billing", "prod"}, Via: []string{tg.ViaTools, tg.ViaMCP}}))
	p, err = ap.ApprovalPolicy(ctx)
	require.NoError(t, err)
	assert.Equal(t, tg.ApprovalPolicy{Labels: []string{"billing", "prod"}, Via: []string{tg.ViaMCP, tg.ViaTools}}, p)

	byLabel, err := s.Create(ctx, tg.NewTask{Subject: "ship", Labels: []string{"prod"}})
	require.NoError(t, err)
	assert.True(t, byLabel.AwaitingApproval(), "a label of the policy")
	byTools, err := s.Create(ctx, tg.NewTask{Subject: "model's idea", CreatedVia: tg.ViaTools})
	require.NoError(t, err)
	assert.True(t, byTools.AwaitingApproval(), "a way of the policy")
	byCLI, err := s.Create(ctx, tg.NewTask{Subject: "mine", CreatedVia: tg.ViaCLI, Labels: []string{"dev"}})
	require.NoError(t, err)
	assert.False(t, byCLI.AwaitingApproval())
	planned, err := s.CreatePlan(ctx, []tg.NewTask{{Subject: "a", Key: "a", CreatedVia: tg.ViaMCP}, {Subject: "b", Key: "b"}})
	require.NoError(t, err)
	assert.True(t, planned[0].AwaitingApproval(), "a plan's tasks too")
	assert.False(t, planned[1].AwaitingApproval())

	require.NoError(t, ap.SetApprovalPolicy(ctx, tg.ApprovalPolicy{}))
	p, err = ap.ApprovalPolicy(ctx)
	require.NoError(t, err)
	assert.Equal(t, tg.ApprovalPolicy{}, p, "the zero value removes the policy")
	again, err := s.Get(ctx, byLabel.ID)
	require.NoError(t, err)
	assert.True(t, again.AwaitingApproval(), "a task keeps what it was created with")
	later, err := s.Create(ctx, tg.NewTask{Subject: "later", Labels: []string{"prod"}})
	require.NoError(t, err)
	assert.False(t, later.AwaitingApproval())

	for _, bad := range []tg.ApprovalPolicy{{Labels: []string{"Not A Label"}}, {Via: []string{""}}, {Via: []string{"TOOLS"}}} {
		assert.ErrorIs(t, ap.SetApprovalPolicy(ctx, bad), tg.ErrInvalid, "%+v", bad)
	}
	p, err = ap.ApprovalPolicy(ctx)
	require.NoError(t, err)
	assert.Equal(t, tg.ApprovalPolicy{}, p, "a refused policy changes nothing")
}

// testLinks: links are added by Update as a set, in the order added, each
// with its time; re-adding one changes nothing of the set; adding one is
// progress (Task.Progress); bad links and too many are refused and change
// nothing.
func testLinks(t *testing.T, s tg.Store) {
	a, err := s.Create(ctx, tg.NewTask{Subject: "fix"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "agent")
	require.NoError(t, err)
	u, err := s.Update(ctx, a.ID, tg.Patch{AddLinks: []string{"https://example.com/pr/7", "abc1234", "https://example.com/pr/7"}})
	require.NoError(t, err)
	require.NotNil(t, u.Extra)
	require.Len(t, u.Extra.Links, 2)
	assert.Equal(t, "https://example.com/pr/7", u.Extra.Links[0].Ref)
	assert.Equal(t, "abc1234", u.Extra.Links[1].Ref)
	assert.False(t, u.Extra.Links[0].At.Before(u.ClaimedAt))
	assert.Equal(t, u.Extra.Links[0].At, u.Progress(), "a link is progress")
	got, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, u.Extra, got.Extra)

	again, err := s.Update(ctx, a.ID, tg.Patch{AddLinks: []string{"abc1234", "docs/design.md"}})
	require.NoError(t, err)
	require.Len(t, again.Extra.Links, 3)
	assert.Equal(t, u.Extra.Links, again.Extra.Links[:2], "a link it carries keeps its time")
	assert.Equal(t, "docs/design.md", again.Extra.Links[2].Ref)

	long := make([]byte, tg.MaxLinkRef+1)
	for i := range long {
		long[i] = 'a'
	}
	many := make([]string, tg.MaxLinks)
	for i := range many {
		many[i] = "file" + string(rune('a'+i))
	}
	for _, refs := range [][]string{{""}, {" "}, {"two\nlines"}, {string(long)}, many, append(many, "x")} {
		_, err := s.Update(ctx, a.ID, tg.Patch{AddLinks: refs})
		assert.ErrorIs(t, err, tg.ErrInvalid, "%d links", len(refs))
	}
	after, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, again.Rev, after.Rev, "a refused link writes nothing")
}

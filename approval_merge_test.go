package taskgraph

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMergeApproval: the merge driver keeps NeedsApproval and CreatedVia
// by the three-way rule (an approval on one side is kept), and the clean
// filter keeps them.
func TestMergeApproval(t *testing.T) {
	base := Task{UpdatedAt: t0, Extra: &Extra{NeedsApproval: true, CreatedVia: ViaTools}}
	ours := base
	ours.Extra, ours.UpdatedAt = &Extra{CreatedVia: ViaTools}, t0.Add(time.Minute) // approved here
	theirs := base
	theirs.Extra, theirs.UpdatedAt = &Extra{NeedsApproval: true, CreatedVia: ViaTools, MaxRuntime: time.Hour}, t0.Add(2*time.Minute)
	got, conflicts := merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Empty(t, conflicts)
	require.NotNil(t, got.Extra)
	assert.False(t, got.Extra.NeedsApproval, "approved on one side, untouched on the other")
	assert.Equal(t, ViaTools, got.Extra.CreatedVia)
	assert.Equal(t, time.Hour, got.Extra.MaxRuntime)

	got, _ = merged(t, file(t, Task{UpdatedAt: t0}), file(t, Task{UpdatedAt: t0}), file(t, theirs))
	assert.True(t, got.Extra.NeedsApproval, "set on one side only")

	gated := Task{Status: Pending, Rev: 2, Extra: &Extra{NeedsApproval: true, CreatedVia: ViaMCP, Links: []Link{{Ref: "abc1234", At: t0}}}}
	clean, err := decodeTask(7, CleanTaskFile(".tasks/task_7.json", file(t, gated)))
	require.NoError(t, err)
	assert.Equal(t, gated.Extra, clean.Extra, "the clean filter keeps approval and links")
}

// TestMergeLinks: links merge as a set: every link of either side, once,
// at its earliest time, in time order; past MaxLinks the newest are
// dropped and the merge says so.
func TestMergeLinks(t *testing.T) {
	l := func(ref string, min int) Link { return Link{Ref: ref, At: t0.Add(time.Duration(min) * time.Minute)} }
	base := Task{UpdatedAt: t0, Extra: &Extra{Links: []Link{l("a", 0)}}}
	ours := base
	ours.Extra, ours.UpdatedAt = &Extra{Links: []Link{l("a", 0), l("pr/7", 2), l("both", 3)}}, t0.Add(time.Minute)
	theirs := base
	theirs.Extra, theirs.UpdatedAt = &Extra{Links: []Link{l("a", 0), l("both", 1), l("c0ffee", 4)}}, t0.Add(2*time.Minute)
	got, conflicts := merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Empty(t, conflicts)
	require.NotNil(t, got.Extra)
	assert.Equal(t, []Link{l("a", 0), l("both", 1), l("pr/7", 2), l("c0ffee", 4)}, got.Extra.Links)
	assert.Equal(t, t0.Add(4*time.Minute), got.Progress().UTC(), "the newest link is progress")

	var many, more []Link
	for i := range MaxLinks {
		many = append(many, l(string(rune('a'+i)), i))
		more = append(more, l(string(rune('A'+i)), i))
	}
	ours.Extra, theirs.Extra = &Extra{Links: many}, &Extra{Links: more}
	got, conflicts = merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Len(t, got.Extra.Links, MaxLinks)
	require.Len(t, conflicts, 1)
	assert.Contains(t, conflicts[0], "MaxLinks")
	require.NoError(t, Rules.Bounded(got), "the merged task is one every store reads")
}

// TestMergeMetaApproval: the approval policy of the meta file merges as
// two sets: a label or a way one side added or removed, the other left
// alone, is added or removed.
func TestMergeMetaApproval(t *testing.T) {
	base := []byte(`{"highWater": 3, "approval": {"labels": ["prod", "db"], "via": ["tools"]}}`)
	ours := []byte(`{"highWater": 3, "approval": {"labels": ["prod", "db", "billing"], "via": ["tools"]}}`)
	theirs := []byte(`{"highWater": 4, "approval": {"labels": ["prod"], "via": ["tools", "mcp"]}}`)
	out, conflicts, err := MergeTaskFiles(".tasks/"+metaFileName, base, ours, theirs)
	require.NoError(t, err)
	assert.Empty(t, conflicts)
	m, err := parseMetaFile(out)
	require.NoError(t, err)
	require.NotNil(t, m.Approval)
	assert.Equal(t, ApprovalPolicy{Labels: []string{"billing", "prod"}, Via: []string{"mcp", "tools"}}, *m.Approval)

	out, _, err = MergeTaskFiles(".tasks/"+metaFileName, base, []byte(`{"highWater": 3}`), base)
	require.NoError(t, err)
	m, err = parseMetaFile(out)
	require.NoError(t, err)
	assert.Nil(t, m.Approval, "removed on one side, untouched on the other")
}

// TestApprovalPolicyReopen: a FileStore keeps the policy in its meta
// file: another store on the directory reads it and gates by it.
func TestApprovalPolicyReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.SetApprovalPolicy(t.Context(), ApprovalPolicy{Labels: []string{"prod"}, Via: []string{ViaMCP}}))
	other, err := Open(dir)
	require.NoError(t, err)
	defer other.Close()
	p, err := other.ApprovalPolicy(t.Context())
	require.NoError(t, err)
	assert.Equal(t, ApprovalPolicy{Labels: []string{"prod"}, Via: []string{ViaMCP}}, p)
	task, err := other.Create(t.Context(), NewTask{Subject: "s", CreatedVia: ViaMCP})
	require.NoError(t, err)
	assert.True(t, task.AwaitingApproval())
}

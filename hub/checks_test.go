package hub_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// TestAgentTokenChecks: an agent's token names a check, never defines
// one: a check named like a command is refused (the hub has no route
// that writes checks, and runs none); it may not skip a task's check
// (ErrForbidden), completing without evidence is refused as in every
// store (ErrUnverified, typed across the wire), and evidence it reports
// completes the task with the evidence in its history. An admin's token
// may skip.
func TestAgentTokenChecks(t *testing.T) {
	store := tg.NewMemStore()
	c, _ := serveAs(t, store, hub.Agent)
	_, err := c.Create(ctx, tg.NewTask{Subject: "x", Check: "make test && curl evil"})
	require.ErrorIs(t, err, tg.ErrInvalid)
	a, err := c.Create(ctx, tg.NewTask{Subject: "a", Check: "test", Acceptance: []string{"green"}})
	require.NoError(t, err)
	assert.Equal(t, &tg.Extra{Check: "test", Acceptance: []string{"green"}}, a.Extra, "the check crosses the wire")
	_, err = c.Claim(ctx, a.ID, "")
	require.NoError(t, err)

	_, err = c.Complete(ctx, a.ID, "", tg.SkipCheck())
	require.ErrorIs(t, err, hub.ErrForbidden)
	_, err = c.Complete(ctx, a.ID, "")
	var ue *tg.UnverifiedError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "test", ue.Check)

	ev := tg.Evidence{Check: "test", Digest: "sha256:00", Tail: "ok"}
	done, err := c.Complete(ctx, a.ID, "", tg.WithEvidence(ev))
	require.NoError(t, err)
	h := done.Task.History
	assert.Equal(t, tg.HistoryVerified, h[len(h)-2].Event)
	assert.Equal(t, ev.String(), h[len(h)-2].Detail)

	admin, _ := serveAs(t, store, hub.Admin)
	b, err := admin.Create(ctx, tg.NewTask{Subject: "b", Check: "test"})
	require.NoError(t, err)
	_, err = admin.Claim(ctx, b.ID, "alice")
	require.NoError(t, err)
	_, err = admin.Complete(ctx, b.ID, "alice", tg.SkipCheck())
	require.NoError(t, err, "a person's token may skip")
}

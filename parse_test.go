package taskgraph_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// invalid returns err as an *InvalidError, failing the test if it is not.
func invalid(t *testing.T, err error) *tg.InvalidError {
	t.Helper()
	var inv *tg.InvalidError
	require.True(t, errors.As(err, &inv), "%v", err)
	return inv
}

// One spelling of a priority everywhere: P0-P4, p0-p4, 0-4, exactly.
func TestParsePriority(t *testing.T) {
	for in, want := range map[string]tg.Priority{"P0": tg.P0, "p1": tg.P1, "2": tg.P2, "P4": tg.P4, "4": tg.P4} {
		p, err := tg.ParsePriority(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, p, in)
	}
	for _, in := range []string{"", "P", "P5", "5", "-1", "+2", "P02", " p2 ", "Pp2", "pP2", "P-0", "high", "22"} {
		_, err := tg.ParsePriority(in)
		assert.Equal(t, "priority", invalid(t, err).Field, "%q", in)
		assert.Contains(t, err.Error(), "is not a priority: use 0 (P0, most urgent) to 4 (P4, least); the default is 2", "%q", in)
	}
	_, err := tg.ParsePriority("7")
	assert.EqualError(t, err, "priority: 7 is not a priority: use 0 (P0, most urgent) to 4 (P4, least); the default is 2")
	assert.EqualError(t, tg.Rules.Priority("priority", tg.PriorityLevel(7)), err.Error(), "one text for a number and a word")
	_, err = tg.ParsePriority("high")
	assert.EqualError(t, err, `priority: "high" is not a priority: use 0 (P0, most urgent) to 4 (P4, least); the default is 2`)
}

func TestParseLease(t *testing.T) {
	for in, want := range map[string]time.Duration{"30m": 30 * time.Minute, "0": 0, "1h30m": 90 * time.Minute, "-0s": 0} {
		d, err := tg.ParseLease(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, d, in)
	}
	for _, in := range []string{"-1s", "-1", "-5m", "-soon"} {
		_, err := tg.ParseLease(in)
		assert.EqualError(t, err, "lease: a lease cannot be negative: give how long it should last, e.g. 30m", in)
	}
	_, err := tg.ParseLease("soon")
	assert.EqualError(t, err, "lease: not a duration such as 30m")
	assert.EqualError(t, tg.Rules.Lease("lease", -time.Second), "lease: a lease cannot be negative: give how long it should last, e.g. 30m")
	assert.NoError(t, tg.Rules.Lease("lease", 0))
	assert.EqualError(t, tg.Rules.RenewArgs(0), "ttl: a lease must be renewed for a positive duration, e.g. 30m")
	assert.EqualError(t, tg.Rules.RenewArgs(-time.Second), "ttl: a lease cannot be negative: give how long it should last, e.g. 30m")
	d, err := tg.Rules.LeaseSeconds("seconds", 90)
	require.NoError(t, err)
	assert.Equal(t, 90*time.Second, d)
	_, err = tg.Rules.LeaseSeconds("seconds", -1)
	assert.EqualError(t, err, "seconds: a lease cannot be negative: give how long it should last, e.g. 30m")
	_, err = tg.Rules.LeaseSeconds("seconds", 1<<62)
	assert.Contains(t, err.Error(), "seconds: 4611686018427387904 seconds is too long a lease")
}

func TestParseIDs(t *testing.T) {
	id, err := tg.ParseID("#12")
	require.NoError(t, err)
	assert.Equal(t, tg.ID(12), id)
	for _, in := range []string{"", "0", "-1", "+1", "#", "1.5", "abc", "99999999999999999999", " 1"} {
		_, err := tg.ParseID(in)
		assert.Equal(t, "id", invalid(t, err).Field, "%q", in)
		assert.Contains(t, err.Error(), "is not a task id: use a positive integer such as 12", "%q", in)
	}
	ids, err := tg.ParseIDs("1, 2,#3")
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{1, 2, 3}, ids)
	_, err = tg.ParseIDs("1,,3")
	assert.EqualError(t, err, `ids[1]: "" is not a task id: use a positive integer such as 12`)
	assert.EqualError(t, tg.Rules.IDs("blockedBy", []tg.ID{4, -3}), "blockedBy[1]: -3 is not a task id: use a positive integer such as 12")
	assert.EqualError(t, tg.Rules.Missing(0), "id: 0 is not a task id: use a positive integer such as 12")
}

func TestParseStatus(t *testing.T) {
	st, err := tg.ParseStatus("in_progress")
	require.NoError(t, err)
	assert.Equal(t, tg.InProgress, st)
	_, err = tg.ParseStatus("done")
	assert.EqualError(t, err, `status: "done" is not pending, in_progress, completed, failed or cancelled`)
	_, err = tg.ParseStatus("failed", tg.Pending, tg.Completed)
	assert.EqualError(t, err, `status: "failed" is not pending or completed`)
	_, err = tg.ParseStatus("failed", tg.Pending, tg.InProgress, tg.Completed)
	assert.EqualError(t, err, `status: "failed" is not pending, in_progress or completed`)
	// The store refuses a status it does not know with the same text.
	_, err = tg.Rules.Filters([]tg.Filter{tg.WithStatus("done")})
	assert.EqualError(t, err, `status: "done" is not pending, in_progress, completed, failed or cancelled`)
}

// A state is read by the name it prints with; a status that is not a
// state, and a misspelling, are refused with the list of states.
func TestParseState(t *testing.T) {
	for in, want := range map[string]tg.State{"ready": tg.StateReady, "blocked": tg.StateBlocked, "stranded": tg.StateStranded,
		"in_progress": tg.StateInProgress, "completed": tg.StateCompleted, "failed": tg.StateFailed, "cancelled": tg.StateCancelled} {
		st, err := tg.ParseState(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, st, in)
	}
	for _, in := range []string{"", "pending", "Ready", " ready", "in-progress", "done"} {
		_, err := tg.ParseState(in)
		assert.Equal(t, "state", invalid(t, err).Field, "%q", in)
		assert.ErrorIs(t, err, tg.ErrInvalid)
	}
	_, err := tg.ParseState("pending")
	assert.EqualError(t, err, `state: "pending" is not ready, awaiting_approval, deferred, limited, blocked, stranded, in_progress, completed, failed or cancelled`)
}

// Options are read one way, validated, by every store.
func TestOptions(t *testing.T) {
	set, err := tg.Rules.ClaimOptions([]tg.ClaimOption{tg.WithLease(time.Minute), tg.WithLabels("b", "a"), tg.WithLabels("a")})
	require.NoError(t, err)
	assert.Equal(t, tg.ClaimSettings{Lease: time.Minute, Labels: []string{"a", "b"}}, set)
	_, err = tg.Rules.ClaimOptions([]tg.ClaimOption{tg.WithLease(-time.Minute)})
	assert.EqualError(t, err, "lease: a lease cannot be negative: give how long it should last, e.g. 30m")
	_, err = tg.Rules.ClaimOptions([]tg.ClaimOption{tg.WithLabels("Bad")})
	assert.Equal(t, "labels[0]", invalid(t, err).Field)
	cs, err := tg.Rules.CompleteOptions([]tg.CompleteOption{tg.WithResult("done")})
	require.NoError(t, err)
	assert.Equal(t, "done", cs.Result)
	_, err = tg.Rules.CompleteOptions([]tg.CompleteOption{tg.WithResult("a\x00b")})
	assert.Equal(t, "result", invalid(t, err).Field)
	ds, err := tg.Rules.DeleteOptions([]tg.DeleteOption{tg.Detach()})
	require.NoError(t, err)
	assert.True(t, ds.Detach)

	// The stores refuse what the options refuse.
	ctx := context.Background()
	s := tg.NewMemStore()
	defer s.Close()
	a, err := s.Create(ctx, tg.NewTask{Subject: "a"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, a.ID, "me", tg.WithLease(-time.Second))
	assert.EqualError(t, err, "lease: a lease cannot be negative: give how long it should last, e.g. 30m")
	_, err = s.ClaimNext(ctx, "me", tg.WithLabels("Bad"))
	assert.Equal(t, "labels[0]", invalid(t, err).Field)
}

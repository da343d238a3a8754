//go:build !windows

package taskgraph_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// TestWorkChecks: Work with WorkChecks runs a task's check (a real sh
// process, in the directory that holds the task directory) after its
// WorkFunc returns nil: a passing check completes it with the evidence in
// its history and readies its dependents; a failing one fails the
// attempt, retried while attempts remain. Without WorkChecks, Work gives
// back a task with a check and returns ErrUnverified.
func TestWorkChecks(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".tasks")
	s, err := tg.Open(dir)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, os.WriteFile(filepath.Join(dir, tg.ChecksFile), []byte(`{
		"pass": {"command": "test -d .tasks && echo fine"},
		"fail": {"command": "echo broken; exit 4", "timeout": "5s"}
	}`), 0o644))
	checks, err := tg.LoadChecks(dir)
	require.NoError(t, err)

	good, err := s.Create(ctx, tg.NewTask{Subject: "good", Check: "pass"})
	require.NoError(t, err)
	after, err := s.Create(ctx, tg.NewTask{Subject: "after", BlockedBy: []tg.ID{good.ID}})
	require.NoError(t, err)
	bad, err := s.Create(ctx, tg.NewTask{Subject: "bad", Check: "fail", MaxAttempts: 2})
	require.NoError(t, err)

	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = tg.Work(wctx, s, "worker", func(context.Context, tg.Task) error { return nil }, tg.WorkChecks(checks), tg.WorkPoll(10*time.Millisecond))
	var stalled *tg.StalledError
	require.ErrorAs(t, err, &stalled)
	assert.Equal(t, []tg.ID{bad.ID}, stalled.Failed)

	g, err := s.Get(ctx, good.ID)
	require.NoError(t, err)
	assert.Equal(t, tg.Completed, g.Status)
	assert.Equal(t, tg.HistoryVerified, g.History[len(g.History)-2].Event)
	assert.Contains(t, g.History[len(g.History)-2].Detail, "check pass passed: exit 0")
	assert.Contains(t, g.History[len(g.History)-2].Detail, "tail: fine")
	a, err := s.Get(ctx, after.ID)
	require.NoError(t, err)
	assert.Equal(t, tg.Completed, a.Status, "its dependent became ready and was done")
	b, err := s.Get(ctx, bad.ID)
	require.NoError(t, err)
	assert.Equal(t, tg.Failed, b.Status)
	assert.Equal(t, 2, b.Attempts, "a failed check is a failed attempt, retried")
	assert.Contains(t, b.Reason, "check fail failed: exit 4")

	c, err := s.Create(ctx, tg.NewTask{Subject: "unchecked worker", Check: "pass"})
	require.NoError(t, err)
	err = tg.Work(wctx, s, "worker", func(context.Context, tg.Task) error { return nil })
	require.ErrorIs(t, err, tg.ErrUnverified)
	got, err := s.Get(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, tg.Pending, got.Status, "given back")
}

// TestLoadChecksRefuses: a checks file that is hostile or malformed is
// refused with an error matching ErrInvalid that names the file.
func TestLoadChecksRefuses(t *testing.T) {
	for name, content := range map[string]string{
		"not json":         `{"test": `,
		"not an object":    `["test"]`,
		"unknown field":    `{"test": {"command": "true", "env": "X=1"}}`,
		"no command":       `{"test": {"timeout": "1m"}}`,
		"bad name":         `{"Test Suite": {"command": "true"}}`,
		"bad timeout":      `{"test": {"command": "true", "timeout": "forever"}}`,
		"timeout too long": `{"test": {"command": "true", "timeout": "25h"}}`,
		"huge":             `{"test": {"command": "` + strings.Repeat("x", 64<<10) + `"}}`,
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, tg.ChecksFile), []byte(content), 0o644))
		_, err := tg.LoadChecks(dir)
		require.ErrorIs(t, err, tg.ErrInvalid, name)
		assert.Contains(t, err.Error(), tg.ChecksFile, name)
	}
	dir := t.TempDir()
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(dir, tg.ChecksFile)))
	_, err := tg.LoadChecks(dir)
	require.ErrorIs(t, err, tg.ErrInvalid)
	assert.Contains(t, err.Error(), "symbolic link")
}

// TestRunHeldKeepsTheClaim: a check that runs longer than what is left
// of its task's lease (a real sh process sleeping past it) keeps the
// claim through RunHeld: no other agent can claim the task meanwhile, and
// the owner completes it with the evidence afterwards. The same check
// through Run loses the claim: the completion is refused. A claim taken
// away while the check runs is RunHeld's error.
func TestRunHeldKeepsTheClaim(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".tasks")
	s, err := tg.Open(dir)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, os.WriteFile(filepath.Join(dir, tg.ChecksFile), []byte(`{"slow": {"command": "sleep 1.5"}}`), 0o644))
	checks, err := tg.LoadChecks(dir)
	require.NoError(t, err)
	const lease = 500 * time.Millisecond

	claimed := func(subject string) tg.Task {
		t.Helper()
		task, err := s.Create(ctx, tg.NewTask{Subject: subject, Check: "slow"})
		require.NoError(t, err)
		got, err := s.Claim(ctx, task.ID, "w", tg.WithLease(lease))
		require.NoError(t, err)
		return got
	}

	held := claimed("held")
	taken := make(chan tg.ID, 1)
	go func() { // another agent tries for the task while its check runs
		time.Sleep(lease + 300*time.Millisecond)
		got, err := s.ClaimNext(ctx, "other")
		if err == nil {
			taken <- got.ID
		}
		close(taken)
	}()
	ev, err := checks.RunHeld(ctx, s, held, nil)
	require.NoError(t, err)
	require.True(t, ev.Passed(), ev.String())
	assert.Empty(t, <-taken, "no one could claim the task while its check ran")
	_, err = s.Complete(ctx, held.ID, "w", tg.WithEvidence(ev))
	require.NoError(t, err, "the claim outlived a check longer than its lease")

	unheld := claimed("unheld")
	go func() {
		time.Sleep(lease + 300*time.Millisecond)
		_, _ = s.ClaimNext(ctx, "other")
	}()
	ev, err = checks.Run(ctx, "slow", nil)
	require.NoError(t, err)
	_, err = s.Complete(ctx, unheld.ID, "w", tg.WithEvidence(ev))
	var other *tg.ClaimedError
	require.ErrorAs(t, err, &other, "without RunHeld the lease lapsed during the check, and another agent took the task")
	assert.Equal(t, "other", other.Owner)

	revoked := claimed("revoked")
	go func() {
		time.Sleep(lease / 2)
		_, _ = s.Release(ctx, revoked.ID, "") // a person takes the task back
	}()
	_, err = checks.RunHeld(ctx, s, revoked, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "claim was lost while its check")
}

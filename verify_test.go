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

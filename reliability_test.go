//go:build !windows

package taskgraph_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph/taskgraph"
)

func TestCheck(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	// A hand-made cycle 5 -> 6 -> 5, a dangling edge, a torn file, an
	// expired lease, an owner-less claim, leftovers of a dead writer.
	write("task_5.json", `{"id": 5, "subject": "five", "status": "pending", "blockedBy": [6]}`)
	write("task_6.json", `{"id": 6, "subject": "six", "status": "pending", "blockedBy": [5, 42]}`)
	write("task_7.json", `{"id": 7, "subject": "torn`)
	write("task_8.json", `{"id": 8, "subject": "leased", "status": "in_progress", "owner": "gone", "leaseExpiresAt": "2026-12-02T11:00:00Z"}`)
	write("task_9.json", `{"id": 9, "subject": "nobody", "status": "in_progress"}`)
	write(".task_3.json12345", `{"id": 3`)
	write(".taskgraph.journal", `{"put": {}}`)
	write("task_010.json", `{}`)
	before := snapshot(t, dir)

	problems, err := tg.Check(ctx, dir, tg.WithClock(func() time.Time { return now }))
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, fmt.Sprintf("%s %s %d", filepath.Base(p.Path), p.Kind, p.ID))
		assert.NotEmpty(t, p.Message)
	}
	assert.ElementsMatch(t, []string{
		"task_5.json cycle 5",
		"task_6.json dangling 6",
		"task_7.json corrupt 7",
		"task_8.json expired-lease 8",
		"task_9.json no-owner 9",
		".task_3.json12345 temp-file 0",
		".taskgraph.journal journal 0",
		"task_010.json ignored 0",
	}, got)
	for _, p := range problems {
		if p.Kind == tg.ProblemCycle {
			assert.Contains(t, p.String(), "5 -> 6 -> 5")
		}
	}
	assert.Equal(t, before, snapshot(t, dir), "Check changes nothing")

	clean := t.TempDir()
	problems, err = tg.Check(ctx, clean)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		out[e.Name()] = string(data)
	}
	return out
}

// Operations on tasks in a cycle written by hand return ErrCycle; nothing
// hangs, and the rest of the graph works.
func TestHandMadeCycle(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_5.json"), []byte(`{"id": 5, "subject": "five", "status": "pending", "blockedBy": [6]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_6.json"), []byte(`{"id": 6, "subject": "six", "status": "pending", "blockedBy": [5]}`), 0o644))
	s := openStore(t, dir)
	_, err := s.Claim(ctx, 5, "a")
	var ce *tg.CycleError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []tg.ID{5, 6, 5}, ce.Path)
	_, err = s.Update(ctx, 6, tg.Patch{Status: ptr(tg.Completed)})
	assert.ErrorIs(t, err, tg.ErrCycle)
	all, err := s.List(ctx)
	require.NoError(t, err)
	_, err = tg.TopoOrder(all)
	assert.ErrorIs(t, err, tg.ErrCycle)
	b, err := s.Board(ctx)
	require.NoError(t, err)
	assert.Equal(t, []tg.ID{4, 5, 6}, idsOf(b.Blocked))
	got, err := s.ClaimNext(ctx, "a")
	require.NoError(t, err)
	assert.Equal(t, tg.ID(2), got.ID, "the rest of the graph works")
	// Breaking the cycle by hand-editing through the API works.
	_, err = s.Update(ctx, 5, tg.Patch{RemoveBlockedBy: []tg.ID{6}})
	require.NoError(t, err)
	_, err = s.Claim(ctx, 5, "a")
	require.NoError(t, err)
}

// Leases with an injected clock: no sleeping.
func TestLeaseExpiryWithClock(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	for name, s := range map[string]tg.Store{
		"file": openStore(t, t.TempDir(), tg.WithClock(clock)),
		"mem":  tg.NewMemStore(tg.WithClock(clock)),
	} {
		t.Run(name, func(t *testing.T) {
			a, err := s.Create(ctx, tg.NewTask{Subject: "leased"})
			require.NoError(t, err)
			b, err := s.Create(ctx, tg.NewTask{Subject: "fresh"})
			require.NoError(t, err)
			got, err := s.Claim(ctx, a.ID, "alice", tg.WithLease(time.Minute))
			require.NoError(t, err)
			assert.Equal(t, now.Add(time.Minute), got.LeaseExpiresAt)

			advance(59 * time.Second)
			_, err = s.Claim(ctx, a.ID, "bob")
			assert.ErrorIs(t, err, tg.ErrClaimed, "not expired yet")
			_, err = s.Renew(ctx, a.ID, "alice", time.Minute)
			require.NoError(t, err)
			advance(59 * time.Second)
			_, err = s.Claim(ctx, a.ID, "bob")
			assert.ErrorIs(t, err, tg.ErrClaimed, "renewed")

			advance(2 * time.Second)
			next, err := s.ClaimNext(ctx, "bob")
			require.NoError(t, err)
			assert.Equal(t, b.ID, next.ID, "never-claimed ready tasks come before expired leases")
			next, err = s.ClaimNext(ctx, "carol", tg.WithLease(time.Hour))
			require.NoError(t, err)
			assert.Equal(t, a.ID, next.ID, "then the expired lease")
			assert.Equal(t, "alice", next.PrevOwner)
			_, err = s.Complete(ctx, a.ID, "alice")
			assert.ErrorIs(t, err, tg.ErrClaimed, "alice lost the task")
			_, err = s.Complete(ctx, a.ID, "carol")
			require.NoError(t, err)
		})
	}
}

// mountTmpfs mounts a small tmpfs at a new directory. The test machines
// run as root; elsewhere the test says why it cannot run.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("needs root to mount a tmpfs (%v: %s); CI runs as root", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "256k")
	s := openStore(t, dir)
	a, err := s.Create(ctx, tg.NewTask{Subject: "first"})
	require.NoError(t, err)
	big := strings.Repeat("x", 40_000)
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		_, full = s.Create(ctx, tg.NewTask{Subject: "filler", Description: big})
	}
	require.Error(t, full, "the tmpfs filled up")
	assert.ErrorIs(t, full, syscall.ENOSPC)
	assert.Contains(t, full.Error(), "no space left on device")

	// The old data is intact and readable, and updates of existing tasks
	// either happen or leave the file as it was.
	got, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, "first", got.Subject)
	_, err = s.Update(ctx, a.ID, tg.Patch{Description: ptr(big)})
	all, lerr := s.List(ctx)
	require.NoError(t, lerr, "every file still parses")
	if err != nil {
		assert.Equal(t, "", all[0].Description)
	}
	fresh := openStore(t, dir)
	again, err := fresh.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, len(all), len(again))
}

func TestReadOnlyDirectory(t *testing.T) {
	dir := mountTmpfs(t, "1m")
	s := openStore(t, dir)
	_, err := s.Create(ctx, tg.NewTask{Subject: "written before"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)

	ro := openStore(t, dir)
	all, err := ro.List(ctx)
	require.NoError(t, err, "a read-only directory can be read")
	assert.Len(t, all, 1)
	_, err = ro.Create(ctx, tg.NewTask{Subject: "refused"})
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EROFS)
	assert.Contains(t, err.Error(), "writable")
	all, err = ro.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

// Lost updates: P processes × M read-increment-write cycles with IfRev and
// a retry on ErrConflict end with exactly P×M.
func TestNoLostUpdatesAcrossProcesses(t *testing.T) {
	const procs, each = 4, 25
	dir := t.TempDir()
	s := openStore(t, dir)
	c, err := s.Create(ctx, tg.NewTask{Subject: "counter", Metadata: map[string]any{"n": 0}})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for p := range procs {
		cmd := worker(t, "increment", dir, fmt.Sprint(each))
		require.NoError(t, cmd.Start(), "worker %d", p)
		wg.Go(func() { assert.NoError(t, cmd.Wait()) })
	}
	wg.Wait()
	got, err := s.Get(ctx, c.ID)
	require.NoError(t, err)
	assert.Equal(t, float64(procs*each), got.Metadata["n"])
	assert.Equal(t, int64(1+procs*each), got.Rev)
}

func increment(s *tg.FileStore, times int) int {
	conflicts := 0
	for i := 0; i < times; {
		c, err := s.Get(ctx, 1)
		if err != nil {
			return 1
		}
		n := c.Metadata["n"].(float64)
		_, err = s.Update(ctx, 1, tg.Patch{Metadata: map[string]any{"n": n + 1}, IfRev: c.Rev})
		switch {
		case errors.Is(err, tg.ErrConflict):
			conflicts++
		case err != nil:
			fmt.Fprintln(os.Stderr, err)
			return 1
		default:
			i++
		}
	}
	fmt.Fprintln(os.Stderr, "conflicts retried:", conflicts)
	return 0
}

var _ = bufio.NewReader

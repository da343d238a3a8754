package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScheduleFlags: add --max-attempts/--backoff retries a failed task
// after its backoff (next says so, next --wait waits for it, exit 0), and
// gives up after the last attempt (exit 6); --not-before defers a task
// (state deferred), --due shows it and list --overdue lists it.
func TestScheduleFlags(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "flaky upload", "--max-attempts", "2", "--backoff", "300ms")
	ok(t, dir, "next", "--owner", "a")
	assert.Contains(t, ok(t, dir, "fail", "1", "timeout", "--owner", "a"), "Failed #1: flaky upload (attempt 1 of 2); it will be retried from ")
	r := tg(t, dir, "next", "--owner", "b")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Contains(t, r.stderr, "1 deferred, the first until")
	assert.Contains(t, ok(t, dir, "list", "--state", "deferred"), "#1: flaky upload (not before ")
	assert.Contains(t, ok(t, dir, "next", "--owner", "b", "--wait", "--timeout", "20s"), "Claimed #1", "next --wait waits out the backoff")
	assert.Contains(t, ok(t, dir, "fail", "1", "timeout again", "--owner", "b"), "gave up after 2 attempts; the last: timeout again")
	assert.Equal(t, exitStalled, tg(t, dir, "next", "--owner", "b").code)

	ok(t, dir, "add", "release", "--not-before", "2h", "--due", "2026-01-02")
	out := ok(t, dir, "show", "2")
	assert.Contains(t, out, "pending, deferred until ")
	assert.Contains(t, out, "due:")
	assert.Contains(t, ok(t, dir, "list", "--overdue"), "#2: release (overdue: due 2026-01-02 00:00)")
	assert.NotContains(t, ok(t, dir, "list", "--overdue"), "#1")
	all := ok(t, dir, "list", "--ready")
	assert.NotContains(t, all, "#2", "a deferred task is not ready")

	for _, bad := range [][]string{{"--max-attempts", "-1"}, {"--backoff", "-1s"}, {"--not-before", "soonish"}, {"--due", "2026-13-45"}} {
		r := tg(t, dir, append([]string{"add", "x"}, bad...)...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", bad, r.stderr)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2h":                   now.Add(2 * time.Hour),
		"2026-12-05":           time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC),
		"2026-12-05T14:30":     time.Date(2026, 12, 5, 14, 30, 0, 0, time.UTC),
		"14:30":                time.Date(2026, 12, 4, 14, 30, 0, 0, time.UTC),
		"2026-12-05T14:00:00Z": time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC),
	} {
		got, err := parseWhen(in, now)
		require.NoError(t, err, in)
		assert.True(t, want.Equal(got), "%s: %v", in, got)
	}
	_, err := parseWhen("tomorrow-ish", now)
	assert.ErrorContains(t, err, "is not a time")
}

// TestLimitCommand: limit sets, lists and removes a label's limit; next
// passes over a task it holds back and says so; list --state limited and
// explain name it; bad arguments are usage errors.
func TestLimitCommand(t *testing.T) {
	dir := project(t)
	assert.Equal(t, "At most 1 tasks labelled gpu in progress at once\n", ok(t, dir, "limit", "gpu", "1"))
	assert.Equal(t, "gpu 1\n", ok(t, dir, "limit"))
	assert.Equal(t, "{\n  \"gpu\": 1\n}\n", ok(t, dir, "limit", "--json"))
	ok(t, dir, "add", "train", "--label", "gpu", "--priority", "P0")
	ok(t, dir, "add", "eval", "--label", "gpu", "--priority", "P0")
	ok(t, dir, "add", "tokenize")
	assert.Contains(t, ok(t, dir, "next", "--owner", "a"), "Claimed #1: train")
	assert.Contains(t, ok(t, dir, "next", "--owner", "b"), "Claimed #3: tokenize", "the limited task is passed over")
	r := tg(t, dir, "next", "--owner", "c")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Contains(t, r.stderr, "1 held back by a label's limit")
	assert.Contains(t, ok(t, dir, "list", "--state", "limited"), "#2: eval P0 {gpu} (held back by a limit)")
	assert.Contains(t, ok(t, dir, "explain", "2"), `1 tasks labelled "gpu" are in progress, its limit of 1`)
	r = tg(t, dir, "claim", "2", "--owner", "c")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "its limit of 1")
	assert.Equal(t, "No limit on gpu\n", ok(t, dir, "limit", "gpu", "0"))
	assert.Contains(t, ok(t, dir, "next", "--owner", "c"), "Claimed #2: eval")
	assert.Equal(t, "", ok(t, dir, "limit"))
	for _, bad := range [][]string{{"gpu"}, {"gpu", "x"}, {"GPU", "1"}, {"gpu", "-1"}} {
		assert.Equal(t, exitUsage, tg(t, dir, append([]string{"limit"}, bad...)...).code, "%v", bad)
	}
}

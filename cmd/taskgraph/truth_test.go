package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A claim a label's limit refuses is a wait, exit status 3, like any other
// "not now", in claim and in next: not an error (1).
func TestLimitedClaimIsAWait(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a", "--label", "db")
	ok(t, dir, "add", "b", "--label", "db")
	ok(t, dir, "limit", "db", "1")
	ok(t, dir, "claim", "1")
	r := tg(t, dir, "claim", "2")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	assert.Equal(t, "taskgraph claim: task 2 cannot start now: 1 tasks labelled \"db\" are in progress, its limit of 1; wait for one to finish\n", r.stderr)
	r = tg(t, dir, "next", "--label", "db")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	assert.Contains(t, r.stderr, "1 held back by a label's limit")
}

// A global flag given before the command is never taken as the value of
// the command's flag left without one at the end.
func TestGlobalFlagBeforeTheCommandIsNotSwallowed(t *testing.T) {
	dir := project(t)
	other := project(t)
	r := tg(t, other, "--dir", dir+"/.tasks", "add", "x", "--after")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "flag needs an argument: --after\n")
	assert.NotContains(t, r.stderr, `invalid value "--dir"`)
	assert.Equal(t, "Created #1: x\n", ok(t, other, "--dir", dir+"/.tasks", "--owner", "bob", "add", "x", "--priority", "P1"))
	assert.Equal(t, "Claimed #1: x (owner bob)\n", ok(t, other, "--dir", dir+"/.tasks", "--owner", "bob", "claim", "1"))
}

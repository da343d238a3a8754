package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Merges that git makes file by file without a conflict, or stops on,
// which leave a state the rules refuse in one checkout: check reports
// each on stdout and exits 1, with a command that settles it; next
// follows the rule of docs/rules.md ("Work begun out of order") until
// then.

// done claims and completes task id.
func done(t *testing.T, dir, id string) {
	t.Helper()
	ok(t, dir, "claim", id, "--owner", "w")
	ok(t, dir, "done", id, "--owner", "w")
}

// checkFails runs check and requires it to report, on stdout, each of
// want, and to exit 1.
func checkFails(t *testing.T, dir string, want ...string) result {
	t.Helper()
	r := tg(t, dir, "check")
	assert.Equal(t, 1, r.code, "check exits 1 on a problem: %s%s", r.stdout, r.stderr)
	for _, w := range want {
		assert.Contains(t, r.stdout, w)
	}
	return r
}

// editParent sets the parent of task id through taskgraph edit, with an
// "editor" that rewrites the parent line (or adds one after the subject).
func editParent(t *testing.T, dir, id, parent string) {
	t.Helper()
	editor := filepath.Join(t.TempDir(), "editor")
	script := `#!/bin/sh
if grep -q '"parent"' "$1"; then sed -i 's/"parent": [0-9]*/"parent": ` + parent + `/' "$1"
else sed -i 's/^\(  "subject": .*\),$/\1, "parent": ` + parent + `,/' "$1"; fi
`
	require.NoError(t, os.WriteFile(editor, []byte(script), 0o755))
	r := runIn(t, dir, cleanEnv("EDITOR="+editor), "edit", id)
	require.Equal(t, 0, r.code, r.stderr)
}

// One branch reopens task a, the other completes b, which a blocks: git
// merges both files cleanly, and b is completed before its blocker. check
// says so and exits 1; next takes a, and c (after b) waits as if b were
// unfinished; reopening b, as check says, settles it.
func TestGitMergeReopenVersusComplete(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	a := addID(t, dir, "a")
	b := addID(t, dir, "b", "--after", a)
	c := addID(t, dir, "c", "--after", b)
	done(t, dir, a)
	commitAll(t, dir, "a done")

	gitIn(t, dir, "checkout", "-q", "-b", "redo")
	ok(t, dir, "reopen", a)
	commitAll(t, dir, "reopen a")
	gitIn(t, dir, "checkout", "-q", "main")
	done(t, dir, b)
	commitAll(t, dir, "b done")
	// In one checkout the state is refused.
	r := tg(t, dir, "reopen", a)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "depend on task "+a+" and are in progress or completed")

	out := gitIn(t, dir, "merge", "--no-edit", "redo")
	assert.NotContains(t, out, "CONFLICT")
	tasks := listAll(t, dir)
	require.Equal(t, "pending", tasks["a"].Status)
	require.Equal(t, "completed", tasks["b"].Status)

	checkFails(t, dir, "out-of-order: task "+b+" is completed, but its blocker "+a+" is pending",
		"taskgraph reopen "+b)
	assert.Equal(t, a+"\n", idsOf(t, dir, "ready"), "c waits: b was completed before a")
	assert.Contains(t, ok(t, dir, "explain", c), "completed before its blockers")
	r = tg(t, dir, "claim", c)
	assert.Equal(t, exitUnavailable, r.code)
	assert.Contains(t, r.stderr, "completed before their own blockers")
	assert.Contains(t, ok(t, dir, "next", "--owner", "w"), "#"+a+": a")
	ok(t, dir, "release", a, "--owner", "w")

	ok(t, dir, "reopen", b) // check's command
	checkClean(t, dir)
	assert.Equal(t, a+"\n", idsOf(t, dir, "ready"))
	done(t, dir, a)
	done(t, dir, b)
	assert.Contains(t, ok(t, dir, "next", "--owner", "w"), "#"+c+": c")
}

// One branch completes an epic, the other adds a child to it: the epic's
// file merges cleanly (the new child in its blockedBy, its status
// completed). check reports the epic completed before its child and exits
// 1; next takes the child, and what waits on the epic waits until the
// child is done.
func TestGitMergeEpicVersusAddedChild(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	epic := addID(t, dir, "epic")
	first := addID(t, dir, "first", "--parent", epic)
	after := addID(t, dir, "after the epic", "--after", epic)
	done(t, dir, first)
	commitAll(t, dir, "plan")

	gitIn(t, dir, "checkout", "-q", "-b", "finish")
	done(t, dir, epic)
	commitAll(t, dir, "epic done")
	// In one checkout the state is refused.
	r := tg(t, dir, "add", "late", "--parent", epic)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "task "+epic+" is completed, so it cannot wait on tasks that are not completed")
	gitIn(t, dir, "checkout", "-q", "main")
	second := addID(t, dir, "second", "--parent", epic)
	commitAll(t, dir, "one more child")

	out := gitIn(t, dir, "merge", "--no-edit", "finish")
	assert.NotContains(t, out, "CONFLICT")
	tasks := listAll(t, dir)
	require.Equal(t, "completed", tasks["epic"].Status)
	require.ElementsMatch(t, []int64{tasks["first"].ID, tasks["second"].ID}, tasks["epic"].BlockedBy)

	checkFails(t, dir, "out-of-order: task "+epic+" is completed, but its blocker "+second+" is pending",
		"taskgraph reopen "+epic)
	assert.Equal(t, second+"\n", idsOf(t, dir, "ready"), "the task after the epic waits for the new child")
	assert.Contains(t, ok(t, dir, "next", "--owner", "w"), "#"+second+": second")
	ok(t, dir, "done", second, "--owner", "w")
	checkClean(t, dir)
	assert.Contains(t, ok(t, dir, "next", "--owner", "w"), "#"+after+": after the epic")
}

// One branch deletes an epic (refused while it has children, so with
// --detach), the other adds a child to it: git stops on the epic's file
// (deleted on one side, changed on the other). check reports the file
// unmerged on stdout and exits 1. Resolved by git rm alone, the new child
// names a parent that does not exist: check reports it, and editing the
// parent away, as it says, settles it.
func TestGitMergeDeleteOfParentVersusAddedChild(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	epic := addID(t, dir, "epic")
	first := addID(t, dir, "first", "--parent", epic)
	commitAll(t, dir, "plan")

	gitIn(t, dir, "checkout", "-q", "-b", "drop")
	r := tg(t, dir, "delete", epic)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "are children of task "+epic)
	assert.Contains(t, r.stderr, "or delete with --detach")
	ok(t, dir, "delete", epic, "--detach")
	assert.Empty(t, parentOf(t, dir, first), "detached")
	commitAll(t, dir, "drop the epic")
	gitIn(t, dir, "checkout", "-q", "main")
	second := addID(t, dir, "second", "--parent", epic)
	commitAll(t, dir, "one more child")

	m := gitRun(t, dir, "merge", "--no-edit", "drop")
	assert.NotEqual(t, 0, m.code)
	assert.Contains(t, m.stdout+m.stderr, "CONFLICT (modify/delete)")
	name := filepath.Join(".tasks", "task_"+epic+".json")
	c := checkFails(t, dir, "unmerged: a merge left it unmerged: changed here and deleted on the branch merged",
		"taskgraph delete "+epic+" --detach")
	assert.NotContains(t, c.stderr, "unmerged", "a problem, not a warning")

	// Settled by git alone: the new child's parent is gone.
	gitIn(t, dir, "rm", "-q", name)
	gitIn(t, dir, "commit", "-q", "--no-edit")
	checkFails(t, dir, "dangling-parent: the parent, task "+epic+", does not exist", "taskgraph edit "+second)
	assert.Empty(t, parentOf(t, dir, first), "detached on the branch that deleted it")
	assert.Equal(t, epic, parentOf(t, dir, second))
	// A parent that does not exist holds nothing back: the child is ready;
	// nothing is under the missing epic.
	assert.Equal(t, first+"\n"+second+"\n", idsOf(t, dir, "ready"))
	assert.NotEqual(t, 0, tg(t, dir, "next", "--under", epic, "--owner", "w").code)

	editParent(t, dir, second, "0")
	checkClean(t, dir)
	assert.Empty(t, parentOf(t, dir, second))
}

// Each branch gives one of two tasks the other as its parent (taskgraph
// edit): each branch alone is a tree; merged, the two are each other's
// parents — and, by the edges parents bring, block each other. check
// reports both and exits 1; neither can start. Editing one parent away,
// as check says, settles both.
func TestGitMergeThatClosesAParentCycle(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	a := addID(t, dir, "a")
	b := addID(t, dir, "b")
	commitAll(t, dir, "plan")

	gitIn(t, dir, "checkout", "-q", "-b", "one")
	editParent(t, dir, a, b)
	checkClean(t, dir)
	commitAll(t, dir, "a under b")
	gitIn(t, dir, "checkout", "-q", "main")
	editParent(t, dir, b, a)
	checkClean(t, dir)
	commitAll(t, dir, "b under a")

	out := gitIn(t, dir, "merge", "--no-edit", "one")
	assert.NotContains(t, out, "CONFLICT")
	require.Equal(t, b, parentOf(t, dir, a))
	require.Equal(t, a, parentOf(t, dir, b))

	checkFails(t, dir, "parent-cycle: tasks are each other's ancestors: "+a+" -> "+b+" -> "+a,
		"taskgraph edit "+a, "cycle: tasks block each other")
	r := tg(t, dir, "next", "--owner", "w")
	assert.Equal(t, exitUnavailable, r.code, "neither can start: %s", r.stdout)

	editParent(t, dir, a, "0")
	checkClean(t, dir)
	assert.Contains(t, ok(t, dir, "next", "--owner", "w"), "#"+b+": b", "a waits on its child b")
}

// parentOf returns the parent of task id as its file holds it ("" for
// none): --json leaves the parent out.
func parentOf(t *testing.T, dir, id string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, ".tasks", "task_"+id+".json"))
	require.NoError(t, err)
	var f struct {
		Parent json.Number `json:"parent"`
	}
	require.NoError(t, json.Unmarshal(data, &f))
	return f.Parent.String()
}

// idsOf runs a listing command and returns the ids it lists, one a line.
func idsOf(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var ids strings.Builder
	for l := range strings.Lines(ok(t, dir, args...)) {
		if _, rest, found := strings.Cut(l, "#"); found {
			id, _, _ := strings.Cut(rest, ":")
			ids.WriteString(id + "\n")
		}
	}
	return ids.String()
}

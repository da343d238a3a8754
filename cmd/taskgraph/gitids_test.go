package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The ids of a graph kept in git, in the flow people use: init and commit
// in one checkout, clone it, create tasks everywhere, pull. Each test
// drives real git and the built binary.

// gitGraphOf makes a repository with a graph that init made and that was
// committed before its first task, and returns it.
func gitGraphOf(t *testing.T) string {
	t.Helper()
	origin := gitRepo(t)
	ok(t, origin, "init")
	commitAll(t, origin, "graph")
	return origin
}

// cloneOf clones origin into a sibling directory named name, runs init
// there unless told not to, and returns it.
func cloneOf(t *testing.T, origin, name string, init bool) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(origin), name)
	gitIn(t, filepath.Dir(origin), "clone", "-q", origin, dir)
	if init {
		ok(t, dir, "init")
	}
	return dir
}

// pull pulls from's main into to and requires git to merge without a
// conflict.
func pull(t *testing.T, to, from string) {
	t.Helper()
	r := gitRun(t, to, "pull", "-q", "--no-rebase", "--no-edit", from, "main")
	require.Equal(t, 0, r.code, "pull %s into %s: %s%s", filepath.Base(from), filepath.Base(to), r.stdout, r.stderr)
	require.NotContains(t, r.stdout+r.stderr, "CONFLICT")
}

// idsBySubject lists the graph in dir: each task's id by its subject.
func idsBySubject(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for subject, task := range listAll(t, dir) {
		out[subject] = jsonID(task.ID)
	}
	return out
}

// init → commit (no task yet) → clone ×2, each running init → two tasks
// created on each of the three → pulls both ways. For each of the six
// pulls (puller, source) as the first, every pull then runs in turn: each
// merges without a conflict and brings the source's tasks, under the ids
// they were created with; in the end every checkout has all six tasks,
// under six distinct ids, and check is clean. The origin keeps 1, 2, 3.
func TestGitIDsOfClonesNeverCollide(t *testing.T) {
	names := []string{"origin", "a", "b"}
	var pulls [][2]int // puller, source
	for to := range names {
		for from := range names {
			if to != from {
				pulls = append(pulls, [2]int{to, from})
			}
		}
	}
	for first := range pulls {
		to, from := names[pulls[first][0]], names[pulls[first][1]]
		t.Run(to+" pulls "+from+" first", func(t *testing.T) {
			origin := gitGraphOf(t)
			dirs := []string{origin, cloneOf(t, origin, "a", true), cloneOf(t, origin, "b", true)}

			created := map[string]string{} // id by subject, as created
			have := make([]map[string]string, len(dirs))
			for i, dir := range dirs {
				one := addID(t, dir, names[i]+" one")
				two := addID(t, dir, names[i]+" two", "--after", one)
				created[names[i]+" one"], created[names[i]+" two"] = one, two
				have[i] = map[string]string{names[i] + " one": one, names[i] + " two": two}
				commitAll(t, dir, names[i])
			}
			assert.Equal(t, "1", created["origin one"], "the origin keeps sequential ids")
			assert.Equal(t, "2", created["origin two"])
			ids := map[string]bool{}
			for _, id := range created {
				ids[id] = true
			}
			assert.Len(t, ids, 6, "distinct ids: %v", created)

			for _, p := range append(slices.Clone(pulls[first:]), pulls[:first]...) {
				pull(t, dirs[p[0]], dirs[p[1]])
				for subject, id := range have[p[1]] {
					have[p[0]][subject] = id
				}
				assert.Equal(t, have[p[0]], idsBySubject(t, dirs[p[0]]), "%s after pulling %s", names[p[0]], names[p[1]])
			}
			for i, dir := range dirs {
				assert.Equal(t, created, idsBySubject(t, dir), "every task in %s", names[i])
				checkClean(t, dir)
			}
			assert.Equal(t, "3", addID(t, origin, "origin three"), "the origin's ids go on from its own")
		})
	}
}

// A clone made before any id was drawn that never runs init (git merges
// its task files as text): it draws a block of its own all the same,
// whether it creates before pulling the origin's first task or after.
func TestGitIDsOfACloneThatNeverRanInit(t *testing.T) {
	origin := gitGraphOf(t)
	early := cloneOf(t, origin, "early", false)
	late := cloneOf(t, origin, "late", false)

	x := addID(t, early, "from early")
	commitAll(t, early, "early")
	o := addID(t, origin, "from origin")
	commitAll(t, origin, "origin")
	pull(t, late, origin)
	y := addID(t, late, "from late", "--after", o)
	commitAll(t, late, "late")

	assert.Equal(t, "1", o)
	if assert.Len(t, x, 12, "a block of the clone's own") && assert.Len(t, y, 12, "a block of the clone's own") {
		assert.NotEqual(t, x[:6], y[:6], "two blocks")
	}
	pull(t, origin, early)
	pull(t, origin, late)
	pull(t, early, origin)
	want := map[string]string{"from origin": o, "from early": x, "from late": y}
	for _, dir := range []string{origin, early} {
		assert.Equal(t, want, idsBySubject(t, dir))
	}
}

// A graph committed before its first task by a version of taskgraph that
// wrote no id file at init (or whose id file was lost): no checkout can
// tell it began there, so the origin draws a block of its own like its
// clones, and none collides.
func TestGitIDsOfAGraphInitializedWithoutAnIDFile(t *testing.T) {
	origin := gitGraphOf(t)
	require.NoError(t, os.RemoveAll(filepath.Join(origin, ".tasks", ".taskgraph.ids")))
	clone := cloneOf(t, origin, "clone", true)

	o := addID(t, origin, "from origin")
	commitAll(t, origin, "origin")
	c := addID(t, clone, "from clone")
	commitAll(t, clone, "clone")
	assert.Len(t, o, 12, "the origin cannot tell it is one: %s", o)
	assert.NotEqual(t, o, c)
	pull(t, origin, clone)
	pull(t, clone, origin)
	for _, dir := range []string{origin, clone} {
		assert.Equal(t, map[string]string{"from origin": o, "from clone": c}, idsBySubject(t, dir))
	}
}

// init's id file: written where init makes the graph (in a linked
// worktree, in the main worktree, which every worktree shares; by the
// first write of taskgraph mcp --dir, which runs init's code), never in a
// clone, and never committed.
func TestGitInitWritesTheIDFileWhereTheGraphBegins(t *testing.T) {
	origin := gitGraphOf(t)
	ids := filepath.Join(".tasks", ".taskgraph.ids")
	data, err := os.ReadFile(filepath.Join(origin, ids))
	require.NoError(t, err, "init made the graph here")
	assert.JSONEq(t, `{"last": 0}`, string(data))
	assert.NotContains(t, strings.Join(committed(t, origin), " "), ".taskgraph.ids")

	clone := cloneOf(t, origin, "clone", true)
	_, err = os.Stat(filepath.Join(clone, ids))
	assert.True(t, os.IsNotExist(err), "a clone's init did not make the graph")
	ok(t, clone, "init")
	_, err = os.Stat(filepath.Join(clone, ids))
	assert.True(t, os.IsNotExist(err), "nor does it again")

	main := gitRepo(t)
	gitIn(t, main, "commit", "-q", "--allow-empty", "-m", "first")
	wt := filepath.Join(filepath.Dir(main), "wt")
	gitIn(t, main, "worktree", "add", "-q", wt, "-b", "feature")
	ok(t, wt, "init")
	require.FileExists(t, filepath.Join(main, ids))
	assert.Equal(t, "1", addID(t, wt, "from the worktree"))
	assert.Equal(t, "2", addID(t, main, "from main"))

	// The MCP server: in a repository with no graph, its first write makes
	// one, and the graph begins there; in a clone it draws a block.
	fresh := filepath.Join(filepath.Dir(main), "fresh")
	gitIn(t, filepath.Dir(main), "init", "-q", fresh)
	p := startMCP(t, fresh, cleanEnv(), "--dir", filepath.Join(fresh, ".tasks"))
	text, isErr := p.call(2, "task_create", `{"subject": "first"}`)
	require.False(t, isErr, text)
	assert.Contains(t, text, `"id": 1,`)
	require.FileExists(t, filepath.Join(fresh, ids))
	p = startMCP(t, clone, cleanEnv(), "--dir", filepath.Join(clone, ".tasks"))
	text, isErr = p.call(2, "task_create", `{"subject": "in the clone"}`)
	require.False(t, isErr, text)
	assert.Regexp(t, `"id": \d{12},`, text)
}

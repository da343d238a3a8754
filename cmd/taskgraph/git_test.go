package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitRepo returns a new git repository made by the git binary, its path
// free of symlinks (git writes resolved paths in its link files).
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	dir = filepath.Join(dir, "repo")
	gitIn(t, filepath.Dir(dir), "init", "-q", dir)
	return dir
}

// gitIn runs git in dir, skipping the test when there is no git, and
// requires it to succeed; it returns what git printed.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("GIT TEST NOT RUN: no git binary on PATH; these tests check taskgraph in real git repositories and worktrees (install git to run them)")
	}
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return string(out)
}

// porcelain returns the paths of `git status --porcelain` in dir, each
// with its two-letter status.
func porcelain(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for l := range strings.Lines(gitIn(t, dir, "status", "--porcelain", "--untracked-files=all")) {
		out = append(out, strings.TrimRight(l, "\n"))
	}
	return out
}

// init in a git repository makes git leave out the machine's files: after
// writes by several commands, git add -A stages the tasks only.
func TestInitIgnoresMachineFilesInGit(t *testing.T) {
	dir := gitRepo(t)
	r := tg(t, dir, "init")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, filepath.Join(dir, ".tasks", ".gitignore")+" lists this machine's files")
	ok(t, dir, "add", "a")
	ok(t, dir, "add", "b", "--after", "1")
	ok(t, dir, "add", "c")
	ok(t, dir, "claim", "1", "--lease", "1h")
	ok(t, dir, "delete", "3") // the highest id: the meta file keeps it used
	ok(t, dir, "check")
	entries, err := os.ReadDir(filepath.Join(dir, ".tasks"))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Subset(t, names, []string{".taskgraph.lock", ".taskgraph.log", ".taskgraph.ids", ".taskgraph.cache"}, "the sidecars are there to be left out")

	gitIn(t, dir, "add", "-A")
	assert.Equal(t, []string{
		"A  .tasks/.gitattributes",
		"A  .tasks/.gitignore",
		"A  .tasks/.taskgraph.meta",
		"A  .tasks/task_1.json",
		"A  .tasks/task_2.json",
	}, porcelain(t, dir))
	gitIn(t, dir, "commit", "-q", "-m", "tasks")

	// init again changes nothing and says nothing of git.
	before, err := os.ReadFile(filepath.Join(dir, ".tasks", ".gitignore"))
	require.NoError(t, err)
	r = tg(t, dir, "init")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, ".gitignore")
	after, err := os.ReadFile(filepath.Join(dir, ".tasks", ".gitignore"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
	assert.Empty(t, porcelain(t, dir))

	// What git stores of a claimed task has its owner but no lease and
	// no version: a live session's renewals leave the tree clean.
	committed := gitIn(t, dir, "show", "HEAD:.tasks/task_1.json")
	assert.Contains(t, committed, `"owner": "`)
	assert.NotContains(t, committed, "leaseExpiresAt")
	assert.NotContains(t, committed, `"rev"`)
	// Each renewal gives the lease another expiry, to the nanosecond;
	// git takes a file whose size changed for modified without running
	// the filter, so the expiry is written at a fixed width. (When the
	// rev gains a digit — at 10, 100, … — the file grows by a byte, and
	// git shows it modified, with an empty diff, until it is added.)
	for _, d := range []string{"2h", "90m", "1h0m1s", "7m", "2h"} {
		ok(t, dir, "renew", "1", d)
		assert.Empty(t, porcelain(t, dir), "a renewal (%s) leaves the tree clean", d)
	}
	ok(t, dir, "done", "1")
	assert.Equal(t, []string{" M .tasks/task_1.json"}, porcelain(t, dir), "a change of the task does not")
}

// check in a git repository says the one command that writes a missing
// .gitignore, from the root and from below; it stays a warning.
func TestCheckSaysInitFixesGitIgnore(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	ok(t, dir, "add", "a")
	r := tg(t, dir, "check")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)

	ignore := filepath.Join(dir, ".tasks", ".gitignore")
	require.NoError(t, os.Remove(ignore))
	r = tg(t, dir, "check")
	assert.Equal(t, 0, r.code, "a warning, not a problem of the graph")
	assert.Contains(t, r.stdout, "no problems")
	assert.Contains(t, r.stderr, "warning: "+ignore+" is missing")
	assert.Contains(t, r.stderr, "run `taskgraph init` (safe to run again")

	// From below the root, init there would make another graph: check
	// names the directory.
	sub := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(sub, 0o755))
	r = tg(t, sub, "check", "--json")
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "[]\n", r.stdout, "stdout stays JSON")
	assert.Contains(t, r.stderr, "run `taskgraph init --dir "+filepath.Join(dir, ".tasks")+"`")

	// A .gitignore of the user's that lacks the lines is named too.
	require.NoError(t, os.WriteFile(ignore, []byte("*.swp\n"), 0o644))
	r = tg(t, dir, "check")
	assert.Contains(t, r.stderr, ignore+" lacks .taskgraph.lock")

	ok(t, dir, "init")
	data, err := os.ReadFile(ignore)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(data), "*.swp\n"), "the user's lines are kept")
	r = tg(t, dir, "check")
	assert.Equal(t, 0, r.code)
	assert.Empty(t, r.stderr)

	// A .gitignore git cannot read (a symbolic link) is a warning that
	// says what to do, not a failure after "no problems".
	require.NoError(t, os.Remove(ignore))
	require.NoError(t, os.Symlink(filepath.Join(dir, "elsewhere"), ignore))
	r = tg(t, dir, "check")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "no problems")
	assert.Contains(t, r.stderr, "warning: "+ignore+" is a symbolic link")
	require.NoError(t, os.Remove(ignore))
	ok(t, dir, "init")

	// Outside git there is nothing to say.
	plain := project(t)
	require.NoError(t, os.Remove(filepath.Join(plain, ".tasks", ".gitignore")))
	require.NoError(t, os.Remove(filepath.Join(plain, ".git")))
	r = tg(t, plain, "check")
	assert.Equal(t, 0, r.code)
	assert.Empty(t, r.stderr)
}

// Linked worktrees share the main worktree's graph: a task added in one,
// from its top or below, by the CLI or over MCP, is seen in the main
// worktree and in every other; the checked-out copy is never used, and
// check says so.
func TestWorktreesShareOneGraph(t *testing.T) {
	main := gitRepo(t)
	ok(t, main, "init")
	ok(t, main, "add", "from main")
	gitIn(t, main, "add", "-A")
	gitIn(t, main, "commit", "-q", "-m", "tasks")
	wt := filepath.Join(filepath.Dir(main), "wt")
	gitIn(t, main, "worktree", "add", "-q", wt, "-b", "feature")
	inside := filepath.Join(main, ".worktrees", "agent")
	gitIn(t, main, "worktree", "add", "-q", inside, "-b", "agent")
	require.FileExists(t, filepath.Join(wt, ".tasks", "task_1.json"), "the worktree has a checked-out copy")
	deep := filepath.Join(wt, "src", "pkg")
	require.NoError(t, os.MkdirAll(deep, 0o755))

	assert.Equal(t, "Created #2: from the worktree\n", ok(t, wt, "add", "from the worktree"))
	r := sh(t, deep, "taskgraph add 'from below in the worktree'")
	require.Equal(t, 0, r.code, r.stderr)
	ok(t, inside, "add", "from a worktree inside main")
	want := "[ ] #1: from main\n[ ] #2: from the worktree\n[ ] #3: from below in the worktree\n[ ] #4: from a worktree inside main\n"
	for _, d := range []string{main, wt, deep, inside} {
		assert.Equal(t, want, ok(t, d, "list"), "from %s", d)
	}
	_, err := os.Stat(filepath.Join(wt, ".tasks", "task_2.json"))
	assert.True(t, os.IsNotExist(err), "nothing was written to the worktree's copy")
	assert.Empty(t, porcelain(t, wt), "the worktree stays clean")

	// The MCP server finds the same graph.
	p := startMCP(t, deep, cleanEnv(), "--owner", "agent")
	text, isErr := p.call(2, "task_claim", `{"task_id":2}`)
	assert.False(t, isErr, text)
	assert.Contains(t, ok(t, main, "show", "2"), "owner:       agent")

	// check warns of the copy, and the graph it checks is the main one.
	r = tg(t, deep, "check")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, filepath.Join(main, ".tasks")+": no problems")
	assert.Contains(t, r.stderr, "warning: "+filepath.Join(wt, ".tasks")+" is this worktree's checked-out copy")
	r = tg(t, main, "check")
	assert.Empty(t, r.stderr, "the main worktree has no copy")

	// --dir still wins.
	assert.Equal(t, "[ ] #1: from main\n", ok(t, deep, "list", "--dir", filepath.Join(wt, ".tasks")))
}

// init in a linked worktree makes the graph in the main worktree, and a
// worktree with no graph to share says where it looked.
func TestInitInAWorktreeMakesTheSharedGraph(t *testing.T) {
	main := gitRepo(t)
	gitIn(t, main, "commit", "-q", "--allow-empty", "-m", "first")
	wt := filepath.Join(filepath.Dir(main), "wt")
	gitIn(t, main, "worktree", "add", "-q", wt, "-b", "feature")

	r := tg(t, wt, "list")
	assert.Equal(t, exitNoGraph, r.code)
	assert.Contains(t, r.stderr, "no .tasks found in "+main+" or any parent, which this git worktree shares")

	r = tg(t, wt, "init")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, filepath.Join(main, ".tasks"))
	require.DirExists(t, filepath.Join(main, ".tasks"))
	require.FileExists(t, filepath.Join(main, ".tasks", ".gitignore"))
	_, err := os.Stat(filepath.Join(wt, ".tasks"))
	assert.True(t, os.IsNotExist(err), "no graph of the worktree's own")
	ok(t, wt, "add", "x")
	assert.Equal(t, "[ ] #1: x\n", ok(t, main, "list"))
}

// A bare repository with linked worktrees (git clone --bare, then git
// worktree add) has one graph, inside the bare repository's directory,
// which every worktree shares.
func TestBareRepositoryWorktreesShareOneGraph(t *testing.T) {
	src := gitRepo(t)
	gitIn(t, src, "commit", "-q", "--allow-empty", "-m", "first")
	root := filepath.Dir(src)
	bare := filepath.Join(root, "repo.git")
	gitIn(t, root, "clone", "-q", "--bare", src, bare)
	wt1, wt2 := filepath.Join(root, "wt1"), filepath.Join(root, "wt2")
	gitIn(t, bare, "worktree", "add", "-q", wt1, "-b", "one")
	gitIn(t, bare, "worktree", "add", "-q", wt2, "-b", "two")

	r := tg(t, wt1, "init")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, filepath.Join(bare, ".tasks"))
	ok(t, wt1, "add", "from one")
	sub := filepath.Join(wt2, "sub")
	require.NoError(t, os.Mkdir(sub, 0o755))
	ok(t, sub, "add", "from two")
	for _, d := range []string{wt1, wt2, sub} {
		assert.Equal(t, "[ ] #1: from one\n[ ] #2: from two\n", ok(t, d, "list"), "from %s", d)
	}
	for _, d := range []string{root, wt1, wt2} {
		_, err := os.Stat(filepath.Join(d, ".tasks"))
		assert.True(t, os.IsNotExist(err), "no other graph in %s", d)
	}
	assert.Empty(t, porcelain(t, wt1))
	assert.Empty(t, porcelain(t, wt2))
	gitIn(t, bare, "fsck") // git is content with the graph in its directory
	r = tg(t, wt2, "check")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
}

// A worktree whose link is broken is an error that names it, not a graph
// of its own.
func TestBrokenWorktreeLinkIsAnError(t *testing.T) {
	main := gitRepo(t)
	ok(t, main, "init")
	gitIn(t, main, "add", "-A")
	gitIn(t, main, "commit", "-q", "-m", "tasks")
	wt := filepath.Join(filepath.Dir(main), "wt")
	gitIn(t, main, "worktree", "add", "-q", wt, "-b", "feature")
	moved := main + "-moved"
	require.NoError(t, os.Rename(main, moved))
	for _, args := range [][]string{{"list"}, {"add", "x"}, {"init"}, {"check"}} {
		r := tg(t, wt, args...)
		assert.Equal(t, 1, r.code, "%v: %s", args, r.stdout)
		assert.Contains(t, r.stderr, filepath.Join(wt, ".git")+" names the git directory", "%v", args)
		assert.Contains(t, r.stderr, "git worktree repair", "%v", args)
	}
	entries, err := os.ReadDir(filepath.Join(wt, ".tasks"))
	require.NoError(t, err)
	assert.False(t, slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "task_") }), "nothing was added to the worktree's copy")
}

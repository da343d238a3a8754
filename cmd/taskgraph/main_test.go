package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// binary is the taskgraph command built once for the tests that run it as
// a user would (or the one TASKGRAPH_TEST_BINARY names).
var binary string

func TestMain(m *testing.M) {
	// A test binary run where there is no Go (Windows under Wine:
	// scripts/wine-test) is given the command, built beside it.
	if binary = os.Getenv("TASKGRAPH_TEST_BINARY"); binary != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "taskgraph-cli-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "taskgraph")
	// go test puts its own Go first on PATH.
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building taskgraph: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

// cleanEnv is the environment of a user who set none of taskgraph's
// variables, plus extra.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TASKGRAPH_") && !strings.HasPrefix(kv, "NO_COLOR=") {
			env = append(env, kv)
		}
	}
	return append(append(env, "NO_COLOR=1"), extra...)
}

// runIn runs the built binary in dir with env.
func runIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = env
	return collect(t, cmd)
}

// tg runs the built binary in dir as a user who set no variables.
func tg(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runIn(t, dir, cleanEnv(), args...)
}

// ok runs tg and requires it to succeed.
func ok(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := tg(t, dir, args...)
	require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
	return r.stdout
}

// repo returns a new directory that is the root of a repository (it holds
// .git), so that no .tasks above it is ever found.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, ".git"), 0o755))
	return dir
}

// collect runs cmd and returns what it printed and its exit status.
func collect(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{out.String(), errb.String(), code}
}

// project returns a repository with an initialised task graph.
func project(t *testing.T) string {
	t.Helper()
	dir := repo(t)
	ok(t, dir, "init")
	return dir
}

// sh runs script in a new `sh -c` shell in dir, with the binary on PATH, as
// a Makefile step or an agent's shell tool would.
func sh(t *testing.T, dir, script string, env ...string) result {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs POSIX sh: the test runs taskgraph from a shell script, as a Makefile or an agent's shell tool on Unix would")
	}
	path := filepath.Dir(binary) + string(os.PathListSeparator) + os.Getenv("PATH")
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = cleanEnv(append([]string{"PATH=" + path}, env...)...)
	return collect(t, cmd)
}

func showJSON(t *testing.T, dir string, id int) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "show", fmt.Sprint(id), "--json")), &m))
	return m
}

// The first minutes of a new user, in a new repository.
func TestNewUserSequence(t *testing.T) {
	dir := repo(t)
	abs, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	out := ok(t, dir, "init")
	assert.Contains(t, []string{"Initialized empty task graph in " + filepath.Join(dir, ".tasks") + "\n", "Initialized empty task graph in " + filepath.Join(abs, ".tasks") + "\n"}, out)
	assert.Contains(t, ok(t, dir, "init"), "Task graph already in ", "init is harmless on a graph that exists")

	assert.Equal(t, "Created #1: setup schema\n", ok(t, dir, "add", "setup schema"))
	assert.Equal(t, "Created #2: api (blocked by: [1])\n", ok(t, dir, "add", "api", "--after", "1"))
	assert.Equal(t, "[ ] #1: setup schema\n", ok(t, dir, "ready"))
	assert.Equal(t, fmt.Sprintf("Claimed #1: setup schema (owner %s)\n", defaultOwner()), ok(t, dir, "next"))
	assert.Regexp(t, `^[^@:]+@[^@:]+$`, defaultOwner(), "user@host, the same in every shell")
	assert.Equal(t, "Completed #1: setup schema\nUnblocked: #2 api\n", ok(t, dir, "done", "1"))

	var ready []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "ready", "--json")), &ready))
	require.Len(t, ready, 1)
	assert.Equal(t, 2.0, ready[0]["id"])
	assert.Equal(t, []any{1.0}, ready[0]["blockedBy"])

	_, err = os.Stat(filepath.Join(dir, ".tasks", "task_2.json"))
	assert.NoError(t, err, "the task directory is .tasks")
	assert.Equal(t, fmt.Sprintf("[x] #1: setup schema @%s\n[ ] #2: api\n", defaultOwner()), ok(t, dir, "list"))
}

// Bug: after `done 1`, ready printed "[ ] #2: api (blocked by: [1])".
func TestReadyDoesNotShowCompletedBlockers(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "setup schema")
	ok(t, dir, "add", "api", "--after", "1")
	ok(t, dir, "add", "docs")
	ok(t, dir, "add", "release", "--after", "1,3")
	ok(t, dir, "next")
	ok(t, dir, "done", "1")
	assert.Equal(t, "[ ] #2: api\n[ ] #3: docs\n", ok(t, dir, "ready"))
	assert.Equal(t, "[x] #1: setup schema @"+defaultOwner()+"\n[ ] #2: api\n[ ] #3: docs\n[ ] #4: release (blocked by: [3])\n", ok(t, dir, "list"))
}

// The CLI finds .tasks upward, like git, and a read command run where
// there is none creates nothing.
func TestFindsTasksUpward(t *testing.T) {
	root := project(t)
	ok(t, root, "add", "from the root")
	deep := filepath.Join(root, "src", "pkg")
	require.NoError(t, os.MkdirAll(deep, 0o755))

	assert.Equal(t, "[ ] #1: from the root\n", ok(t, deep, "list"))
	assert.Equal(t, "Created #2: from below\n", ok(t, deep, "add", "from below"))
	assert.Equal(t, "[ ] #1: from the root\n[ ] #2: from below\n", ok(t, root, "list"))
	for _, d := range []string{filepath.Join(root, "src"), deep} {
		_, err := os.Stat(filepath.Join(d, ".tasks"))
		assert.True(t, os.IsNotExist(err), "nothing created in %s", d)
	}
	// The same from a fresh shell, the way a Makefile runs it.
	r := sh(t, deep, "taskgraph ready")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[ ] #1: from the root\n[ ] #2: from below\n", r.stdout)

	// A nested repository is a boundary: the outer graph is not its own.
	inner := filepath.Join(root, "vendor", "lib")
	require.NoError(t, os.MkdirAll(filepath.Join(inner, ".git"), 0o755))
	r = tg(t, inner, "list")
	assert.Equal(t, exitNoGraph, r.code)

	// init makes a graph where it is run, and says which one it shadows.
	r = tg(t, deep, "init")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "now use this graph, not "+filepath.Join(root, ".tasks"))
	assert.Equal(t, "No tasks.\n", ok(t, deep, "list"))
}

func TestNoGraphCreatesNothing(t *testing.T) {
	dir := repo(t)
	sub := filepath.Join(dir, "src")
	require.NoError(t, os.Mkdir(sub, 0o755))
	export := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(export, []byte(`[{"id": 1, "subject": "a"}]`), 0o644))
	for _, args := range [][]string{
		{"list"}, {"ready"}, {"show", "1"}, {"graph"}, {"graph", "--json"}, {"export"}, {"check"}, {"watch"},
		{"add", "x"}, {"next"}, {"claim", "1"}, {"done", "1"}, {"release", "1"}, {"renew", "1", "5m"},
		{"dep", "add", "1", "2"}, {"edit", "1"}, {"delete", "1"}, {"import", export},
		{"list", "--json"},
	} {
		r := tg(t, sub, args...)
		assert.Equal(t, exitNoGraph, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "no .tasks found in "+sub, "%v", args)
		assert.Contains(t, r.stderr, "or any parent; run `taskgraph init`", "%v", args)
		assert.Empty(t, r.stdout, "%v", args)
	}
	for _, d := range []string{dir, sub} {
		entries, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, e := range entries {
			assert.Contains(t, []string{".git", "src"}, e.Name(), "nothing was created in %s", d)
		}
	}
	// A named directory that does not exist is not created either.
	r := tg(t, dir, "list", "--dir", "nowhere")
	assert.Equal(t, exitNoGraph, r.code)
	assert.Contains(t, r.stderr, "run `taskgraph init --dir nowhere`")
	r = runIn(t, dir, cleanEnv("TASKGRAPH_DIR=elsewhere"), "ready")
	assert.Equal(t, exitNoGraph, r.code)
	assert.Contains(t, r.stderr, "elsewhere ($TASKGRAPH_DIR)")
	for _, name := range []string{"nowhere", "elsewhere"} {
		_, err := os.Stat(filepath.Join(dir, name))
		assert.True(t, os.IsNotExist(err))
	}
	// init creates it, where it was asked to.
	ok(t, dir, "init", "--dir", "nowhere")
	assert.Equal(t, "No tasks.\n", ok(t, dir, "list", "--dir", "nowhere"))
}

// One shell claims under the default owner; another shell renews and
// completes the claim, as the same person.
func TestSecondShellActsOnFirstShellsClaim(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "long job")
	r := sh(t, dir, "taskgraph next --lease 30s")
	require.Equal(t, 0, r.code, r.stderr)
	r = sh(t, dir, "taskgraph renew 1 10m")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Renewed #1 until ")
	lease, err := time.Parse(time.RFC3339, showJSON(t, dir, 1)["leaseExpiresAt"].(string))
	require.NoError(t, err)
	assert.Greater(t, time.Until(lease), 5*time.Minute)

	// Someone else is told who they are and how to change it.
	r = sh(t, dir, "taskgraph renew 1 10m", "TASKGRAPH_OWNER=someone-else")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Contains(t, r.stderr, fmt.Sprintf(`task 1 is claimed by %q`, defaultOwner()))
	assert.Contains(t, r.stderr, `you are "someone-else" (from --owner or $TASKGRAPH_OWNER)`)

	r = sh(t, dir, "taskgraph done 1")
	require.Equal(t, 0, r.code, r.stderr)
}

// done, release and delete refuse a task someone else holds unless --force.
func TestForceForOthersTasks(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	ok(t, dir, "add", "b")
	ok(t, dir, "add", "c")
	for _, id := range []string{"1", "2", "3"} {
		ok(t, dir, "claim", id, "--owner", "alice")
	}
	before := ok(t, dir, "export")
	for _, args := range [][]string{{"done", "1"}, {"release", "2"}, {"delete", "3"}} {
		r := tg(t, dir, args...)
		assert.Equal(t, exitUnavailable, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, `is claimed by "alice"`, "%v", args)
		assert.Contains(t, r.stderr, fmt.Sprintf("you are %q (the default: --owner NAME or $TASKGRAPH_OWNER sets who you are); --force", defaultOwner()), "%v", args)
	}
	assert.Equal(t, before, ok(t, dir, "export"), "nothing changed")
	ok(t, dir, "done", "1", "--force")
	ok(t, dir, "release", "2", "--force")
	ok(t, dir, "delete", "3", "--force")
	assert.Equal(t, "[x] #1: a @alice\n[ ] #2: b\n", ok(t, dir, "list"))
	// Alice needs no force for her own.
	ok(t, dir, "claim", "2", "--owner", "alice")
	ok(t, dir, "--owner", "alice", "done", "2")
}

func TestExitCodes(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	ok(t, dir, "add", "b", "--after=1")
	ok(t, dir, "add", "c", "--after=1,2")
	cases := []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"claim", "2"}, 3, "task 2 is blocked by [1]"},
		{[]string{"claim", "3"}, 3, "task 3 is blocked by [1, 2]"},
		{[]string{"--owner", "x", "claim", "1"}, 0, ""},
		{[]string{"--owner", "y", "claim", "1"}, 3, `claimed by "x"`},
		{[]string{"next"}, 3, "nothing ready now: 1 in progress by others"},
		{[]string{"ready"}, 3, "No task is ready"},
		{[]string{"show", "9"}, 1, "task 9 not found"},
		{[]string{"show"}, 2, "usage: taskgraph show ID"},
		{[]string{"show", "abc"}, 2, "not a task id"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"list", "--frobnicate"}, 2, "flag provided but not defined"},
		{[]string{"dep", "add", "1", "2"}, 1, "dependency cycle 1 -> 2 -> 1"},
		{[]string{"--owner", "y", "done", "1"}, 3, `claimed by "x"`},
		{[]string{"--owner", "x", "done", "1"}, 0, ""},
		{[]string{"add", "c", "--after", "7"}, 1, "task 7 not found"},
		{[]string{"delete", "1"}, 1, "tasks [2, 3] depend on #1: remove those edges first (taskgraph dep rm), or delete with --detach"},
	}
	for _, c := range cases {
		r := tg(t, dir, c.args...)
		assert.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.stderr, "%v", c.args)
		assert.NotContains(t, r.stderr, "taskgraph.", "%v: no Go names", c.args)
	}
}

// Every duration on the command line — --lease of claim, next and mcp,
// renew's DURATION — refuses a negative value as a usage error that says
// so, however it is written: -5m as an argument is a negative duration,
// not an unknown flag.
func TestNegativeDurationsAreUsageErrors(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	ok(t, dir, "add", "b")
	ok(t, dir, "claim", "2", "--owner", "holder")
	negative := "a lease cannot be negative"
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"next", "--lease", "-5s"}, "--lease -5s: " + negative},
		{[]string{"next", "--lease=-5s"}, "--lease -5s: " + negative},
		{[]string{"claim", "1", "--lease=-1m"}, "--lease -1m: " + negative},
		{[]string{"claim", "1", "--lease", "-1.5h"}, "--lease -1.5h: " + negative},
		{[]string{"claim", "--lease", "-1s", "1"}, "--lease -1s: " + negative},
		{[]string{"--lease", "-1s", "claim", "1"}, "--lease -1s: " + negative},
		{[]string{"mcp", "--lease", "-1s"}, "--lease -1s: " + negative},
		{[]string{"mcp", "--lease=-1h"}, "--lease -1h: " + negative},
		{[]string{"renew", "2", "-1s", "--owner", "holder"}, "-1s: " + negative},
		{[]string{"renew", "2", "-5m", "--owner", "holder"}, "-5m: " + negative},
		{[]string{"renew", "2", "--owner", "holder", "-5m"}, "-5m: " + negative},
		{[]string{"renew", "--json", "2", "-1h30m", "--owner", "holder"}, "-1h30m: " + negative},
		{[]string{"renew", "2", "--owner", "holder", "--", "-1s"}, "-1s: " + negative},
		{[]string{"renew", "2", "-1", "--owner", "holder"}, "-1: " + negative},
		{[]string{"renew", "2", "0s", "--owner", "holder"}, "0s: a lease must be renewed for a positive duration"},
		{[]string{"renew", "2", "soon", "--owner", "holder"}, "soon: not a duration such as 30m"},
		{[]string{"next", "--lease", "soon"}, `invalid value "soon" for flag --lease: not a duration such as 30m`},
		// A negative number where an id belongs is a bad id, not a flag.
		{[]string{"show", "-1"}, `"-1" is not a task id`},
		{[]string{"renew", "-1", "30m"}, `"-1" is not a task id`},
	}
	for _, c := range cases {
		r := tg(t, dir, c.args...)
		assert.Equal(t, exitUsage, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.want, "%v", c.args)
		assert.NotContains(t, r.stderr, "flag provided but not defined", "%v", c.args)
	}
	assert.Equal(t, "pending", showJSON(t, dir, 1)["status"], "nothing was claimed")
	assert.NotContains(t, showJSON(t, dir, 2), "leaseExpiresAt", "nothing was renewed")
	// A flag still takes a value that looks negative, and other flags work around it.
	ok(t, dir, "renew", "2", "--owner", "holder", "--json", "30m")
	r := tg(t, dir, "list", "--limit", "-1")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "--limit -1: want a positive number")
}

func TestHelpAndVersion(t *testing.T) {
	dir := t.TempDir()
	r := tg(t, dir, "--help")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "Usage:\n\n\ttaskgraph <command> [arguments] [flags]")
	for _, args := range [][]string{{"help", "add"}, {"add", "--help"}, {"add", "-h"}} {
		r = tg(t, dir, args...)
		assert.Equal(t, 0, r.code, "%v", args)
		assert.Contains(t, r.stdout, "usage: taskgraph add SUBJECT", "%v: help on stdout, to pipe into less", args)
		// The flags as the command line takes them, with two dashes.
		assert.Contains(t, r.stdout, "\n  --after ID\n")
		assert.Contains(t, r.stdout, "\n  --priority P0\n")
		assert.Contains(t, r.stdout, "\n  --owner NAME\n")
		assert.NotRegexp(t, `(?m)^  -[a-z]`, r.stdout)
		assert.Empty(t, r.stderr)
	}
	// A global flag before help, as before any command.
	r = tg(t, dir, "--owner", "x", "help")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Usage:\n\n\ttaskgraph <command> [arguments] [flags]")
	for _, args := range [][]string{{"--owner", "x", "help", "add"}, {"--json", "help", "add"}, {"help", "--owner", "x", "add"}} {
		r = tg(t, dir, args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "usage: taskgraph add SUBJECT", "%v", args)
	}
	// --help after a global flag is help too; global flags with no
	// command say so, not that the command "--owner" is unknown.
	for _, args := range [][]string{{"--owner", "x", "--help"}, {"--json", "-h"}, {"--owner=x", "--help"}} {
		r = tg(t, dir, args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "Usage:\n\n\ttaskgraph <command> [arguments] [flags]", "%v", args)
	}
	for _, args := range [][]string{{"--owner", "x"}, {"--owner", "help"}, {"--json"}} {
		r = tg(t, dir, args...)
		assert.Equal(t, exitUsage, r.code, "%v", args)
		assert.Equal(t, "taskgraph: no command after "+strings.Join(args, " ")+"\nRun 'taskgraph help' for usage.\n", r.stderr, "%v", args)
	}
	// A flag's error names it as it is typed.
	r = tg(t, dir, "add", "x", "-priority", "high")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, `invalid value "high" for flag --priority: `)
	r = tg(t, dir, "list", "-frobnicate")
	assert.Contains(t, r.stderr, "flag provided but not defined: --frobnicate\n")
	r = tg(t, dir, "add", "--nope")
	assert.Equal(t, exitUsage, r.code)
	assert.Empty(t, r.stdout, "mistakes go to stderr")
	assert.Contains(t, r.stderr, "usage: taskgraph add SUBJECT")
	assert.Equal(t, exitUsage, tg(t, dir).code)

	for _, args := range [][]string{{"--version"}, {"version"}} {
		r = tg(t, dir, args...)
		assert.Equal(t, 0, r.code)
		// The test's binary is built without a VCS stamp (a worktree, or
		// -buildvcs=false): an untagged build, which must not claim v0.1.0.
		assert.Regexp(t, `^taskgraph v0\.1\.1-dev(\+[0-9a-f]{12}(\.dirty)?)? \(go1\.[^)]+\)\n$`, r.stdout)
	}
	var v map[string]string
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "version", "--json")), &v))
	assert.Regexp(t, `^v0\.1\.1-dev`, v["version"], "the release after CHANGELOG.md's, in development")
	assert.Equal(t, runtime.Version(), v["go"])
}

// Every command prints one JSON value under --json, of a stable shape.
func TestJSONShapes(t *testing.T) {
	dir := repo(t)
	keys := func(args ...string) map[string]any {
		t.Helper()
		out := ok(t, dir, append(args, "--json")...)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m), "%v: %s", args, out)
		return m
	}
	array := func(args ...string) []any {
		t.Helper()
		out := ok(t, dir, append(args, "--json")...)
		var a []any
		require.NoError(t, json.Unmarshal([]byte(out), &a), "%v: %s", args, out)
		return a
	}
	m := keys("init")
	assert.Equal(t, true, m["created"])
	assert.True(t, strings.HasSuffix(m["dir"].(string), ".tasks"))
	assert.Equal(t, false, keys("init")["created"])
	task := []string{"id", "subject", "description", "status", "blockedBy", "blocks", "owner", "rev"}
	for _, args := range [][]string{{"add", "a"}, {"add", "b", "--after", "1"}, {"add", "c"}, {"show", "1"}, {"claim", "1", "--lease", "1h"},
		{"renew", "1", "2h"}, {"dep", "add", "2", "3"}, {"dep", "add", "2", "3"}, {"dep", "rm", "2", "3"}, {"release", "1"}, {"next"}} {
		m = keys(args...)
		for _, k := range task {
			assert.Contains(t, m, k, "%v", args)
		}
	}
	m = keys("done", "1")
	assert.Contains(t, m, "task")
	assert.Len(t, m["unblocked"], 1)
	assert.Len(t, array("list"), 3)
	assert.Len(t, array("ready"), 2)
	assert.Len(t, array("export"), 3)
	assert.Empty(t, array("check"))
	m = keys("graph")
	assert.Len(t, m["nodes"], 3)
	assert.Equal(t, []any{map[string]any{"from": 1.0, "to": 2.0}}, m["edges"])
	assert.Equal(t, map[string]any{"id": 1.0, "subject": "a", "status": "completed", "state": "completed", "owner": defaultOwner()}, m["nodes"].([]any)[0])
	m = keys("delete", "1", "--detach")
	assert.Equal(t, map[string]any{"deleted": 1.0, "detached": []any{2.0}}, m)
	m = keys("delete", "3")
	assert.Equal(t, map[string]any{"deleted": 3.0, "detached": []any{}}, m)
	plan := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(`[{"id": 1, "subject": "x"}, {"id": 2, "subject": "y", "blockedBy": [1]}]`), 0o644))
	m = keys("import", plan, "--renumber")
	assert.Equal(t, map[string]any{"imported": 2.0, "ids": []any{map[string]any{"old": 1.0, "new": 4.0}, map[string]any{"old": 2.0, "new": 5.0}}}, m)
	assert.Contains(t, keys("version"), "version")
}

func TestShowHasMetadataAndTimes(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	ok(t, dir, "add", "b", "--after", "1", "--desc", "the second")
	ok(t, dir, "claim", "1", "--lease", "1h", "--owner", "alice")
	require.NoError(t, os.WriteFile(filepath.Join(t.TempDir(), "x"), nil, 0o644))
	editor := writeEditor(t, `sed -i 's/"metadata": {}/"metadata": {"priority": "high", "points": 3}/' "$1"`)
	r := runIn(t, dir, cleanEnv(editor), "edit", "2")
	require.Equal(t, 0, r.code, r.stderr)
	out := ok(t, dir, "show", "2")
	for _, want := range []string{"#2: b\n", "status:      pending, blocked by [1]\n", "depends on:  [1]\n", "created:     ", "updated:     ", "rev:         2\n", "metadata:\n  points: 3\n  priority: \"high\"\n", "\nthe second\n"} {
		assert.Contains(t, out, want)
	}
	out = ok(t, dir, "show", "1")
	for _, want := range []string{"status:      in_progress\n", "owner:       alice\n", "claimed:     ", "lease until: ", "blocks:      [2]\n"} {
		assert.Contains(t, out, want)
	}
}

func TestGraph(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "parse")
	ok(t, dir, "add", "transform", "--after", "1")
	ok(t, dir, "add", "emit", "--after", "1")
	ok(t, dir, "add", "test", "--after", "2,3")
	assert.Equal(t, `flowchart LR
  t1["#1 parse"]:::ready
  t2["#2 transform"]:::blocked
  t3["#3 emit"]:::blocked
  t4["#4 test"]:::blocked
  t1 ==> t2
  t1 --> t3
  t2 ==> t4
  t3 --> t4
  %% wave 1: #1
  %% wave 2: #2 #3
  %% wave 3: #4
  classDef ready fill:#cfc
  classDef deferred fill:#dff
  classDef limited fill:#eef
  classDef blocked fill:#fff
  classDef inprogress fill:#ffc
  classDef completed fill:#ddd
  classDef stranded fill:#fee
  classDef failed fill:#f99
  classDef cancelled fill:#eee,stroke-dasharray:4
`, ok(t, dir, "graph"), "the critical path drawn thick, the waves noted")
	out := ok(t, dir, "graph", "--format", "dot")
	assert.Contains(t, out, "digraph tasks {")
	assert.Contains(t, out, "t2 -> t4 [penwidth=3];")
	assert.Contains(t, out, "t3 -> t4;")
	assert.Contains(t, out, "{ rank=same; t2; t3; } // wave 2")
	assert.Equal(t, 2, tg(t, dir, "graph", "--format", "svg").code)
	var g struct {
		Nodes []map[string]any `json:"nodes"`
		Edges []map[string]int `json:"edges"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "graph", "--json")), &g))
	assert.Len(t, g.Nodes, 4)
	assert.Equal(t, []map[string]int{{"from": 1, "to": 2}, {"from": 1, "to": 3}, {"from": 2, "to": 4}, {"from": 3, "to": 4}}, g.Edges)
}

// writeEditor returns an EDITOR= setting for a script that edits "$1".
func writeEditor(t *testing.T, script string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("needs POSIX sh: the editor the test sets is a shell script")
	}
	path := filepath.Join(t.TempDir(), "editor.sh")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	return "EDITOR=" + path
}

func TestEdit(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "old subject")
	ok(t, dir, "add", "other", "--after", "1")
	edit := func(script string, args ...string) result {
		return runIn(t, dir, cleanEnv(writeEditor(t, script), "VISUAL="), append([]string{"edit"}, args...)...)
	}
	r := edit(`sed -i 's/old subject/new subject/' "$1"`, "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "Saved #1 (rev 2)\n", r.stdout)
	assert.Contains(t, ok(t, dir, "show", "1"), "#1: new subject")

	// An edit that changes nothing writes nothing.
	r = edit(`true`, "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "No changes to #1\n", r.stdout)
	assert.Equal(t, 2.0, showJSON(t, dir, 1)["rev"])

	// An edit that would close a cycle is refused, changes nothing, and
	// the text written is kept in a file the message names.
	r = edit(`sed -i 's/"blockedBy": \[\]/"blockedBy": [2]/; s/new subject/edited subject/' "$1"`, "1")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "edit refused, nothing changed: dependency cycle")
	kept := keptFile(t, r.stderr)
	data, err := os.ReadFile(kept)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"subject": "edited subject"`)
	assert.Contains(t, string(data), `"blockedBy": [2]`)
	assert.Equal(t, 2.0, showJSON(t, dir, 1)["rev"])
	assert.Contains(t, r.stderr, fmt.Sprintf("taskgraph edit 1 --from %s", kept))

	// Fixing it from the kept file.
	r = edit(`sed -i 's/"blockedBy": \[2\]/"blockedBy": []/' "$1"`, "1", "--from", kept)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "edited subject", showJSON(t, dir, 1)["subject"])
	os.Remove(kept)

	r = edit(`echo 'not json' > "$1"`, "1")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "not valid JSON")
	data, err = os.ReadFile(keptFile(t, r.stderr))
	require.NoError(t, err)
	assert.Equal(t, "not json\n", string(data))
	os.Remove(keptFile(t, r.stderr))

	// The status or owner of someone else's task needs --force.
	ok(t, dir, "claim", "1", "--owner", "alice")
	r = edit(`sed -i 's/"status": "in_progress"/"status": "pending"/' "$1"`, "1")
	assert.Equal(t, exitUnavailable, r.code, r.stderr)
	assert.Contains(t, r.stderr, `claimed by "alice"`)
	os.Remove(keptFile(t, r.stderr))
	assert.Equal(t, "in_progress", showJSON(t, dir, 1)["status"])
	r = edit(`sed -i 's/"status": "in_progress"/"status": "pending"/' "$1"`, "1", "--force")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "pending", showJSON(t, dir, 1)["status"])
}

// keptFile returns the file a refused edit names.
func keptFile(t *testing.T, stderr string) string {
	t.Helper()
	_, rest, found := strings.Cut(stderr, "Your edit is kept in ")
	require.True(t, found, stderr)
	path, _, _ := strings.Cut(rest, ";")
	return path
}

func TestDep(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	ok(t, dir, "add", "b")
	assert.Equal(t, "#2 is now blocked by #1\n", ok(t, dir, "dep", "add", "2", "1"))
	assert.Equal(t, "#2 already depends on #1; nothing changed\n", ok(t, dir, "dep", "add", "2", "1"))
	rev := showJSON(t, dir, 2)["rev"]
	r := tg(t, dir, "dep", "rm", "1", "2")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "#1 is not blocked by #2 (it depends on []); nothing changed")
	assert.Equal(t, "#2 is no longer blocked by #1\n", ok(t, dir, "dep", "rm", "2", "1"))
	r = tg(t, dir, "dep", "rm", "2", "1")
	assert.Equal(t, exitError, r.code, "the edge is gone")
	assert.Equal(t, rev.(float64)+1, showJSON(t, dir, 2)["rev"])
}

func TestExportImport(t *testing.T) {
	src, dst := project(t), project(t)
	ok(t, src, "add", "a")
	ok(t, src, "add", "b", "--after", "1")
	ok(t, src, "--owner", "me", "claim", "1")
	plan := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(ok(t, src, "export")), 0o644))
	assert.Contains(t, ok(t, dst, "import", plan), "Imported 2 tasks into ")
	assert.Equal(t, ok(t, src, "list"), ok(t, dst, "list"))
	r := tg(t, dst, "import", plan)
	assert.Equal(t, 1, r.code, "ids already used")
	assert.Contains(t, r.stderr, "hint: --renumber")
}

// import --renumber merges a plan, or a Claude Code task list, into a
// graph that already uses its ids.
func TestImportRenumber(t *testing.T) {
	dir := project(t)
	for _, s := range []string{"one", "two", "three", "four"} {
		ok(t, dir, "add", s)
	}
	ok(t, dir, "delete", "4") // its id is used even though no task has it
	plan := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(`[
		{"id": 2, "subject": "design", "status": "completed", "owner": "bob"},
		{"id": 1, "subject": "build", "blockedBy": [2]},
		{"id": 3, "subject": "ship", "blockedBy": [1, 2], "metadata": {"k": "v"}}
	]`), 0o644))
	out := ok(t, dir, "import", "--renumber", plan)
	assert.Contains(t, out, "Imported 3 tasks into ")
	assert.Contains(t, out, "Renumbered: 1 -> 5, 2 -> 6, 3 -> 7\n")
	assert.Equal(t, "[ ] #1: one\n[ ] #2: two\n[ ] #3: three\n[ ] #5: build\n[x] #6: design @bob\n[ ] #7: ship (blocked by: [5])\n", ok(t, dir, "list"))
	seven := showJSON(t, dir, 7)
	assert.Equal(t, []any{5.0, 6.0}, seven["blockedBy"])
	assert.Equal(t, map[string]any{"k": "v"}, seven["metadata"])

	// A blocker outside the file cannot be renumbered.
	require.NoError(t, os.WriteFile(plan, []byte(`[{"id": 1, "subject": "x", "blockedBy": [9]}]`), 0o644))
	r := tg(t, dir, "import", "--renumber", plan)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "task 1 is blocked by 9, which is not among the imported tasks")

	abs, err := filepath.Abs("../../claudecode/testdata/tasklist")
	require.NoError(t, err)
	out = ok(t, dir, "import", "--renumber", "--claude-code", abs)
	assert.Contains(t, out, "Renumbered: 1 -> 8, 2 -> 9, 3 -> 10, 5 -> 11\n")
	list := ok(t, dir, "list")
	assert.Contains(t, list, "[x] #8: Set up database schema @main\n[>] #9: Implement search endpoint @researcher\n[ ] #10: Write API docs\n[ ] #11: Publish the docs site (blocked by: [10])\n")

	// Without --renumber, a Claude Code list loads with its own ids into a
	// graph that never used them.
	cc := project(t)
	ok(t, cc, "import", "--claude-code", abs)
	assert.Equal(t, "[x] #1: Set up database schema @main\n[>] #2: Implement search endpoint @researcher\n[ ] #3: Write API docs\n[ ] #5: Publish the docs site (blocked by: [3])\n", ok(t, cc, "list"))
}

func TestCheckCommand(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a")
	assert.Contains(t, ok(t, dir, "check"), "no problems")
	assert.Contains(t, ok(t, dir, "check"), "durability: ", "check says which protocol a store chooses here, and why")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".tasks", "task_2.json"), []byte("{"), 0o644))
	r := tg(t, dir, "check", "--json")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, `"kind": "corrupt"`)
	r = tg(t, dir, "list")
	assert.Equal(t, 1, r.code, "corrupt files are reported")
	assert.Equal(t, "[ ] #1: a\n", r.stdout, "and the healthy tasks still listed")
}

func TestWatchCommand(t *testing.T) {
	dir := project(t)
	cmd := exec.Command(binary, "watch", "--json")
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Wait()
	defer cmd.Process.Kill()
	// Wait until it watches, then change the graph from another process.
	line, err := bufio.NewReader(stderr).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, line, "Watching")
	ok(t, dir, "add", "seen by the watcher")
	sc := bufio.NewScanner(out)
	require.True(t, sc.Scan())
	assert.Contains(t, sc.Text(), `"kind":"created"`)
	assert.Contains(t, sc.Text(), `"subject":"seen by the watcher"`)
}

// The same commands on a PostgreSQL graph with --store; a read command
// never creates the graph.
func TestStoreFlagPostgres(t *testing.T) {
	url := postgresURL(t)
	graph := fmt.Sprintf("cli-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { dropGraph(url, graph) })
	dir := repo(t)
	pg := func(args ...string) result {
		return tg(t, dir, append([]string{"--store", url, "--graph", graph}, args...)...)
	}
	for _, args := range [][]string{{"list"}, {"ready"}, {"add", "x"}, {"graph", "--json"}} {
		r := pg(args...)
		assert.Equal(t, exitNoGraph, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, fmt.Sprintf("no graph %q in the --store database; run `taskgraph init`", graph))
	}
	assert.False(t, graphInDB(t, url, graph), "a read command created the graph")
	r := pg("init", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.JSONEq(t, fmt.Sprintf(`{"graph": %q, "created": true}`, graph), r.stdout)
	r = pg("add", "setup schema")
	require.Equal(t, 0, r.code, r.stderr)
	pg("add", "api", "--after", "1")
	r = pg("next")
	require.Equal(t, 0, r.code, r.stderr)
	r = pg("done", "1")
	assert.Equal(t, "Completed #1: setup schema\nUnblocked: #2 api\n", r.stdout)
	r = pg("ready")
	assert.Equal(t, "[ ] #2: api\n", r.stdout)
	// next --wait on a database: it claims, then waits for the end.
	r = pg("next", "--wait", "--timeout", "10s")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "Claimed #2: api (owner "+defaultOwner()+")\n", r.stdout)
	w := startWaiter(t, dir, "--store", url, "--graph", graph)
	w.waiting(t)
	pg("done", "2")
	assert.Equal(t, exitFinished, w.result(t), w.errb.String())
	_, err := os.Stat(filepath.Join(dir, ".tasks"))
	assert.True(t, os.IsNotExist(err), "no directory is used with --store")
}

// graphInDB reports whether graph is in the database at url.
func graphInDB(t *testing.T, url, graph string) bool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	var exists bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT to_regclass('taskgraph_graphs') IS NOT NULL`).Scan(&exists))
	if !exists {
		return false // a database where taskgraph never ran
	}
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM taskgraph_graphs WHERE name = $1`, graph).Scan(&n))
	return n > 0
}

// postgresURL is the database of the PostgreSQL tests, its schema brought
// up to this version first, as a user does after an upgrade (`taskgraph
// init --store`, which migrates): the tests that follow expect a read
// command to find no graph, not an older schema. Without
// TASKGRAPH_POSTGRES_URL the test is skipped, saying so.
func postgresURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("TASKGRAPH_POSTGRES_URL")
	if url == "" {
		t.Skip("POSTGRESQL TEST NOT RUN: set TASKGRAPH_POSTGRES_URL to run it; .ci/run sets it")
	}
	scratch := fmt.Sprintf("migrate-%d-%d", os.Getpid(), time.Now().UnixNano())
	r := tg(t, t.TempDir(), "--store", url, "--graph", scratch, "init")
	require.Equal(t, 0, r.code, "taskgraph init --store: %s", r.stderr)
	dropGraph(url, scratch)
	return url
}

func dropGraph(url, graph string) {
	pool, err := pgxpool.New(context.Background(), url)
	if err == nil {
		pool.Exec(context.Background(), `DELETE FROM taskgraph_graphs WHERE name = $1`, graph)
		pool.Close()
	}
}

// printJSONArray prints what printJSON prints for the same slice, byte
// for byte: list --json streams, and says the same.
func TestPrintJSONArrayIsPrintJSON(t *testing.T) {
	for _, items := range [][]map[string]any{nil, {{"a": "<&>"}}, {{"a": 1, "b": []int{1, 2}}, {}, {"c": map[string]any{"d": "ü"}}}} {
		var want, got bytes.Buffer
		require.NoError(t, (&env{stdout: &want}).printJSON(items))
		require.NoError(t, (&env{stdout: &got}).printJSONArray(len(items), func(i int) any { return items[i] }))
		if items == nil {
			assert.Equal(t, "null\n", want.String(), "a nil slice")
			assert.Equal(t, "[]\n", got.String(), "printTasks never prints null")
			continue
		}
		assert.Equal(t, want.String(), got.String())
	}
}

// TestCommandGC: the commands that stay (a server, a watch, a wait) keep
// Go's garbage collector target; those that read the graph and print it
// get readOnceGC, and the others that answer once answerOnceGC.
func TestCommandGC(t *testing.T) {
	const stays = -1
	for args, want := range map[string]int{
		"ready --json":                   readOnceGC,
		"list":                           readOnceGC,
		"--dir x list --json":            readOnceGC,
		"--owner a board":                readOnceGC,
		"show 3":                         readOnceGC,
		"explain 3":                      readOnceGC,
		"":                               answerOnceGC,
		"graph --json":                   answerOnceGC,
		"export":                         answerOnceGC,
		"import tasks.json":              answerOnceGC,
		"done 3":                         answerOnceGC,
		"next":                           answerOnceGC,
		"serve --addr :0":                stays,
		"--dir x mcp":                    stays,
		"watch --json":                   stays,
		"next --wait":                    stays,
		"--owner a next --under 3 -wait": stays,
		"next --wait=true":               stays,
		"next --wait=false":              stays, // may wait: treated as staying, which costs nothing
	} {
		gc, set := commandGC(strings.Fields(args))
		if want == stays {
			assert.False(t, set, args)
			continue
		}
		assert.True(t, set, args)
		assert.Equal(t, want, gc, args)
	}
}

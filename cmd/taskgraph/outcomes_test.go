package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fail, cancel, reopen and explain: an outcome strands what depends on
// it, the listing and explain say so, and reopening frees it.
func TestOutcomesCommands(t *testing.T) {
	dir := project(t)
	me := defaultOwner()
	ok(t, dir, "add", "build")
	ok(t, dir, "add", "test", "--after", "1")
	ok(t, dir, "add", "release", "--after", "2")
	ok(t, dir, "add", "docs")
	ok(t, dir, "next")
	assert.Equal(t, "Failed #1: build (compiler crashed)\nCannot start until #1 is reopened: #2 test, #3 release\n",
		ok(t, dir, "fail", "1", "compiler crashed"))
	assert.Equal(t, fmt.Sprintf("[!] #1: build @%s\n[ ] #2: test (cannot start: #1 failed)\n[ ] #3: release (cannot start: #1 failed)\n[ ] #4: docs\n", me),
		ok(t, dir, "list"))
	assert.Equal(t, "#3: release\ntask 3 is stranded: it waits on 2, which cannot start because 1 failed (\"compiler crashed\"); reopen 1 or remove the edge\n  waits on #2: test (pending)\n",
		ok(t, dir, "explain", "3"))
	var ex map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "explain", "3", "--json")), &ex))
	assert.Equal(t, "stranded", ex["state"])
	assert.Equal(t, 1.0, ex["strandedBy"])
	show := ok(t, dir, "show", "2")
	assert.Contains(t, show, "why:         task 2 is stranded: its blocker 1 failed")
	assert.Contains(t, ok(t, dir, "show", "1"), "reason:      compiler crashed")
	r := tg(t, dir, "ready")
	assert.Equal(t, "[ ] #4: docs\n", r.stdout)

	assert.Equal(t, "Reopened #1: build\n", ok(t, dir, "reopen", "1"))
	assert.Equal(t, "[ ] #1: build\n[ ] #2: test (blocked by: [1])\n[ ] #3: release (blocked by: [2])\n[ ] #4: docs\n", ok(t, dir, "list"))

	// Cancel: anyone may cancel a pending task; a task someone else holds
	// needs --force, as fail does.
	assert.Equal(t, "Cancelled #4: docs (not needed)\n", ok(t, dir, "cancel", "4", "not needed"))
	assert.Contains(t, ok(t, dir, "list"), "[-] #4: docs")
	require.Equal(t, 0, runIn(t, dir, cleanEnv("TASKGRAPH_OWNER=someone-else"), "claim", "1").code)
	r = tg(t, dir, "fail", "1", "nope")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Contains(t, r.stderr, "--force fails it anyway")
	r = tg(t, dir, "cancel", "1", "nope")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Contains(t, r.stderr, "--force cancels it anyway")
	assert.Contains(t, ok(t, dir, "cancel", "1", "dropped", "--force"), "Cancelled #1: build (dropped)")

	// A task's status that does not allow the command is said plainly:
	// no "status:" field prefix, as if the user had given a status.
	ok(t, dir, "reopen", "1")
	for _, cmd := range []string{"done", "release"} {
		r = tg(t, dir, cmd, "1")
		assert.Equal(t, exitError, r.code, cmd)
		assert.Equal(t, "taskgraph "+cmd+": task 1 is pending, not in_progress: claim it first\n", r.stderr, cmd)
	}
	r = tg(t, dir, "fail", "1", "why")
	assert.Equal(t, "taskgraph fail: task 1 is pending, not in_progress: claim it first\n", r.stderr)

	// Usage errors.
	for _, args := range [][]string{{"fail", "1"}, {"fail", "1", ""}, {"fail", "x", "why"}, {"reopen"}, {"explain"}} {
		assert.Equal(t, exitUsage, tg(t, dir, args...).code, "%v", args)
	}
	r = tg(t, dir, "explain", "99")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "task 99 not found")
}

// Priorities and labels on add, filters on list, ready and next.
func TestPriorityAndLabelCommands(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "style the page", "--label", "frontend")
	ok(t, dir, "add", "fix the outage", "--priority", "P0", "--label", "backend,api")
	ok(t, dir, "add", "write the guide")
	ok(t, dir, "add", "add a button", "--label", "frontend", "--priority", "1")
	assert.Equal(t, "[ ] #1: style the page {frontend}\n[ ] #2: fix the outage P0 {api, backend}\n[ ] #3: write the guide\n[ ] #4: add a button P1 {frontend}\n",
		ok(t, dir, "list"))
	assert.Equal(t, "[ ] #4: add a button P1 {frontend}\n[ ] #1: style the page {frontend}\n", ok(t, dir, "ready", "--label", "frontend"), "in claim order")
	assert.Equal(t, "[ ] #1: style the page {frontend}\n… and 1 more (raise --limit or filter)\n", ok(t, dir, "list", "--label", "frontend", "--limit", "1"))

	// next takes the most urgent first; with --label, only that work.
	assert.Contains(t, runIn(t, dir, cleanEnv("TASKGRAPH_OWNER=fe"), "next", "--label", "frontend").stdout, "Claimed #4: add a button")
	assert.Contains(t, runIn(t, dir, cleanEnv("TASKGRAPH_OWNER=any"), "next").stdout, "Claimed #2: fix the outage")
	assert.Contains(t, runIn(t, dir, cleanEnv("TASKGRAPH_OWNER=fe"), "next", "--label", "frontend").stdout, "Claimed #1: style the page")
	r := runIn(t, dir, cleanEnv("TASKGRAPH_OWNER=fe"), "next", "--label", "frontend")
	assert.Equal(t, exitUnavailable, r.code)
	assert.Equal(t, "[>] #1: style the page {frontend} @fe\n[>] #4: add a button P1 {frontend} @fe\n", ok(t, dir, "list", "--owned-by", "fe"))
	assert.Equal(t, "[ ] #3: write the guide\n", ok(t, dir, "list", "--status", "pending"))
	assert.Equal(t, "[ ] #3: write the guide\n", ok(t, dir, "list", "--ready"))
	assert.Equal(t, "No tasks match.\n", ok(t, dir, "list", "--label", "nothing"))
	// A label no task can carry is a usage error, not "No tasks match.".
	for _, cmd := range []string{"list", "ready"} {
		r := tg(t, dir, cmd, "--label", "Frontend")
		assert.Equal(t, exitUsage, r.code, cmd)
		assert.Contains(t, r.stderr, `taskgraph `+cmd+`: --label "Frontend" is not a label: use 1 to 64 lower-case letters, digits and -_.:/ (e.g. "frontend")`, cmd)
	}

	// show and --json carry the new fields.
	assert.Contains(t, ok(t, dir, "show", "2"), "priority:    P0\nlabels:      api, backend\n")
	j := showJSON(t, dir, 2)
	assert.Equal(t, 0.0, j["priority"])
	assert.Equal(t, []any{"api", "backend"}, j["labels"])
	assert.NotContains(t, showJSON(t, dir, 3), "priority", "the default priority is not written, as in the file")

	// Keys: adding a key again adds nothing.
	assert.Equal(t, "Created #5: deploy\n", ok(t, dir, "add", "deploy", "--key", "deploy"))
	assert.Equal(t, "#5 already has key \"deploy\": deploy (nothing added)\n", ok(t, dir, "add", "deploy again", "--key", "deploy"))

	for _, args := range [][]string{{"add", "x", "--priority", "P5"}, {"add", "x", "--priority", "high"}, {"list", "--status", "done"}, {"list", "--limit", "-1"},
		// One spelling of a priority everywhere (taskgraph.ParsePriority): no spaces, signs or leading zeros.
		{"add", "x", "--priority", " p2 "}, {"add", "x", "--priority", "+2"}, {"add", "x", "--priority", "P02"}} {
		assert.Equal(t, exitUsage, tg(t, dir, args...).code, "%v", args)
	}
	r = tg(t, dir, "add", "x", "--priority", "7")
	assert.Contains(t, r.stderr, `invalid value "7" for flag --priority: 7 is not a priority: use 0 (P0, most urgent) to 4 (P4, least); the default is 2`)
	r = tg(t, dir, "list", "--status", "pending,done")
	assert.Contains(t, r.stderr, `--status "done" is not pending, in_progress, completed, failed or cancelled`)
	r = tg(t, dir, "add", "x", "--after", "1,,2")
	assert.Contains(t, r.stderr, `invalid value "1,,2" for flag --after: "" is not a task id: use a positive integer such as 12`)
	r = tg(t, dir, "add", "x", "--label", "Not A Label")
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "is not a label")

	// done --result records what was done.
	require.Equal(t, 0, runIn(t, dir, cleanEnv("TASKGRAPH_OWNER=fe"), "done", "1", "--result", "used the design tokens").code)
	assert.Contains(t, ok(t, dir, "show", "1"), "result:      used the design tokens")
}

// ready lists in the order next claims: a P1 task before an older P3 one,
// and --limit keeps the most urgent.
func TestReadyInClaimOrder(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "old and unhurried", "--priority", "P3")
	ok(t, dir, "add", "new and urgent", "--priority", "P1")
	ok(t, dir, "add", "default")
	var ready []map[string]any
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "ready", "--json")), &ready))
	var ids []float64
	for _, task := range ready {
		ids = append(ids, task["id"].(float64))
		assert.Equal(t, "ready", task["state"])
	}
	assert.Equal(t, []float64{2, 3, 1}, ids)
	assert.Equal(t, "[ ] #2: new and urgent P1\n… and 2 more (raise --limit or filter)\n", ok(t, dir, "ready", "--limit", "1"))
	assert.Equal(t, "[ ] #1: old and unhurried P3\n[ ] #2: new and urgent P1\n[ ] #3: default\n", ok(t, dir, "list", "--ready"), "list stays by id")
	assert.Contains(t, ok(t, dir, "next"), "Claimed #2: new and urgent", "next takes the first ready lists")
}

// plan FILE creates a whole plan, all or nothing, and applying it again
// creates nothing.
func TestPlanCommand(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "existing")
	plan := filepath.Join(t.TempDir(), "plan.json")
	require.NoError(t, os.WriteFile(plan, []byte(`{"tasks": [
		{"key": "schema", "subject": "Design the schema", "labels": ["backend"]},
		{"key": "api", "subject": "Build the API", "after": ["schema", "#1"], "priority": 1, "labels": ["backend"]},
		{"key": "ui", "subject": "Build the UI", "after": ["api"], "labels": ["frontend"]}
	]}`), 0o644))
	assert.Equal(t, "[ ] #2 schema: Design the schema {backend}\n[ ] #3 api: Build the API P1 {backend} (blocked by: [2, 1])\n[ ] #4 ui: Build the UI {frontend} (blocked by: [3])\nCreated 3 of 3 tasks in "+filepath.Join(dir, ".tasks")+"\n",
		ok(t, dir, "plan", plan))
	out := ok(t, dir, "plan", plan)
	assert.Contains(t, out, "[ ] #2 schema: Design the schema {backend} (existed; unchanged)")
	assert.Contains(t, out, "Created 0 of 3 tasks")
	assert.Equal(t, 4, strings.Count(ok(t, dir, "list"), "\n"), "nothing created twice")

	// A bad plan creates nothing: a cycle, a reference to nothing.
	bad := filepath.Join(t.TempDir(), "bad.json")
	for _, body := range []string{
		`{"tasks": [{"key": "a", "subject": "A", "after": ["b"]}, {"key": "b", "subject": "B", "after": ["a"]}]}`,
		`{"tasks": [{"key": "c", "subject": "C", "after": ["nowhere"]}]}`,
		`{"tasks": [{"subject": "no key"}]}`,
		`not json`,
	} {
		require.NoError(t, os.WriteFile(bad, []byte(body), 0o644))
		r := tg(t, dir, "plan", bad)
		assert.Equal(t, exitError, r.code, body)
		assert.NotEmpty(t, r.stderr, body)
	}
	assert.Equal(t, 4, strings.Count(ok(t, dir, "list"), "\n"), "nothing of a bad plan was created")

	// An endless or huge input is refused once it passes the limit, with
	// a message, instead of being read into memory until the process dies.
	r := sh(t, dir, `head -c 70000000 /dev/zero | taskgraph plan -`)
	assert.Equal(t, exitError, r.code, r.stderr)
	assert.Contains(t, r.stderr, "taskgraph plan: -: the plan is larger than 64 MiB")
	assert.Equal(t, 4, strings.Count(ok(t, dir, "list"), "\n"), "nothing of a huge plan was created")

	// From stdin, as an array; --json gives the tasks.
	r = sh(t, dir, `echo '[{"key": "docs", "subject": "Write docs", "after": ["ui"]}]' | taskgraph plan - --json`)
	require.Equal(t, 0, r.code, r.stderr)
	var tasks []map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &tasks))
	require.Len(t, tasks, 1)
	assert.Equal(t, 5.0, tasks[0]["id"])
	assert.Equal(t, []any{4.0}, tasks[0]["blockedBy"])
}

// graph --format waves prints what can run at once, round by round, and
// the critical path; --json carries both.
func TestGraphWaves(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "parse")
	ok(t, dir, "add", "transform", "--after", "1")
	ok(t, dir, "add", "emit", "--after", "1")
	ok(t, dir, "add", "test", "--after", "2,3")
	ok(t, dir, "add", "lint")
	assert.Equal(t, `wave 1: #1 parse, #5 lint
wave 2: #2 transform, #3 emit
wave 3: #4 test
critical path (3 steps): #1 parse -> #2 transform -> #4 test
3 waves; at most 2 tasks can run at once
`, ok(t, dir, "graph", "--format", "waves"))
	ok(t, dir, "next")
	ok(t, dir, "fail", "1", "broken")
	assert.Equal(t, `wave 1: #5 lint
critical path (1 steps): #5 lint
1 waves; at most 1 tasks can run at once
cannot start: #2 transform (waits on #1, failed), #3 emit (waits on #1, failed), #4 test (waits on #1, failed)
`, ok(t, dir, "graph", "--format", "waves"))
	var g struct {
		Nodes        []map[string]any `json:"nodes"`
		Waves        [][]int          `json:"waves"`
		CriticalPath []int            `json:"criticalPath"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "graph", "--json")), &g))
	assert.Equal(t, [][]int{{5}}, g.Waves)
	assert.Equal(t, []int{5}, g.CriticalPath)
	require.Len(t, g.Nodes, 5)
	assert.Equal(t, "failed", g.Nodes[0]["state"])
	assert.Equal(t, "stranded", g.Nodes[1]["state"])
	assert.Contains(t, ok(t, dir, "graph"), `t2["#2 transform"]:::stranded`)
}

// An export carries priority, labels, key, reason and result, and an
// import restores them.
func TestExportImportKeepsNewFields(t *testing.T) {
	dir := project(t)
	ok(t, dir, "add", "a", "--priority", "P1", "--label", "x", "--key", "a")
	ok(t, dir, "add", "b")
	ok(t, dir, "next")
	ok(t, dir, "fail", "1", "why not")
	export := filepath.Join(t.TempDir(), "export.json")
	require.NoError(t, os.WriteFile(export, []byte(ok(t, dir, "export")), 0o644))
	other := project(t)
	ok(t, other, "import", export)
	for id := 1; id <= 2; id++ {
		before, after := showJSON(t, dir, id), showJSON(t, other, id)
		delete(before, "rev")
		delete(after, "rev")
		assert.Equal(t, before, after)
	}
	j := showJSON(t, other, 1)
	assert.Equal(t, "why not", j["reason"])
	assert.Equal(t, 1.0, j["priority"])
	_, hasPriority := showJSON(t, other, 2)["priority"]
	assert.False(t, hasPriority, "a task without a priority in the export has the default")
}

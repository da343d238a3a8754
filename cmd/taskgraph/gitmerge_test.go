package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listed is a task as list --json prints it.
type listed struct {
	ID          int64   `json:"id"`
	Subject     string  `json:"subject"`
	Description string  `json:"description"`
	Status      string  `json:"status"`
	Owner       string  `json:"owner"`
	BlockedBy   []int64 `json:"blockedBy"`
}

func listAll(t *testing.T, dir string) map[string]listed {
	t.Helper()
	var tasks []listed
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "list", "--json")), &tasks))
	bySubject := map[string]listed{}
	for _, task := range tasks {
		_, dup := bySubject[task.Subject]
		require.False(t, dup, "one task per subject: %v", tasks)
		bySubject[task.Subject] = task
	}
	return bySubject
}

// addID adds a task and returns its id.
func addID(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var task listed
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, append([]string{"add", "--json"}, args...)...)), &task))
	return jsonID(task.ID)
}

func jsonID(id int64) string {
	b, _ := json.Marshal(id)
	return string(b)
}

// editDescription sets a task's description through taskgraph edit, with
// an "editor" that rewrites the line.
func editDescription(t *testing.T, dir, id, from, to string) {
	t.Helper()
	editor := filepath.Join(t.TempDir(), "editor")
	require.NoError(t, os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/\"description\": \""+from+"\"/\"description\": \""+to+"\"/' \"$1\"\n"), 0o755))
	r := runIn(t, dir, cleanEnv("EDITOR="+editor), "edit", id)
	require.Equal(t, 0, r.code, r.stderr)
}

// committed lists the files git tracks under .tasks.
func committed(t *testing.T, dir string) []string {
	t.Helper()
	return strings.Fields(gitIn(t, dir, "ls-files", ".tasks"))
}

func commitAll(t *testing.T, dir, msg string) {
	t.Helper()
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", msg)
}

// checkClean runs check and requires no problem and no warning.
func checkClean(t *testing.T, dir string) {
	t.Helper()
	r := tg(t, dir, "check")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	assert.Empty(t, r.stderr, "no warning")
}

// The script: two branches each add two tasks, one also completes
// an existing task and the other edits a task's description; git merge
// succeeds without a conflict, and the merged graph has every task and
// edge under distinct ids; check is clean and no machine file is
// committed.
func TestGitMergeOfTwoBranches(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	schema := addID(t, dir, "schema")
	api := addID(t, dir, "api", "--after", schema, "--desc", "REST")
	docs := addID(t, dir, "docs")
	commitAll(t, dir, "plan")

	gitIn(t, dir, "checkout", "-q", "-b", "one")
	a1 := addID(t, dir, "one-a", "--after", api)
	addID(t, dir, "one-b", "--after", a1)
	ok(t, dir, "claim", schema, "--owner", "alice")
	ok(t, dir, "done", schema, "--owner", "alice", "--result", "migrated")
	commitAll(t, dir, "one")

	gitIn(t, dir, "checkout", "-q", "main")
	gitIn(t, dir, "checkout", "-q", "-b", "two")
	b1 := addID(t, dir, "two-a", "--after", docs)
	addID(t, dir, "two-b", "--after", api+","+b1)
	editDescription(t, dir, api, "REST", "gRPC")
	commitAll(t, dir, "two")

	out := gitIn(t, dir, "merge", "--no-edit", "one")
	assert.NotContains(t, out, "CONFLICT")
	assert.Empty(t, porcelain(t, dir), "merged and committed")

	tasks := listAll(t, dir)
	require.Len(t, tasks, 7, "every task of both sides")
	ids := map[int64]bool{}
	for _, task := range tasks {
		ids[task.ID] = true
	}
	assert.Len(t, ids, 7, "distinct ids")
	assert.Equal(t, "completed", tasks["schema"].Status, "completed on one")
	assert.Equal(t, "gRPC", tasks["api"].Description, "edited on two")
	assert.Equal(t, []int64{tasks["api"].ID}, tasks["one-a"].BlockedBy)
	assert.Equal(t, []int64{tasks["one-a"].ID}, tasks["one-b"].BlockedBy)
	assert.Equal(t, []int64{tasks["docs"].ID}, tasks["two-a"].BlockedBy)
	assert.ElementsMatch(t, []int64{tasks["api"].ID, tasks["two-a"].ID}, tasks["two-b"].BlockedBy)
	checkClean(t, dir)
	for _, f := range committed(t, dir) {
		name := filepath.Base(f)
		assert.True(t, strings.HasPrefix(name, "task_") || name == ".taskgraph.meta" || name == ".gitignore" || name == ".gitattributes",
			"%s is the machine's, not the graph's", f)
	}
	// The merged graph works: the next ready task is api (schema is done).
	assert.Contains(t, ok(t, dir, "next", "--owner", "bob"), "api")
}

// Two clones each add tasks, and one edits what the other completes;
// pulling one into the other merges without a conflict, under ids that
// differ by construction.
func TestGitMergeOfTwoClones(t *testing.T) {
	origin := gitRepo(t)
	ok(t, origin, "init")
	first := addID(t, origin, "first", "--desc", "v1")
	second := addID(t, origin, "second", "--after", first)
	commitAll(t, origin, "plan")

	clone := func(name string) string {
		dir := filepath.Join(filepath.Dir(origin), name)
		gitIn(t, filepath.Dir(origin), "clone", "-q", origin, dir)
		r := tg(t, dir, "check")
		assert.Contains(t, r.stderr, "has not registered taskgraph's merge driver", "a fresh clone is told")
		assert.Contains(t, r.stderr, "run `taskgraph init`")
		assert.Equal(t, 0, r.code, "advice about setup is a warning, not a problem")
		assert.Contains(t, r.stdout, "no problems")
		ok(t, dir, "init")
		checkClean(t, dir)
		return dir
	}
	c1, c2 := clone("c1"), clone("c2")

	x := addID(t, c1, "from c1", "--after", second)
	editDescription(t, c1, first, "v1", "v2")
	commitAll(t, c1, "c1")
	y := addID(t, c2, "from c2", "--after", second)
	ok(t, c2, "claim", first, "--owner", "carol")
	ok(t, c2, "done", first, "--owner", "carol")
	commitAll(t, c2, "c2")
	assert.NotEqual(t, x, y)
	assert.Greater(t, len(x), 6, "a clone draws from its own block: %s", x)

	out := gitIn(t, c2, "pull", "-q", "--no-rebase", "--no-edit", c1, "main")
	assert.NotContains(t, out, "CONFLICT")
	tasks := listAll(t, c2)
	require.Len(t, tasks, 4)
	assert.Equal(t, "v2", tasks["first"].Description)
	assert.Equal(t, "completed", tasks["first"].Status)
	checkClean(t, c2)
}

// Two agents claim one task on two branches: the merge stops on that file,
// which still holds a valid task (the later claim); check says what
// happened and how to finish, and exits 1; once added, check is clean.
func TestGitMergeConflictIsReportedInWords(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	task := addID(t, dir, "contested")
	commitAll(t, dir, "plan")
	gitIn(t, dir, "checkout", "-q", "-b", "one")
	ok(t, dir, "claim", task, "--owner", "alice")
	commitAll(t, dir, "alice")
	gitIn(t, dir, "checkout", "-q", "main")
	ok(t, dir, "claim", task, "--owner", "bob")
	commitAll(t, dir, "bob")

	r := gitRun(t, dir, "merge", "--no-edit", "one")
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stdout+r.stderr, "CONFLICT")
	assert.Contains(t, r.stdout+r.stderr, "holds it here")

	data, err := os.ReadFile(filepath.Join(dir, ".tasks", "task_"+task+".json"))
	require.NoError(t, err)
	assert.NotContains(t, string(data), "<<<<<<<", "never broken JSON")
	var shown listed
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, "show", task, "--json")), &shown), "the store reads it")
	assert.Equal(t, "in_progress", shown.Status)

	// A problem (stdout, exit 1), not a warning.
	c := tg(t, dir, "check")
	assert.Equal(t, 1, c.code)
	assert.Contains(t, c.stdout, "unmerged: a merge left it unmerged")
	assert.Contains(t, c.stdout, "holds it here and")
	assert.Contains(t, c.stdout, "git add")
	assert.NotContains(t, c.stderr, "unmerged")

	gitIn(t, dir, "add", ".tasks")
	gitIn(t, dir, "commit", "-q", "--no-edit")
	checkClean(t, dir)
}

// gitRun runs git in dir as gitIn does, but returns its outcome, failed or
// not.
func gitRun(t *testing.T, dir string, args ...string) result {
	t.Helper()
	gitIn(t, dir, "--version") // skips without git
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	return collect(t, cmd)
}

// Each branch adds an edge, and together they close a cycle; each adds a
// task with the same key. The merge itself succeeds (each file merged
// cleanly); check reports both, the tasks on the cycle cannot start, and
// removing an edge and a key settles it.
func TestGitMergeThatClosesACycleOrDuplicatesAKey(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	a := addID(t, dir, "a")
	b := addID(t, dir, "b")
	commitAll(t, dir, "plan")
	gitIn(t, dir, "checkout", "-q", "-b", "one")
	ok(t, dir, "dep", "add", a, b)
	addID(t, dir, "deploy one", "--key", "deploy")
	commitAll(t, dir, "one")
	gitIn(t, dir, "checkout", "-q", "main")
	ok(t, dir, "dep", "add", b, a)
	second := addID(t, dir, "deploy two", "--key", "deploy")
	commitAll(t, dir, "two")
	gitIn(t, dir, "merge", "--no-edit", "one")

	r := tg(t, dir, "check")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, "cycle: tasks block each other")
	assert.Contains(t, r.stdout, `duplicate-key: task `+second+` has the key "deploy" of task`)
	assert.NotEqual(t, 0, tg(t, dir, "claim", a).code, "a task on the cycle cannot start")

	ok(t, dir, "dep", "rm", a, b)
	assert.Contains(t, r.stdout, `change or remove the "key" line of task_`+second+`.json by hand`)
	name := filepath.Join(dir, ".tasks", "task_"+second+".json")
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(name, []byte(strings.Replace(string(data), `"key": "deploy"`, `"key": "deploy-2"`, 1)), 0o644))
	commitAll(t, dir, "settled")
	checkClean(t, dir)
}

// Both branches add a file under one id, by hand (two different tasks):
// the merge stops on it, and the hint that the merge and check give for
// the other side's task — `git show :3:<path>` — works, with real git,
// from where the user stands: the top of the repository, and the task
// directory.
func TestGitMergeHintWorksFromWhereYouStand(t *testing.T) {
	dir := gitRepo(t)
	ok(t, dir, "init")
	commitAll(t, dir, "init")
	file := filepath.Join(dir, ".tasks", "task_77.json")
	gitIn(t, dir, "checkout", "-q", "-b", "one")
	require.NoError(t, os.WriteFile(file, []byte(`{"id": 77, "subject": "theirs", "status": "pending", "createdAt": "2026-01-01T00:00:00Z"}`), 0o644))
	commitAll(t, dir, "theirs")
	gitIn(t, dir, "checkout", "-q", "main")
	require.NoError(t, os.WriteFile(file, []byte(`{"id": 77, "subject": "ours", "status": "pending", "createdAt": "2026-01-02T00:00:00Z"}`), 0o644))
	commitAll(t, dir, "ours")
	merge := gitRun(t, dir, "merge", "--no-edit", "one")
	require.NotEqual(t, 0, merge.code, "the merge stops")

	hint := regexp.MustCompile("`(git show [^`]+)`")
	for _, where := range []string{dir, filepath.Join(dir, ".tasks")} {
		check := tg(t, where, "check")
		for what, out := range map[string]string{"the merge": merge.stdout + merge.stderr, "check": check.stdout + check.stderr} {
			m := hint.FindStringSubmatch(out)
			require.NotNil(t, m, "%s gives a hint: %s", what, out)
			shown := gitRun(t, where, strings.Fields(m[1])[1:]...)
			require.Equal(t, 0, shown.code, "%s's hint `%s` run in %s: %s", what, m[1], where, shown.stderr)
			assert.Contains(t, shown.stdout, `"subject": "theirs"`, "%s's hint shows the other side's task", what)
		}
	}
}

// merge-file refuses a version it cannot decode — text that is not UTF-8
// (encoding/json would have put U+FFFD in its place), or a value out of
// the bounds every store reads (attempts near 2^63 with no backoff, a
// name of a MiB) — at once, with exit status 2, and leaves OURS (%A) byte
// for byte as it was; in a real git merge the file stays ours.
func TestMergeFileRefusesWhatItCannotDecode(t *testing.T) {
	good := func(subject string) string {
		return `{"id": 7, "subject": "` + subject + `", "status": "pending", "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z"}`
	}
	mib := strings.Repeat("n", 1<<20)
	bad := map[string]string{
		"a subject not UTF-8":      good("caf\xe9"),
		"attempts near 2^63":       `{"id": 7, "subject": "x", "status": "pending", "maxAttempts": 9223372036854775807, "attempts": 9223372036854775805}`,
		"a MiB owner":              `{"id": 7, "subject": "x", "status": "in_progress", "owner": "` + mib + `"}`,
		"a MiB author":             `{"id": 7, "subject": "x", "status": "pending", "notes": [{"at": "2026-01-01T00:00:00Z", "author": "` + mib + `", "text": "t"}]}`,
		"a description not UTF-8":  `{"id": 7, "subject": "x", "status": "pending", "description": "` + "\xff\xfe" + `"}`,
		"invalid UTF-8 in a label": `{"id": 7, "subject": "x", "status": "pending", "labels": ["` + "\xc3" + `"]}`,
	}
	for name, content := range bad {
		for side := range 3 {
			t.Run(fmt.Sprintf("%s as side %d", name, side), func(t *testing.T) {
				dir := t.TempDir()
				files := []string{good("base"), good("ours"), good("theirs")}
				files[side] = content
				var paths []string
				for i, c := range files {
					p := filepath.Join(dir, fmt.Sprintf("v%d", i))
					require.NoError(t, os.WriteFile(p, []byte(c), 0o644))
					paths = append(paths, p)
				}
				start := time.Now()
				r := tg(t, dir, append([]string{"merge-file"}, append(paths, ".tasks/task_7.json")...)...)
				assert.Less(t, time.Since(start), time.Second, "answered at once")
				assert.Equal(t, 2, r.code, "not merged: %s", r.stderr)
				assert.Contains(t, r.stderr, "taskgraph merge-file: taskgraph: merge .tasks/task_7.json: ")
				after, err := os.ReadFile(paths[1])
				require.NoError(t, err)
				assert.Equal(t, files[1], string(after), "OURS is left byte for byte")
			})
		}
	}

	dir := gitRepo(t)
	ok(t, dir, "init")
	task := addID(t, dir, "named")
	commitAll(t, dir, "plan")
	file := filepath.Join(dir, ".tasks", "task_"+task+".json")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	gitIn(t, dir, "checkout", "-q", "-b", "one")
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(data), `"named"`, "\"caf\xe9\"", 1)), 0o644))
	commitAll(t, dir, "latin-1")
	gitIn(t, dir, "checkout", "-q", "main")
	ok(t, dir, "note", task, "ours")
	commitAll(t, dir, "ours")
	ours, err := os.ReadFile(file)
	require.NoError(t, err)
	merge := gitRun(t, dir, "merge", "--no-edit", "one")
	assert.NotEqual(t, 0, merge.code, "the merge stops: %s", merge.stdout)
	assert.Contains(t, merge.stdout+merge.stderr, "not valid UTF-8")
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(ours), string(after), "the file is ours, byte for byte")
	assert.NotContains(t, string(after), "\ufffd")
}

// The commands git runs for a graph kept in it — the merge driver
// (merge-file) and the clean filter (clean-file) — how init registers them
// in the repository's configuration, and what check says about merges.

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
)

// cmdMergeFile is git's merge driver: merge-file BASE OURS THEIRS PATH,
// registered as "taskgraph merge-file %O %A %B %P". It writes the merge
// into OURS. Exit status 0: merged; 1: merged by the rules, with a
// conflict a person should look at (git then stops the merge and check
// describes it); 2: not merged (OURS unchanged), with the reason.
func cmdMergeFile(e *env) error {
	if err := e.wantArgs(4); err != nil {
		return err
	}
	read := func(name string) ([]byte, error) {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("merge-file: %w", err)
		}
		return data, nil
	}
	var parts [3][]byte
	for i, name := range e.args[:3] {
		var err error
		if parts[i], err = read(name); err != nil {
			return err
		}
	}
	merged, conflicts, err := taskgraph.MergeTaskFiles(e.args[3], parts[0], parts[1], parts[2])
	if err != nil {
		fmt.Fprintf(e.stderr, "taskgraph merge-file: %v\n", err)
		return errQuiet{2}
	}
	if err := os.WriteFile(e.args[1], merged, 0o644); err != nil {
		return fmt.Errorf("merge-file: %w", err)
	}
	for _, c := range conflicts {
		fmt.Fprintf(e.stderr, "taskgraph: %s: %s\n", e.args[3], c)
	}
	if len(conflicts) > 0 {
		return errQuiet{1}
	}
	return nil
}

// cmdCleanFile is git's clean filter: clean-file PATH, registered as
// "taskgraph clean-file %f", copies the task file on stdin to stdout
// without its lease and version (taskgraph.CleanTaskFile).
func cmdCleanFile(e *env) error {
	if err := e.wantArgs(1); err != nil {
		return err
	}
	data, err := io.ReadAll(e.stdin)
	if err != nil {
		return fmt.Errorf("clean-file: %w", err)
	}
	_, err = e.stdout.Write(taskgraph.CleanTaskFile(e.args[0], data))
	return err
}

// git runs git in dir and returns its output without the final newline.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimRight(string(out), "\n"), nil
}

// driverCommands returns the merge driver's and the clean filter's
// commands, running this executable. A `go run` build lives in a
// temporary directory that is gone once it exits: then the commands name
// taskgraph on the PATH.
func driverCommands() (merge, clean string) {
	exe := "taskgraph"
	if path, err := os.Executable(); err == nil && !strings.Contains(path, string(filepath.Separator)+"go-build") {
		exe = "'" + strings.ReplaceAll(path, "'", `'\''`) + "'"
	}
	return exe + " merge-file %O %A %B %P", exe + " clean-file %f"
}

// driverSettings are what registerDriver sets in the repository's
// configuration.
func driverSettings() [][2]string {
	merge, clean := driverCommands()
	return [][2]string{
		{"merge." + gitrepo.Driver + ".name", "taskgraph: merge task files field by field"},
		{"merge." + gitrepo.Driver + ".driver", merge},
		{"filter." + gitrepo.Driver + ".clean", clean},
	}
}

// registerDriver sets the merge driver and the clean filter in the
// configuration of the repository dir is in (shared by its worktrees),
// and says so when it changed anything. git's configuration is not
// committed, so every clone runs this once (taskgraph init).
func (e *env) registerDriver(dir string) error {
	if _, err := exec.LookPath("git"); err != nil {
		fmt.Fprintf(e.stderr, "note: git is not on the PATH, so taskgraph's merge driver is not registered: once it is, run `%s` again\n", e.initCommand(dir))
		return nil
	}
	changed := false
	for _, kv := range driverSettings() {
		if cur, _ := git(dir, "config", "--local", "--get", kv[0]); cur == kv[1] {
			continue
		}
		if _, err := git(dir, "config", "--local", kv[0], kv[1]); err != nil {
			// The graph is made; only merges would be the poorer.
			fmt.Fprintf(e.stderr, "note: taskgraph's merge driver is not registered (%v): once git works here, run `%s` again\n", err, e.initCommand(dir))
			return nil
		}
		changed = true
	}
	if changed {
		fmt.Fprintf(e.stderr, "note: registered taskgraph's merge driver and clean filter in this repository's git configuration (every clone does this once, with `taskgraph init`)\n")
	}
	return nil
}

// driverWarnings returns what check warns about merges in the repository
// dir is in: git missing, or a driver this clone has not registered —
// advice about setup, which does not fail check.
func (e *env) driverWarnings(dir string) []string {
	if _, err := exec.LookPath("git"); err != nil {
		return []string{"git is not on the PATH: whether this clone has registered taskgraph's merge driver, and whether a merge left task files unmerged, is not checked"}
	}
	for _, kv := range driverSettings()[1:] {
		if cur, _ := git(dir, "config", "--get", kv[0]); cur == "" {
			return []string{fmt.Sprintf("this clone has not registered taskgraph's merge driver and clean filter (git config %s is unset), so git would merge task files as text and commit every lease renewal: run `%s`", kv[0], e.initCommand(dir))}
		}
	}
	return nil
}

// unmerged returns the files of the task directory dir that a git merge
// left unmerged, as problems: git stopped so that a person looks, with
// what the rules decided and why (or that one side deleted the file), and
// how to settle it. Nothing without git, or outside a repository; a
// warning if git cannot say (it refuses the repository, say).
func unmerged(dir string) (problems []taskgraph.Problem, warning error) {
	if _, err := exec.LookPath("git"); err != nil {
		return nil, nil // driverWarnings says so
	}
	if in, err := inGit(dir); err != nil || !in {
		return nil, err
	}
	out, err := git(dir, "ls-files", "-u", "--", ".")
	if err != nil {
		return nil, fmt.Errorf("whether a merge left task files unmerged is not known: %w", err)
	}
	// The merge rules name a file as git names it to the merge driver
	// (%P), from the top of the work tree: their hints (`git show
	// :3:.tasks/task_1.json`) then work from any directory in it. ls-files
	// names it from dir.
	prefix, err := git(dir, "rev-parse", "--show-prefix")
	if err != nil {
		return nil, fmt.Errorf("whether a merge left task files unmerged is not known: %w", err)
	}
	stages := map[string]*[3][]byte{}
	var paths []string
	for l := range strings.Lines(out) {
		// "<mode> <object> <stage>\t<path>"
		info, path, ok := strings.Cut(strings.TrimRight(l, "\n"), "\t")
		f := strings.Fields(info)
		if !ok || len(f) != 3 || len(f[2]) != 1 || f[2][0] < '1' || f[2][0] > '3' {
			continue
		}
		if stages[path] == nil {
			stages[path] = &[3][]byte{}
			paths = append(paths, path)
		}
		blob, err := git(dir, "cat-file", "blob", f[1])
		if err != nil {
			// Unmerged all the same: reported without what the rules decided.
			blob = ""
			warning = err
		}
		stages[path][f[2][0]-'1'] = []byte(blob)
	}
	for _, path := range paths {
		st := stages[path]
		full := filepath.Join(dir, path)
		var id taskgraph.ID
		if n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "task_"), ".json"), 10, 64); err == nil {
			id = taskgraph.ID(n)
		}
		var what string
		switch {
		case st[0] != nil && (st[1] == nil || st[2] == nil):
			side := "changed here and deleted on the branch merged"
			if st[1] == nil {
				side = "deleted here and changed on the branch merged"
			}
			what = fmt.Sprintf("%s: to keep the task, `git add %s`; to delete it, `taskgraph delete %d --detach` (which frees its dependents and children), then `git rm %s`", side, full, id, full)
		default:
			_, conflicts, err := taskgraph.MergeTaskFiles(prefix+path, st[0], st[1], st[2])
			what = strings.Join(conflicts, "; ")
			if err != nil {
				what = err.Error()
			} else if what == "" {
				what = "git left it unmerged (was the merge driver registered?)"
			}
			what += fmt.Sprintf("; the file holds a valid task: change it if it is not right (taskgraph edit, reopen, …), then `git add %s`", full)
		}
		problems = append(problems, taskgraph.Problem{Kind: taskgraph.ProblemUnmerged, Path: full, ID: id, Message: "a merge left it unmerged: " + what})
	}
	return problems, warning
}

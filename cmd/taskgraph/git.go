// What the command does for a task directory in a git repository: init
// writes the .gitignore that keeps this machine's files out of commits and
// the .gitattributes that routes task files through the merge driver
// (gitmerge.go), and, in a linked worktree, makes the graph in the main
// worktree, which every worktree shares; check says when any is amiss.

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
	"github.com/taskgraph-dev/taskgraph/internal/gitdir"
)

// sharedPlace returns where, for work in the directory wd, the task
// directory is looked for and made: wd itself, or in a linked git worktree
// (or one whose .git names a bare repository) the same place in the main
// worktree or bare repository, with shared set.
func sharedPlace(wd string) (where string, shared bool, err error) {
	wd, err = filepath.Abs(wd)
	if err != nil {
		return "", false, err
	}
	repo, err := gitdir.Find(wd)
	if err != nil {
		return wd, false, err
	}
	where, err = repo.SharedPlace(wd)
	return where, repo.Shared, err
}

// inGit reports whether the task directory dir is inside a git repository
// (or a bare repository's directory that worktrees share).
func inGit(dir string) (bool, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	repo, err := gitdir.Find(abs)
	return repo.Top != "", err
}

// setUpGit writes or completes dir/.gitignore when dir is in a git
// repository, and says so when it changed it.
func (e *env) setUpGit(dir string) error {
	if in, err := inGit(dir); err != nil || !in {
		return err
	}
	changed, err := gitrepo.WriteIgnore(dir)
	if err != nil {
		return fmt.Errorf("write %s so that git leaves out this machine's files: %w", filepath.Join(dir, gitrepo.IgnoreName), err)
	}
	if changed {
		fmt.Fprintf(e.stderr, "note: %s lists this machine's files (lock, change log, id file, cache) for git to leave out; commit it with the task files\n", filepath.Join(dir, gitrepo.IgnoreName))
	}
	changed, err = gitrepo.WriteAttributes(dir)
	if err != nil {
		return fmt.Errorf("write %s so that git merges task files by their rules: %w", filepath.Join(dir, gitrepo.AttributesName), err)
	}
	if changed {
		fmt.Fprintf(e.stderr, "note: %s sends task files through taskgraph's merge driver and clean filter; commit it with the task files\n", filepath.Join(dir, gitrepo.AttributesName))
	}
	return e.registerDriver(dir)
}

// gitWarnings returns what check says about the task directory dir in use
// and git: a .gitignore that is missing or lacks lines, and a copy of the
// tasks checked out in this linked worktree that is not the graph.
func (e *env) gitWarnings(dir string) ([]string, error) {
	var warnings []string
	if in, err := inGit(dir); err != nil {
		return nil, err
	} else if in {
		missing, err := gitrepo.IgnoreMissing(dir)
		if errors.Is(err, taskgraph.ErrInvalid) {
			// A .gitignore that is not a regular file: a warning like the
			// others, which says what to do; the graph has no problem.
			warnings = append(warnings, strings.TrimPrefix(err.Error(), "taskgraph: "))
		} else if err != nil {
			return nil, err
		}
		name := filepath.Join(dir, gitrepo.IgnoreName)
		what := name + " is missing"
		if _, err := os.Stat(name); err == nil {
			what = fmt.Sprintf("%s lacks %s", name, strings.Join(missing, " "))
		}
		if len(missing) > 0 {
			warnings = append(warnings, fmt.Sprintf("%s, so `git add -A` would commit this machine's files (lock, change log, id file, cache) with the tasks; run `%s` (safe to run again: it only adds what is missing)", what, e.initCommand(dir)))
		}
		if missing, err := gitrepo.AttributesMissing(dir); errors.Is(err, taskgraph.ErrInvalid) {
			warnings = append(warnings, strings.TrimPrefix(err.Error(), "taskgraph: "))
		} else if err != nil {
			return nil, err
		} else if len(missing) > 0 {
			warnings = append(warnings, fmt.Sprintf("%s lacks %q, so git would merge task files as text and commit every lease renewal; run `%s`", filepath.Join(dir, gitrepo.AttributesName), strings.Join(missing, "\n"), e.initCommand(dir)))
		}
		warnings = append(warnings, e.driverWarnings(dir)...)
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	repo, err := gitdir.Find(wd)
	if err != nil || !repo.Shared {
		return warnings, err
	}
	own, err := gitdir.Nearest(wd, repo.Top, dirName)
	if err != nil {
		return nil, err
	}
	if own != "" && !samePath(own, dir) {
		warnings = append(warnings, fmt.Sprintf("%s is this worktree's checked-out copy of the tasks (what its branch committed), not the graph: every worktree of the repository uses %s, so changes to the copy are never seen; leave it to git", own, dir))
	}
	return warnings, nil
}

// initCommand returns the command that runs init on dir from here.
func (e *env) initCommand(dir string) string {
	if e.dirFrom == "$TASKGRAPH_DIR" {
		return "taskgraph init"
	}
	if here, err := e.initDir(); err == nil && samePath(here, dir) {
		return "taskgraph init"
	}
	if strings.ContainsAny(dir, " \t'\"$`\\") {
		dir = "'" + strings.ReplaceAll(dir, "'", `'\''`) + "'"
	}
	return "taskgraph init --dir " + dir
}

// samePath reports whether a and b name the same path once made absolute.
func samePath(a, b string) bool {
	a, errA := filepath.Abs(a)
	b, errB := filepath.Abs(b)
	return errA == nil && errB == nil && a == b
}

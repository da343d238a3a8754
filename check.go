// Check: an offline audit of a task directory, its files one by one
// (the classifier) and then the graph they form.

package taskgraph

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
)

// Problem is one thing Check found wrong with a task directory.
type Problem struct {
	Kind    ProblemKind
	Path    string // the file concerned
	ID      ID     // the task concerned, or 0
	Message string
}

func (p Problem) String() string { return fmt.Sprintf("%s: %s: %s", p.Path, p.Kind, p.Message) }

// ProblemKind classifies a Problem.
type ProblemKind string

// The kinds of problem Check reports.
const (
	ProblemCorrupt      ProblemKind = "corrupt"       // a task file that cannot be used
	ProblemDangling     ProblemKind = "dangling"      // blockedBy names a task that does not exist
	ProblemCycle        ProblemKind = "cycle"         // tasks that block each other
	ProblemExpiredLease ProblemKind = "expired-lease" // a claim whose lease has lapsed
	ProblemNoOwner      ProblemKind = "no-owner"      // in_progress with no owner
	ProblemTempFile     ProblemKind = "temp-file"     // left by a writer that died
	ProblemJournal      ProblemKind = "journal"       // a multi-file write waiting to be finished
	ProblemIgnored      ProblemKind = "ignored"       // looks like a task file but is not named like one
	ProblemSetAside     ProblemKind = "set-aside"     // a change log of another directory, set aside after a restart
	ProblemLost         ProblemKind = "lost"          // a file a power loss left empty, moved aside
	ProblemDuplicateKey ProblemKind = "duplicate-key" // two tasks with one key, as a merge of two branches can leave
	// ProblemOutOfOrder is a task in progress or completed while a
	// blocker is not completed (Rulebook.OutOfOrder), as a merge of two
	// branches can leave: one reopens the blocker, the other completes
	// the task. A completed one counts as unfinished for its dependents.
	ProblemOutOfOrder ProblemKind = "out-of-order"
	ProblemParent     ProblemKind = "dangling-parent" // parent names a task that does not exist
	ProblemParentLoop ProblemKind = "parent-cycle"    // tasks that are each other's parents (ancestors)
	// ProblemUnmerged is a task file that a git merge left unmerged: git
	// stopped so that a person looks. Check does not ask git; the
	// command line's check reports it.
	ProblemUnmerged ProblemKind = "unmerged"
)

// Check reads the task directory dir without changing anything in it and
// returns every problem it finds, by path, each with what it means and
// what to do. It takes the directory's lock shared, if the directory has a
// usable one, so it sees no write half done. Only WithClock affects it (to
// judge leases).
//
// Temporary files left by writers that died are removed by the next write
// to the directory (they are reported here until then).
//
// Check works in two passes: classifyEntry says what each entry of the
// directory is, in name order, loading the task files into a graph; then
// checkTasks and checkCycles judge that graph.
func Check(ctx context.Context, dir string, opts ...Option) ([]Problem, error) {
	cfg := newConfig(opts)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("taskgraph: check: %w", err)
	}
	defer root.Close()
	d, err := root.Open(".")
	if err != nil {
		return nil, fmt.Errorf("taskgraph: check: %w", err)
	}
	defer d.Close()
	l := newDirLock(root, d, dir, false)
	defer l.close()
	unlock, err := l.lock(ctx, false)
	if err != nil {
		return nil, lockFailed(err)
	}
	defer unlock()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("taskgraph: check: %w", err)
	}
	slices.Sort(names)
	c := &checker{dir: dir, root: root, fsys: newDirFS(root, d), g: newGraph()}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := c.classifyEntry(name); err != nil {
			return nil, fmt.Errorf("taskgraph: check: %w", err)
		}
	}
	c.checkTasks(cfg.now())
	c.checkParentCycles()
	c.checkCycles()
	c.checkKeys()
	return c.problems, nil
}

// checkKeys reports every key that more than one task carries: each task
// was created with it where the other was not seen (two branches of a
// graph kept in git, merged), and a create with the key returns the first.
func (c *checker) checkKeys() {
	for _, key := range slices.Sorted(maps.Keys(c.g.keys)) {
		ids := c.g.keys[key]
		for _, id := range ids[1:] {
			c.add(ProblemDuplicateKey, taskFileName(id), id, "task %d has the key %q of task %d too (were they created on two branches?): a create with this key returns task %d; if they are the same work, delete one (taskgraph delete %d), else change or remove the \"key\" line of %s by hand (no command edits a key)",
				id, key, ids[0], ids[0], id, taskFileName(id))
		}
	}
}

// checker is the state of one Check: the directory, the tasks read from
// it so far, and the problems found so far, in the order found.
type checker struct {
	dir      string
	root     *os.Root
	fsys     dirFS
	g        *graph
	problems []Problem
}

func (c *checker) add(kind ProblemKind, name string, id ID, format string, args ...any) {
	c.problems = append(c.problems, Problem{Kind: kind, Path: filepath.Join(c.dir, name), ID: id, Message: fmt.Sprintf(format, args...)})
}

// classifyEntry says what the directory entry name is and reports it if it
// is a problem; a usable task file goes into the graph. The error is one
// that stops Check (the directory could not be read), not a problem.
func (c *checker) classifyEntry(name string) error {
	if id, ok := parseTaskFileName(name); ok {
		return c.checkTaskFile(name, id)
	}
	switch {
	case name == journalFileName:
		return c.checkJournal(name)
	case name == metaFileName:
		return c.checkSmall(name, parseMeta, "the id high-water mark", metaProblem)
	case name == idsFileName:
		return c.checkSmall(name, parseIDs, "this checkout's last id", idsProblem)
	case name == lockFileName:
		c.checkLockFile(name)
	case name == syncFileName:
		// Left by an earlier version's group commit: nothing reads it.
	case name == logFileName:
		c.checkSidecar(name, "change log", "every write is refused (reads go on)")
	case strings.HasPrefix(name, setAsideLogPrefix):
		c.add(ProblemSetAside, name, 0, "a change log an earlier version set aside after a restart: its last checkpoint was made in another directory (this one was copied or restored with it), so its records were not replayed here and the task files as they were won; taskgraph never reads it: delete it once you have looked")
	case name == lostDirName:
		return c.checkLost(name)
	case isTempName(name):
		c.add(ProblemTempFile, name, 0, "a temporary file left by a writer that died: the next write removes it (it is safe to delete)")
	case strings.HasPrefix(name, taskFilePrefix) && strings.HasSuffix(name, taskFileSuffix):
		c.add(ProblemIgnored, name, 0, "not named task_<id>.json with a canonical positive id, so taskgraph ignores it")
	}
	return nil
}

// checkTaskFile loads the task file name of task id into the graph, or
// reports it corrupt.
func (c *checker) checkTaskFile(name string, id ID) error {
	_, t, err := loadTaskFile(c.fsys, c.root, c.dir, id)
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		c.add(ProblemCorrupt, name, id, "%v; taskgraph never rewrites or deletes it, and refuses to write this task and to delete any task while it is unreadable (it may depend on that task): fix the file or remove it", ce.Err)
	case err != nil:
		return err
	case t != nil:
		c.g.put(t)
	}
	return nil
}

// checkJournal reports the journal of an interrupted multi-file write,
// ready to replay or corrupt.
func (c *checker) checkJournal(name string) error {
	_, err := loadJournal(c.fsys, c.root, c.dir)
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		c.add(ProblemCorrupt, name, 0, "%v", ce.Err)
	case err != nil:
		return err
	default:
		c.add(ProblemJournal, name, 0, "a write of several files that has happened (its journal is valid) but is not yet applied to every file: stores read the tasks as it leaves them, and refuse other writes, saying why, until a store that can write the directory applies and removes it")
	}
	return nil
}

// checkSmall reports a small JSON file that parse cannot use: what it
// holds, and problem, what happens until it is fixed.
func (c *checker) checkSmall(name string, parse func([]byte) (ID, error), what, problem string) error {
	fi, data, err := readFile(c.fsys, c.root, c.dir, name, maxFileSize)
	if err == nil && fi != nil {
		if _, perr := parse(data); perr != nil {
			err = &CorruptError{Path: filepath.Join(c.dir, name), Err: perr}
		}
	}
	var ce *CorruptError
	switch {
	case errors.As(err, &ce):
		c.add(ProblemCorrupt, name, 0, "%s is unusable (%v): %s", what, ce.Err, problem)
	case err != nil:
		return err
	}
	return nil
}

// checkLockFile reports a lock file that is not a regular file.
func (c *checker) checkLockFile(name string) {
	if fi, err := c.root.Lstat(name); err == nil && !fi.Mode().IsRegular() {
		c.add(ProblemCorrupt, name, 0, "the lock file is %v: remove it; until then every write is refused, and reads go on without the lock", atomicfile.NotRegular(fi.Mode()))
	}
}

// checkSidecar reports a sidecar written in place that is not a regular
// file or has other hard links; until says what happens meanwhile.
func (c *checker) checkSidecar(name, what, until string) {
	fi, err := c.root.Lstat(name)
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		c.add(ProblemCorrupt, name, 0, "the %s is %v: remove it; until then %s", what, atomicfile.NotRegular(fi.Mode()), until)
	case atomicfile.Links(fi) > 1:
		c.add(ProblemCorrupt, name, 0, "%v", atomicfile.HardLinked(what, atomicfile.Links(fi), until))
	}
}

// checkLost reports each file in the lost folder, in name order.
func (c *checker) checkLost(name string) error {
	if fi, err := c.root.Lstat(name); err == nil && !fi.IsDir() {
		c.add(ProblemCorrupt, name, 0, "not a directory, but it is where files a power loss left empty are moved: remove it; until then such files stay where they are")
		return nil
	}
	lost, err := c.root.Open(name)
	if err != nil {
		return err
	}
	entries, err := lost.Readdirnames(-1)
	lost.Close()
	if err != nil {
		return err
	}
	slices.Sort(entries)
	for _, e := range entries {
		c.add(ProblemLost, filepath.Join(name, e), 0, "a task file a power loss left empty or zero-filled, of a write that was never acknowledged (no record names it), moved here so that the directory works on; taskgraph never reads it: delete it once you have looked")
	}
	return nil
}

// checkTasks reports, task by task in id order, dangling blockers, work
// begun before its blockers were done, dangling parents, claims with no
// owner and expired leases, judging leases at now.
func (c *checker) checkTasks(now time.Time) {
	for _, id := range c.g.ids {
		t := c.g.tasks[id]
		name := taskFileName(id)
		for _, b := range t.BlockedBy {
			if !c.exists(b) {
				what := "the task stays blocked"
				switch t.Status {
				case InProgress:
					what = "it cannot be completed"
				case Completed:
					what = "the tasks it blocks wait as if it were unfinished"
				}
				c.add(ProblemDangling, name, id, "blockedBy names task %d, which does not exist (deleted on another branch?); %s: remove the edge (taskgraph dep rm %d %d)", b, what, id, b)
			}
		}
		c.checkOrder(t)
		if t.Parent != 0 && !c.exists(t.Parent) {
			c.add(ProblemParent, name, id, "the parent, task %d, does not exist (deleted on another branch?), so no epic counts this task: give it another parent or none with taskgraph edit %d (change or remove its \"parent\" line)", t.Parent, id)
		}
		if t.Status == InProgress && t.Owner == "" {
			c.add(ProblemNoOwner, name, id, "in_progress with no owner; release it or set an owner")
		}
		if t.Lapsed(now) {
			if at, clock := t.Lapse(); clock == ClockLease {
				c.add(ProblemExpiredLease, name, id, "the lease of %q expired at %s; anyone may claim the task", t.Owner, at.Format(time.RFC3339))
			} else {
				c.add(ProblemExpiredLease, name, id, "the claim of %q lapsed at %s (%s); anyone may claim the task", t.Owner, at.Format(time.RFC3339), lapseReason(t))
			}
		}
	}
}

// exists reports whether task id has a file, usable or not.
func (c *checker) exists(id ID) bool {
	return c.g.tasks[id] != nil || c.g.broken[id] != nil || fileExists(c.root, taskFileName(id))
}

// checkOrder reports t if it is in progress or completed while a blocker
// that exists and can be read is not completed (Rules.OutOfOrder; a
// missing one is reported as dangling, an unreadable one as corrupt),
// with the commands that settle it: finishing the blockers, or for a
// completed task whose dependents have not started, reopening it.
func (c *checker) checkOrder(t *Task) {
	var open []ID
	for _, b := range Rules.OutOfOrder(t, c.g.status) {
		if c.g.tasks[b] != nil {
			open = append(open, b)
		}
	}
	if len(open) == 0 {
		return
	}
	// Named once, then "it" or "they": "2 is" or "they are".
	one := strconv.FormatInt(int64(open[0]), 10)
	blockers, they, them := fmt.Sprintf("its blocker %d is %s", open[0], c.g.tasks[open[0]].Status), one+" is", one
	if len(open) > 1 {
		blockers, they, them = fmt.Sprintf("its blockers %v are not completed", open), "they are", "them"
	}
	if t.Status == InProgress {
		c.add(ProblemOutOfOrder, taskFileName(t.ID), t.ID, "task %d is in progress, held by %q, but %s (reopened on another branch?): it cannot be completed until %s; release it until then (taskgraph release %d --force), and finish %s first", t.ID, t.Owner, blockers, they, t.ID, them)
		return
	}
	fix := fmt.Sprintf("reopen %d to do it again after %s (taskgraph reopen %d), or finish %s", t.ID, them, t.ID, them)
	for _, d := range c.g.dependents[t.ID] {
		if dt := c.g.tasks[d]; dt != nil && (dt.Status == InProgress || dt.Status == Completed) {
			fix = fmt.Sprintf("finish %s (task %d, which %d blocks, has started: reopening %d would be refused)", them, d, t.ID, t.ID)
			break
		}
	}
	c.add(ProblemOutOfOrder, taskFileName(t.ID), t.ID, "task %d is completed, but %s (reopened on another branch?): the tasks it blocks wait as if it were unfinished until %s completed; %s", t.ID, blockers, they, fix)
}

// checkParentCycles reports each loop of parent links once, from its
// lowest id: tasks that are each other's ancestors, which no write makes
// but two branches, or hand edits, can.
func (c *checker) checkParentCycles() {
	const (
		walking = 1
		walked  = 2
	)
	state := map[ID]int{}
	for _, id := range c.g.ids {
		var path []ID
		cur := id
		for cur != 0 && c.g.tasks[cur] != nil && state[cur] == 0 {
			state[cur] = walking
			path = append(path, cur)
			cur = c.g.tasks[cur].Parent
		}
		if state[cur] == walking {
			loop := path[slices.Index(path, cur):]
			first := slices.Index(loop, slices.Min(loop))
			loop = slices.Concat(loop[first:], loop[:first])
			names := make([]string, 0, len(loop)+1)
			for _, l := range append(loop, loop[0]) {
				names = append(names, strconv.FormatInt(int64(l), 10))
			}
			c.add(ProblemParentLoop, taskFileName(loop[0]), loop[0], "tasks are each other's ancestors: %s (each the parent of the one before), as two branches that each gave one a parent can leave; give one of them another parent or none with taskgraph edit %d (change or remove its \"parent\" line)", strings.Join(names, " -> "), loop[0])
		}
		for _, p := range path {
			state[p] = walked
		}
	}
}

// checkCycles reports each cycle once, then cuts it and looks again (at
// most 1000 cycles). It changes the graph.
func (c *checker) checkCycles() {
	for range 1000 {
		path := c.g.findCycle()
		if path == nil {
			return
		}
		c.add(ProblemCycle, taskFileName(path[0]), path[0], "tasks block each other: %s; remove one of these edges", strings.Join((&CycleError{Path: path}).Names(), " -> "))
		last, first := path[len(path)-2], path[len(path)-1]
		t := c.g.tasks[first].clone()
		t.BlockedBy = slices.DeleteFunc(t.BlockedBy, func(b ID) bool { return b == last })
		c.g.put(&t)
	}
}

func fileExists(root *os.Root, name string) bool {
	_, err := root.Lstat(name)
	return err == nil
}

package powerloss

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
)

// The git writer: the task directory's parent is a git repository, and
// between the store's writes a person works in it with git — commits,
// checks out another branch and back, pulls from a clone where tasks were
// completed and edited, edits and deletes task files by hand — and runs
// sync after each. The store's writers go on writing the same directory:
// git does not take the store's lock. After the restart, what git made
// durable must still be there unless a store write acknowledged after it
// replaced it (the rule is in ledger_linux_test.go, verify).

// cloneName is the clone the git writer pulls from, beside the task
// directory.
const cloneName = "clone"

// setUpGit makes the repository before the round: a graph (created through
// the store and recorded in the ledger seed.ledger), committed on main,
// with branch side at that commit and a clone beside it. The repository
// has taskgraph's .gitignore and .gitattributes, and the merge driver
// registered (this test binary in the role merge-file); no clean filter,
// so git's versions carry the rev, as in a clone that never ran init.
func setUpGit(t *testing.T, tasks, ledgers string) {
	t.Helper()
	ctx := context.Background()
	s, err := taskgraph.Open(tasks)
	require.NoError(t, err)
	l, err := openLedger(filepath.Join(ledgers, "seed.ledger"), "seed")
	require.NoError(t, err)
	for i := range 6 {
		l.add(entry{Kind: "intent", Op: "create"})
		task, err := s.Create(ctx, taskgraph.NewTask{Subject: fmt.Sprintf("committed #%d", i), Description: "in the first commit"})
		require.NoError(t, err)
		l.add(entry{Kind: "ack", Op: "create", Tasks: []version{versionOf(task)}})
	}
	require.NoError(t, s.Close())
	require.NoError(t, l.f.Close())
	_, err = gitrepo.WriteIgnore(tasks)
	require.NoError(t, err)
	_, err = gitrepo.WriteAttributes(tasks)
	require.NoError(t, err)

	repo := filepath.Dir(tasks)
	git := func(dir string, args ...string) { run(t, "git", append([]string{"-C", dir}, args...)...) }
	git(repo, "init", "-q", "-b", "main")
	configure(t, repo)
	git(repo, "add", "-A", "--", filepath.Base(tasks))
	git(repo, "commit", "-q", "-m", "the graph")
	git(repo, "branch", "side")
	git(repo, "clone", "-q", repo, filepath.Join(repo, cloneName))
	configure(t, filepath.Join(repo, cloneName))
}

// configure sets a committer and registers the merge driver in a
// repository's own configuration. git's automatic garbage collection runs
// in the foreground (in the background it would go on outside the round's
// processes, after the power cut) and often: a round's commits make
// thousands of loose objects, a block each, which would fill the image.
func configure(t *testing.T, repo string) {
	exe, err := os.Executable()
	require.NoError(t, err)
	for _, kv := range [][2]string{
		{"user.name", "git writer"},
		{"user.email", "git-writer@example.com"},
		{"gc.autoDetach", "false"},
		{"gc.auto", "300"},
		{"maintenance.autoDetach", "false"},
		{"merge." + gitrepo.Driver + ".driver", roleEnv + "=merge-file " + strconv.Quote(exe) + " %O %A %B %P"},
	} {
		run(t, "git", "-C", repo, "config", kv[0], kv[1])
	}
}

// mergeFile is git's merge driver (merge-file BASE OURS THEIRS PATH), as
// `taskgraph merge-file` is: it writes the merge into OURS and exits 0
// (merged), 1 (merged, with a conflict a person should look at) or 2 (not
// merged).
func mergeFile() error {
	args := os.Args[1:]
	if len(args) != 4 {
		return fmt.Errorf("merge-file: want BASE OURS THEIRS PATH, got %q", args)
	}
	var parts [3][]byte
	for i := range parts {
		var err error
		if parts[i], err = os.ReadFile(args[i]); err != nil {
			return err
		}
	}
	merged, conflicts, err := taskgraph.MergeTaskFiles(args[3], parts[0], parts[1], parts[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := os.WriteFile(args[1], merged, 0o644); err != nil {
		return err
	}
	if len(conflicts) > 0 {
		os.Exit(1)
	}
	return nil
}

// gitter runs git in the repository and records what it wrote.
type gitter struct {
	repo, tasks string // the repository, and the task directory in it
	l           *ledger
	r           *rand.Rand
	sums        map[string]string // blob id -> bytesDigest of its content
}

// gitWriter loops over git operations until it is stopped and killed.
func gitWriter() error {
	tasks := os.Getenv(dirEnv)
	l, err := openLedger(os.Getenv(ledgerEnv), "git")
	if err != nil {
		return err
	}
	seed, _ := strconv.ParseUint(os.Getenv(seedEnv), 10, 64)
	g := &gitter{repo: filepath.Dir(tasks), tasks: tasks, l: l, r: rand.New(rand.NewPCG(seed, 4)), sums: map[string]string{}}
	for n := 0; ; n++ {
		time.Sleep(time.Duration(20+g.r.IntN(150)) * time.Millisecond)
		var err error
		switch k := g.r.IntN(10); {
		case k < 2:
			err = g.commit(n)
		case k < 5:
			err = g.checkoutAndBack(n)
		case k < 7:
			err = g.pull(n)
		case k < 9:
			err = g.handEdit(n)
		default:
			err = g.handDelete()
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: git writer: %v\n", time.Now().Format(time.StampMicro), err)
		}
	}
}

// git runs git in dir and returns its output.
func (g *gitter) git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// sync makes everything on the filesystem durable, as `sync` does (for
// the one filesystem the round is on).
func (g *gitter) sync() error {
	if out, err := exec.Command("sync", "-f", g.tasks).CombinedOutput(); err != nil {
		return fmt.Errorf("sync: %w: %s", err, out)
	}
	return nil
}

// failed records that the operation begun by the last intent ended
// without saying what it wrote: the files it may write may hold anything
// it could have left.
func (g *gitter) failed(err error) error {
	g.l.add(entry{Kind: "error"})
	return err
}

// commit stages every task file and commits: git writes no task file.
func (g *gitter) commit(n int) error {
	g.l.add(entry{Kind: "intent", Op: "git-commit"})
	if err := g.commitAll(g.repo, fmt.Sprintf("commit %d", n)); err != nil {
		return g.failed(err)
	}
	if err := g.sync(); err != nil {
		return g.failed(err)
	}
	g.l.add(entry{Kind: "git", Op: "git-commit"})
	return nil
}

func (g *gitter) commitAll(dir, msg string) error {
	var err error
	for range 5 {
		// git add fails if a store deletes a file it has listed: again.
		if _, err = g.git(dir, "add", "-A", "--", filepath.Base(g.tasks)); err == nil {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = g.git(dir, "commit", "-q", "--allow-empty", "--no-verify", "-m", msg)
	return err
}

// checkoutAndBack checks out branch side (sometimes moved to the commit
// before this one first, sometimes after committing what the store wrote)
// and, after a while, main again, both forced: git removes the task files
// the other branch lacks and rewrites those that differ, or that the store
// changed since the last commit.
func (g *gitter) checkoutAndBack(n int) error {
	if g.r.IntN(2) == 0 {
		if err := g.commit(n); err != nil {
			return err
		}
	}
	if g.r.IntN(2) == 0 {
		if _, err := g.git(g.repo, "rev-parse", "-q", "--verify", "HEAD~1"); err == nil {
			if _, err := g.git(g.repo, "branch", "-f", "side", "HEAD~1"); err != nil {
				return err
			}
		}
	}
	if err := g.checkout("side"); err != nil {
		return err
	}
	time.Sleep(time.Duration(20+g.r.IntN(150)) * time.Millisecond)
	return g.checkout("main")
}

func (g *gitter) checkout(branch string) error {
	before, _, err := g.index()
	if err != nil {
		return err
	}
	target, err := g.tree(branch)
	if err != nil {
		return err
	}
	// The files the store changed or deleted since the last commit: the
	// forced checkout resets them (a store write after this list goes
	// into "maybe").
	dirty, err := g.git(g.repo, "diff", "--name-only", "-z", "--", filepath.Base(g.tasks))
	if err != nil {
		return err
	}
	reset := map[string]bool{}
	for _, p := range strings.Split(dirty, "\x00") {
		reset[p] = true
	}
	g.l.add(entry{Kind: "intent", Op: "git-checkout", IDs: ids(before, target), Meta: true})
	if _, err := g.git(g.repo, "checkout", "-q", "-f", branch); err != nil {
		return g.failed(err)
	}
	after, _, err := g.index()
	if err != nil {
		return g.failed(err)
	}
	if err := g.sync(); err != nil {
		return g.failed(err)
	}
	e := entry{Kind: "git", Op: "git-checkout"}
	if e.Git, e.Maybe, err = g.wrote(before, after, reset, nil); err != nil {
		return g.failed(err)
	}
	g.l.add(e)
	return nil
}

// pull has the clone bring in main, complete a task and edit another
// through a store of its own and commit; then commits here and merges the
// clone's main (git pull, as fetch and merge). A conflict the merge driver
// reports is resolved with what it wrote.
func (g *gitter) pull(n int) error {
	clone := filepath.Join(g.repo, cloneName)
	if _, err := g.git(clone, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main"); err != nil {
		if err := g.commitAll(clone, "resolved"); err != nil {
			return err
		}
	}
	if err := cloneWork(filepath.Join(clone, filepath.Base(g.tasks)), n); err != nil {
		return err
	}
	if err := g.commitAll(clone, fmt.Sprintf("the clone's work %d", n)); err != nil {
		return err
	}
	if err := g.commit(n); err != nil {
		return err
	}
	if _, err := g.git(g.repo, "fetch", "-q", clone, "main"); err != nil {
		return err
	}
	before, _, err := g.index()
	if err != nil {
		return err
	}
	theirs, err := g.tree("FETCH_HEAD")
	if err != nil {
		return err
	}
	// A merge that fails after it began (local changes in its way) puts
	// back what it stashed with a hard reset: it may rewrite every
	// tracked file, not only those the other side changed.
	may := ids(before, theirs)
	g.l.add(entry{Kind: "intent", Op: "git-pull", IDs: may, Meta: true})
	_, merr := g.git(g.repo, "merge", "-q", "--no-edit", "FETCH_HEAD")
	after, unmerged, err := g.index()
	if err != nil {
		return g.failed(err)
	}
	if merr != nil {
		if _, err := g.git(g.repo, "rev-parse", "-q", "--verify", "MERGE_HEAD"); err != nil {
			// Local changes in its way: git put back what it had
			// stashed, with a hard reset to HEAD first.
			head, err := g.versions(before)
			if err != nil {
				return g.failed(err)
			}
			g.l.add(entry{Kind: "error", Restore: true, Maybe: head})
			return merr
		}
		// The driver merged by the rules and reported a conflict: what
		// it wrote is kept.
		if err := g.commitAll(g.repo, "merged "+strconv.Itoa(n)); err != nil {
			return g.failed(err)
		}
	}
	if err := g.sync(); err != nil {
		return g.failed(err)
	}
	e := entry{Kind: "git", Op: "git-pull"}
	if e.Git, _, err = g.wrote(before, after, nil, unmerged); err != nil {
		return g.failed(err)
	}
	for p := range unmerged {
		id, _ := taskID(p)
		e.Any = append(e.Any, id)
	}
	g.l.add(e)
	return nil
}

// cloneWork is what the clone does between pulls: complete the next ready
// task and edit another, through a store of its own.
func cloneWork(tasks string, n int) error {
	ctx := context.Background()
	s, err := taskgraph.Open(tasks)
	if err != nil {
		return err
	}
	defer s.Close()
	if t, err := s.ClaimNext(ctx, "clone"); err == nil {
		if _, err := s.Complete(ctx, t.ID, "clone", taskgraph.WithResult(fmt.Sprintf("done in the clone (%d)", n))); !report(err) {
			return nil
		}
	}
	ts, err := s.List(ctx)
	if err != nil || len(ts) == 0 {
		return err
	}
	d := fmt.Sprintf("edited in the clone (%d)", n)
	_, err = s.Update(ctx, ts[n%len(ts)].ID, taskgraph.Patch{Description: &d})
	report(err)
	return nil
}

// handEdit changes a task's description as a person would, with an editor
// that writes a new file and renames it into place.
func (g *gitter) handEdit(n int) error {
	id, data, ok := g.pick()
	if !ok {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil // being rewritten, or empty: another time
	}
	m["description"] = fmt.Sprintf("edited by hand (%d)", n)
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	out = append(out, '\n')
	g.l.add(entry{Kind: "intent", Op: "git-edit", IDs: []int64{id}})
	tmp := filepath.Join(g.repo, ".hand-edit")
	if err := os.WriteFile(tmp, out, 0o644); err != nil {
		return g.failed(err)
	}
	if err := os.Rename(tmp, filepath.Join(g.tasks, fmt.Sprintf("task_%d.json", id))); err != nil {
		return g.failed(err)
	}
	if err := g.sync(); err != nil {
		return g.failed(err)
	}
	g.l.add(entry{Kind: "git", Op: "git-edit", Git: []gitVersion{{ID: id, Sum: bytesDigest(out)}}})
	return nil
}

// handDelete removes a task file, as `rm` would.
func (g *gitter) handDelete() error {
	id, _, ok := g.pick()
	if !ok {
		return nil
	}
	g.l.add(entry{Kind: "intent", Op: "git-delete", IDs: []int64{id}})
	if err := os.Remove(filepath.Join(g.tasks, fmt.Sprintf("task_%d.json", id))); err != nil {
		return g.failed(err)
	}
	if err := g.sync(); err != nil {
		return g.failed(err)
	}
	g.l.add(entry{Kind: "git", Op: "git-delete", Git: []gitVersion{{ID: id}}})
	return nil
}

// pick returns a random task file and its content.
func (g *gitter) pick() (int64, []byte, bool) {
	names, _ := filepath.Glob(filepath.Join(g.tasks, "task_*.json"))
	if len(names) == 0 {
		return 0, nil, false
	}
	name := names[g.r.IntN(len(names))]
	id, ok := taskID(name)
	data, err := os.ReadFile(name)
	return id, data, ok && err == nil
}

// index returns the task files in git's index: blob ids of the merged
// entries, and the paths with a conflict.
func (g *gitter) index() (map[string]string, map[string]bool, error) {
	out, err := g.git(g.repo, "ls-files", "-s", "-z", "--", filepath.Base(g.tasks))
	if err != nil {
		return nil, nil, err
	}
	blobs, unmerged := map[string]string{}, map[string]bool{}
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if _, isTask := taskID(path); !ok || !isTask || len(f) != 3 {
			continue
		}
		if f[2] == "0" {
			blobs[path] = f[1]
		} else {
			unmerged[path] = true
		}
	}
	return blobs, unmerged, nil
}

// tree returns the task files of a commit: their blob ids.
func (g *gitter) tree(rev string) (map[string]string, error) {
	out, err := g.git(g.repo, "ls-tree", "-r", "-z", rev, "--", filepath.Base(g.tasks))
	if err != nil {
		return nil, err
	}
	blobs := map[string]string{}
	for _, rec := range strings.Split(out, "\x00") {
		meta, path, ok := strings.Cut(rec, "\t")
		f := strings.Fields(meta)
		if _, isTask := taskID(path); ok && isTask && len(f) == 3 {
			blobs[path] = f[2]
		}
	}
	return blobs, nil
}

// wrote compares the index before and after an operation: an entry that
// changed or went, or that the operation reset, was written by git (the
// versions are the blobs' content); one that stayed the same may have been
// (a forced checkout resets a file the store changed since). Paths in skip
// are left out.
func (g *gitter) wrote(before, after map[string]string, reset, skip map[string]bool) (certain, maybe []gitVersion, err error) {
	var need []string
	for _, oid := range after {
		need = append(need, oid)
	}
	if err := g.digests(need); err != nil {
		return nil, nil, err
	}
	for p, oid := range after {
		id, _ := taskID(p)
		v := gitVersion{ID: id, Sum: g.sums[oid]}
		if before[p] != oid || reset[p] {
			certain = append(certain, v)
		} else {
			maybe = append(maybe, v)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok && !skip[p] {
			id, _ := taskID(p)
			certain = append(certain, gitVersion{ID: id})
		}
	}
	return certain, maybe, nil
}

// versions returns the versions of the index entries.
func (g *gitter) versions(index map[string]string) ([]gitVersion, error) {
	var need []string
	for _, oid := range index {
		need = append(need, oid)
	}
	if err := g.digests(need); err != nil {
		return nil, err
	}
	var out []gitVersion
	for p, oid := range index {
		id, _ := taskID(p)
		out = append(out, gitVersion{ID: id, Sum: g.sums[oid]})
	}
	return out, nil
}

// digests learns the bytesDigest of each blob it does not know, by one
// git cat-file.
func (g *gitter) digests(all []string) error {
	var oids []string
	for _, oid := range all {
		if _, ok := g.sums[oid]; !ok {
			oids = append(oids, oid)
		}
	}
	if len(oids) == 0 {
		return nil
	}
	cmd := exec.Command("git", "-C", g.repo, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(strings.Join(oids, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git cat-file: %w", err)
	}
	br := bufio.NewReader(bytes.NewReader(out))
	for range oids {
		header, err := br.ReadString('\n')
		if err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return fmt.Errorf("git cat-file: %q", header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil {
			return err
		}
		data := make([]byte, size+1)
		if _, err := io.ReadFull(br, data); err != nil {
			return fmt.Errorf("git cat-file: %w", err)
		}
		g.sums[f[0]] = bytesDigest(data[:size])
	}
	return nil
}

// ids returns the task ids of the paths of both maps.
func ids(a, b map[string]string) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, m := range []map[string]string{a, b} {
		for p := range m {
			if id, ok := taskID(p); ok && !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// taskID returns the id of a task file's path.
func taskID(path string) (int64, bool) {
	base := filepath.Base(path)
	s, ok := strings.CutPrefix(base, "task_")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, ".json")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}

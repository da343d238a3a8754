package powerloss

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/taskgraph-dev/taskgraph"
)

// entry is one line of a ledger. A writer appends an intent before each
// operation and, after it returned, an ack (nil), a refusal (an error the
// workload provokes, which wrote nothing) or an error (anything else: the
// write may stand); the reader appends what it was shown; the git writer
// appends an intent before each git operation and, once its `sync`
// returned, what the operation made durable. Each line is one write(2) to
// a file outside the image, so a line is in the ledger exactly if the
// process got past that point.
type entry struct {
	Who  string `json:"who"`
	Kind string `json:"k"` // "intent", "ack", "refused", "error", "saw", "git"
	// T orders the lines of every ledger: CLOCK_MONOTONIC, shared by the
	// processes of the machine, taken before an intent is written (and
	// before the reader's call), after what an ack or a git line reports
	// had returned.
	T     int64     `json:"t"`
	Op    string    `json:"op,omitempty"` // create, update, delete, plan, claimnext, complete; git-*
	ID    int64     `json:"id,omitempty"` // the task an intent or a delete is about
	Tasks []version `json:"tasks,omitempty"`
	// Recycled is, on an ack, the writer's Stats().Recycled: how many of
	// its writes so far filled a spare (recycle.go), so that the table
	// shows the power loss cut across them.
	Recycled int64 `json:"recycled,omitempty"`
	// On a git intent: the task files the operation may write, and
	// whether it may write the meta file (.taskgraph.meta, committed
	// with the tasks).
	IDs  []int64 `json:"ids,omitempty"`
	Meta bool    `json:"meta,omitempty"`
	// On a git line: the versions the operation wrote, durable since the
	// `sync` after it (Git); those it may have written — tracked files a
	// forced checkout resets if they were modified (Maybe); the files a
	// conflicted merge left as the merge driver or a racing store wrote
	// them (Any).
	Git   []gitVersion `json:"git,omitempty"`
	Maybe []gitVersion `json:"maybe,omitempty"`
	Any   []int64      `json:"any,omitempty"`
	// Restore, on the error line of a merge that failed after it began:
	// git put back what it had stashed (a hard reset to HEAD, whose
	// versions are in Maybe, then the stash), so each tracked file holds
	// HEAD's version or one it held while the merge ran.
	Restore bool `json:"restore,omitempty"`
}

// version is a task as a store returned it: its rev and a digest of the
// content the test writes and compares.
type version struct {
	ID  int64  `json:"id"`
	Rev int64  `json:"rev"`
	Sum string `json:"sum,omitempty"`
}

// gitVersion is a task file as git (or a person) left it: a digest of its
// bytes (bytesDigest), or "" for no file.
type gitVersion struct {
	ID  int64  `json:"id"`
	Sum string `json:"sum,omitempty"`
}

func versionOf(t taskgraph.Task) version {
	return version{ID: int64(t.ID), Rev: t.Rev, Sum: digest(t)}
}

// digest sums the fields the writers set, and the time of the write, so
// that a task found at the acknowledged rev can be told to hold the
// acknowledged content (and a claim made again after git took the task
// back from one made before).
func digest(t taskgraph.Task) string {
	h := sha256.Sum256([]byte(strings.Join([]string{t.Subject, t.Description, string(t.Status), t.Owner, strconv.FormatInt(t.UpdatedAt.UnixNano(), 10)}, "\x00")))
	return hex.EncodeToString(h[:8])
}

// bytesDigest sums a task file's bytes: git's versions are compared byte
// for byte.
func bytesDigest(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:8])
}

// now is CLOCK_MONOTONIC in nanoseconds: one clock for every process of a
// round, which no clock adjustment moves.
func now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// ledger appends entries to a file, one write(2) each (O_APPEND).
type ledger struct {
	f   *os.File
	who string
}

func openLedger(path, who string) (*ledger, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	return &ledger{f: f, who: who}, err
}

// add appends e, stamped now unless the caller set the time.
func (l *ledger) add(e entry) {
	e.Who = l.who
	if e.T == 0 {
		e.T = now()
	}
	line, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		panic(err)
	}
}

// outcome records how a store operation that returned err ended: refused
// (it wrote nothing) or failed (it may have written); it reports whether
// err is nil, when the caller records the ack.
func (l *ledger) outcome(err error) bool {
	switch {
	case err == nil:
		return true
	case refusal(err):
		l.add(entry{Kind: "refused"})
	default:
		fmt.Fprintf(os.Stderr, "%s: %v\n", time.Now().Format(time.StampMicro), err)
		l.add(entry{Kind: "error"})
	}
	return false
}

// A write is one version of one task file that a store or git may have
// left there: what it wrote, and when it may have written it. The checker
// judges the file found after the restart against them.
type write struct {
	who    string
	git    bool  // written by git or by hand
	start  int64 // the write happened at or after start ...
	end    int64 // ... and at or before end: math.MaxInt64 when unfinished
	demand bool  // acknowledged by the store, or made durable by git's sync: it must not be lost
	gone   bool  // the write removed the file
	// What it wrote: a store's by rev and digest, git's by the digest of
	// its bytes; unknown (any) when the write did not say: a store
	// operation unfinished or failed, a conflicted merge, a git
	// operation cut by the power.
	any      bool
	wildcard bool // a store operation without an id (create, plan, claimnext): it may have written any task
	plan     bool // a plan: a write of several files, whose journal a store replays after its commit point
	restore  bool // a failed merge that put back a version the file held while it ran (Restore)
	rev      int64
	sum      string
	line     string // the ledger line, for reports
}

// history is what every ledger of a round says, by task.
type history struct {
	writes      map[int64][]write  // every write of each task
	wildcards   []write            // store operations unfinished or failed that named no task
	reads       map[int64][]read   // what the reader was shown
	lines       map[int64][]string // every ledger line about the task, for reports
	ackedCount  int                // acknowledged writes (a plan counts each task)
	gitCount    int                // versions git made durable
	gitOps      int                // git operations whose sync returned
	recycled    map[string]int64   // each writer's last Recycled
	lastIntent  map[string]pending // the intent each process last wrote, for the write it precedes
	hasPending  map[string]bool    // whether that intent still waits for its outcome
	storeDelete map[int64]bool     // a store delete of the task, acknowledged or not
	// gitMeta: a git operation that may write the meta file did not
	// finish (the power went, or it failed); gitUnfinished: the task
	// files such operations may write.
	gitMeta       bool
	gitUnfinished map[int64]bool
}

// pending is an intent waiting for its outcome.
type pending struct {
	e    entry
	line string
}

// read is one version the reader was shown, at a call that began at t.
type read struct {
	t   int64
	rev int64
}

// readLedgers reads every *.ledger file in dir as it stood at the cut
// (cutFile, if there is one): a line written before the clone began
// stands; of the lines written while it ran, only intents (the operation
// may have reached the disk before the clone, its outcome came too late
// to count); nothing written after it. A last line cut short (a process
// killed in mid-write) is ignored.
func readLedgers(dir string) (*history, error) {
	h := &history{writes: map[int64][]write{}, reads: map[int64][]read{}, lines: map[int64][]string{}, recycled: map[string]int64{},
		lastIntent: map[string]pending{}, hasPending: map[string]bool{}, storeDelete: map[int64]bool{}, gitUnfinished: map[int64]bool{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.ledger"))
	if err != nil {
		return nil, err
	}
	var cuts map[string]ledgerCut
	if data, err := os.ReadFile(filepath.Join(dir, cutFile)); err == nil {
		if err := json.Unmarshal(data, &cuts); err != nil {
			return nil, fmt.Errorf("%s: %w", cutFile, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	sort.Strings(files)
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		c, ok := cuts[filepath.Base(name)]
		if cuts != nil && !ok {
			c = ledgerCut{} // made after the cut
		} else if !ok {
			c = ledgerCut{Before: int64(len(data)), After: int64(len(data))}
		}
		var off int64
		for len(data) > 0 {
			line, rest, found := bytes.Cut(data, []byte("\n"))
			end := off + int64(len(line)) + 1
			data, off = rest, end
			if !found || end > c.After {
				break
			}
			var e entry
			if json.Unmarshal(line, &e) != nil || (end > c.Before && e.Kind != "intent") {
				continue
			}
			h.add(e, string(line))
		}
	}
	// An intent without its outcome: the operation was in flight when
	// the power went.
	for who, p := range h.lastIntent {
		if h.hasPending[who] {
			h.unfinishedWrites(p, math.MaxInt64)
		}
	}
	return h, nil
}

func (h *history) add(e entry, line string) {
	note := func(id int64) {
		h.lines[id] = append(h.lines[id], line)
	}
	p, open := h.lastIntent[e.Who], h.hasPending[e.Who]
	if e.Kind != "saw" {
		h.hasPending[e.Who] = false
	}
	switch e.Kind {
	case "intent":
		if open {
			// Its outcome was written after the cut began.
			h.unfinishedWrites(p, math.MaxInt64)
		}
		h.lastIntent[e.Who], h.hasPending[e.Who] = pending{e, line}, true
		for _, id := range append([]int64{e.ID}, e.IDs...) {
			if id != 0 {
				note(id)
			}
		}
		if e.Op == "delete" {
			h.storeDelete[e.ID] = true
		}
	case "refused":
	case "error":
		switch {
		case open && e.Restore:
			// git rewrote the files in place and no sync followed: until
			// one does, a power loss may leave them anything, empty too,
			// as after an operation that did not finish.
			h.unfinishedWrites(p, e.T)
			for _, v := range e.Maybe {
				h.writes[v.ID] = append(h.writes[v.ID], write{who: e.Who, git: true, start: p.e.T, end: e.T, gone: v.Sum == "", sum: v.Sum, line: line})
			}
			for _, id := range p.e.IDs {
				h.writes[id] = append(h.writes[id], write{who: e.Who, git: true, restore: true, start: p.e.T, end: e.T, line: line})
				h.gitUnfinished[id] = true
			}
			h.gitMeta = h.gitMeta || p.e.Meta
		case open:
			h.unfinishedWrites(p, e.T)
		}
	case "ack":
		start := int64(0)
		if open {
			start = p.e.T
		}
		h.recycled[e.Who] = max(h.recycled[e.Who], e.Recycled)
		if e.Op == "delete" {
			h.ackedCount++
			h.writes[e.ID] = append(h.writes[e.ID], write{who: e.Who, start: start, end: e.T, demand: true, gone: true, line: line})
			note(e.ID)
		}
		for _, v := range e.Tasks {
			h.ackedCount++
			h.writes[v.ID] = append(h.writes[v.ID], write{who: e.Who, start: start, end: e.T, demand: true, rev: v.Rev, sum: v.Sum, line: line})
			note(v.ID)
		}
	case "git":
		start := int64(0)
		if open {
			start = p.e.T
		}
		h.gitOps++
		for _, v := range e.Git {
			h.gitCount++
			h.writes[v.ID] = append(h.writes[v.ID], write{who: e.Who, git: true, start: start, end: e.T, demand: true, gone: v.Sum == "", sum: v.Sum, line: line})
			note(v.ID)
		}
		for _, v := range e.Maybe {
			h.writes[v.ID] = append(h.writes[v.ID], write{who: e.Who, git: true, start: start, end: e.T, gone: v.Sum == "", sum: v.Sum, line: line})
		}
		for _, id := range e.Any {
			h.writes[id] = append(h.writes[id], write{who: e.Who, git: true, start: start, end: e.T, any: true, line: line})
			note(id)
		}
	case "saw":
		for _, v := range e.Tasks {
			h.reads[v.ID] = append(h.reads[v.ID], read{t: e.T, rev: v.Rev})
		}
	}
}

// unfinishedWrites records the writes an operation that did not report
// success may have made, up to end: a store operation on its task (or, if
// it named none, on any), a git operation on every file it may write.
func (h *history) unfinishedWrites(p pending, end int64) {
	e := p.e
	w := write{who: e.Who, start: e.T, end: end, any: true, line: p.line}
	switch {
	case strings.HasPrefix(e.Op, "git-"):
		w.git = true
		h.gitMeta = h.gitMeta || e.Meta
		for _, id := range e.IDs {
			h.writes[id] = append(h.writes[id], w)
			h.gitUnfinished[id] = true
		}
	case e.ID != 0:
		w.gone = e.Op == "delete"
		h.writes[e.ID] = append(h.writes[e.ID], w)
	default:
		w.wildcard, w.plan = true, e.Op == "plan"
		h.wildcards = append(h.wildcards, w)
	}
}

// found is a task file after the restart, as the checker read it once the
// store had opened the directory.
type found struct {
	exists bool
	task   *taskgraph.Task // nil if the store could not read it
	sum    string          // bytesDigest of the file
}

// verdict is what the checker found in one round.
type verdict struct {
	Durability  taskgraph.Durability
	Checked     int      // acknowledged writes
	GitChecked  int      // versions git made durable
	GitOps      int      // git operations whose sync returned
	Recycled    int64    // of the writes, those that filled a spare (recycle.go)
	Lost        []string // acknowledged writes not found
	Overwritten []string // versions git made durable, not found and not replaced after
	Undone      []string // reads of a version that is no longer there
	NeedsPerson []string // what a person would have to repair
	// GitDamaged is what a person would have to repair in files git was
	// writing when the power went (see gitDamage).
	GitDamaged []string
	Log        string           // the change log's tail as found, when something was lost
	Before     map[int64]string // the task files as found, before the store opened them
}

// The rule the checker applies, in one place.
//
// For each task, the file found after the restart must hold a version
// that some write could have left there last. A version matches the
// writes that made it: a store's by rev and digest, git's by its bytes, no
// file a delete. A git operation that did not finish matches anything in
// the files it may write; a merge that failed matches every version made
// before it ended, as written again at its end (git put back what it had
// stashed). Only if no write made the version exactly does a store
// operation that did not finish (or failed) match it, on its own task or,
// if it named none, on any. The version is lost if every write it
// matches was certainly followed by a demanded write — an acknowledged
// store write, or a version git made durable (its sync returned before the
// cut) — other than itself. A write certainly followed another when it
// began after the other ended (the ledgers' times), or when both are the
// store's, no git write on the task falls in the time they span, and it
// wrote a higher rev (a store's revs of one task grow between git's
// writes; the same rev with other content is a conflict, and counts as
// following). So git's version wins over every store write acknowledged
// before git began, and a store write acknowledged after git's sync wins
// over git's version; writes whose times overlap may end either way.
// A plan that did not finish may also have made, byte for byte, a new task
// that no store acknowledged and that is found as git wrote it, if the
// plan began before git first wrote it: its journal, replayed after the
// restart, rewrites the tasks git copied from it.
//
// The demanded writes the found version fails are reported: the store's
// as lost acknowledged writes, git's as overwritten git versions (one of
// each at most per task).
func (h *history) verify(files map[int64]found, before map[int64]string, v *verdict) {
	v.Checked, v.GitChecked, v.GitOps = h.ackedCount, h.gitCount, h.gitOps
	for _, n := range h.recycled {
		v.Recycled += n
	}
	report := func(id int64, what string) string {
		file, ok := before[id]
		if ok {
			file = strconv.Quote(file)
		} else {
			file = "(no such file)"
		}
		var lines []string
		for _, l := range lastLines(h.lines[id], 10) {
			lines = append(lines, short(l))
		}
		return fmt.Sprintf("task %d: %s\n    file before the store opened it: %s\n    ledger:\n      %s", id, what, file, strings.Join(lines, "\n      "))
	}
	for _, id := range sortedKeys(h.writes) {
		ws := h.writes[id]
		if !slices.ContainsFunc(ws, func(w write) bool { return w.demand }) {
			continue
		}
		f := files[id]
		cands := h.matching(ws, f)
		var failed []write // the demanded writes the best candidate fails
		for i, c := range cands {
			var fails []write
			for _, d := range ws {
				if d.demand && !d.same(c) && h.before(id, c, d) {
					fails = append(fails, d)
				}
			}
			if i == 0 || len(fails) < len(failed) {
				failed = fails
			}
			if len(fails) == 0 {
				break
			}
		}
		if len(cands) == 0 {
			for _, d := range ws {
				if d.demand {
					failed = append(failed, d)
				}
			}
		}
		if len(failed) == 0 {
			continue
		}
		what := fmt.Sprintf("found %s, which %s", f.describe(), describeCands(cands))
		if i := slices.IndexFunc(failed, func(w write) bool { return !w.git }); i >= 0 {
			v.Lost = append(v.Lost, report(id, fmt.Sprintf("an acknowledged write was lost: %s; it came after: %s", what, short(failed[i].line))))
		}
		if i := slices.IndexFunc(failed, func(w write) bool { return w.git }); i >= 0 {
			v.Overwritten = append(v.Overwritten, report(id, fmt.Sprintf("a version git made durable was overwritten: %s; it came after: %s", what, short(failed[i].line))))
		}
	}
	// A read is judged against the store's own later writes: on a task git
	// wrote, only the read of a version the store wrote after git's last
	// write (a store may show a version git has just removed or replaced:
	// it sees a change behind its back at its next operation, or later if
	// the change fell within the filesystem clock's tick of a store's
	// write).
	for _, id := range sortedKeys(h.reads) {
		lastGit := int64(math.MinInt64)
		for _, w := range h.writes[id] {
			if w.git {
				lastGit = max(lastGit, w.end)
			}
		}
		after := map[int64]bool{} // the revs the store wrote after git's last write
		for _, w := range h.writes[id] {
			if !w.git && !w.any && w.start > lastGit {
				after[w.rev] = true
			}
		}
		rev := int64(-1)
		for _, r := range h.reads[id] {
			if lastGit == math.MinInt64 || (r.t > lastGit && after[r.rev]) {
				rev = max(rev, r.rev)
			}
		}
		f := files[id]
		switch {
		case rev < 0:
		case !f.exists && h.storeDelete[id]:
		case f.task == nil:
			v.Undone = append(v.Undone, report(id, fmt.Sprintf("the reader was shown rev %d, now missing or unreadable", rev)))
		case f.task.Rev < rev:
			v.Undone = append(v.Undone, report(id, fmt.Sprintf("the reader was shown rev %d, now at rev %d", rev, f.task.Rev)))
		}
	}
}

// gitDamage splits what a person would have to repair into the store's
// part and git's. git's is a complaint about a file that a git operation
// which did not finish may have been writing (a task file it may write,
// the meta file for a checkout or a merge): git writes files in place
// without fsync, so after a power loss in its midst they may be empty,
// and an empty meta file also keeps the store from moving empty task
// files aside. It is git's too when the task file is found holding, byte
// for byte, a version git wrote (files: as found, by id): git committed
// it unreadable, as `git add` may while the store renames a new version
// into place (it reads as many bytes of the new file as the old one's
// lstat said: the new version cut short), and a checkout then wrote it
// back — the store only ever renames whole files into place.
func (h *history) gitDamage(needs []string, files map[int64]found) (store, git []string) {
	gits := map[int64]bool{}
	for id := range h.gitUnfinished {
		gits[id] = true
	}
	for id, f := range files {
		for _, w := range h.writes[id] {
			if f.exists && w.git && w.sum != "" && w.sum == f.sum {
				gits[id] = true
			}
		}
	}
	for _, s := range needs {
		if h.gitMeta && strings.Contains(s, ".taskgraph.meta") {
			git = append(git, s)
			continue
		}
		mine := false
		for id := range gits {
			if strings.Contains(s, fmt.Sprintf("/task_%d.json", id)) {
				mine = true
				break
			}
		}
		if mine {
			git = append(git, s)
		} else {
			store = append(store, s)
		}
	}
	return store, git
}

// matching returns the writes that may have left f (see the rule above).
// A git operation that did not finish may have left anything in the files
// it may write. A store operation that did not finish made a new version
// (a new time of writing), so it is taken to have made f only if no write
// made f exactly: its own task's, or, if it named none, any task's.
func (h *history) matching(ws []write, f found) []write {
	var exact, loose []write
	for _, w := range ws {
		switch {
		case w.any && w.git:
			exact = append(exact, w)
		case w.any: // a store operation unfinished or failed
			if f.task != nil || (!f.exists && w.gone) {
				loose = append(loose, w.as(f))
			}
		case !f.exists:
			if w.gone {
				exact = append(exact, w)
			}
		case w.gone:
		case w.git:
			if w.sum == f.sum {
				exact = append(exact, w)
			}
		case f.task != nil && w.rev == f.task.Rev && w.sum == digest(*f.task):
			exact = append(exact, w)
		}
	}
	// A failed merge put back what the file held while it ran: a version
	// made before it ended, put there again at its end.
	for _, r := range ws {
		if !r.restore {
			continue
		}
		for _, x := range slices.Clone(exact) {
			if !x.any && x.start <= r.end {
				x.git, x.end, x.line = true, max(x.end, r.end), r.line
				exact = append(exact, x)
			}
		}
	}
	// A plan that did not finish may be replayed from its journal after
	// its commit point, rewriting its new tasks byte for byte: the same
	// bytes as git's copies of them, if git committed and checked them
	// out meanwhile. So a new task no store acknowledged, found as git
	// wrote it, may also be that plan's, if the plan began before git
	// first wrote it.
	if f.task != nil && f.task.Rev == 1 && !slices.ContainsFunc(exact, func(w write) bool { return !w.git && !w.any }) {
		first := int64(math.MaxInt64)
		for _, w := range exact {
			if w.git && !w.any {
				first = min(first, w.start)
			}
		}
		for _, w := range h.wildcards {
			if w.plan && w.start < first && first < math.MaxInt64 {
				exact = append(exact, w.as(f))
			}
		}
	}
	if !slices.ContainsFunc(exact, func(w write) bool { return !w.any }) {
		if f.task != nil {
			for _, w := range h.wildcards {
				loose = append(loose, w.as(f))
			}
		}
		return append(exact, loose...)
	}
	if !f.exists { // a delete makes no new version
		exact = append(exact, loose...)
	}
	return exact
}

// as is an unfinished store write taken to have written f.
func (w write) as(f found) write {
	w.any = false
	if f.task != nil {
		w.rev, w.sum = f.task.Rev, digest(*f.task)
	}
	return w
}

func (w write) same(o write) bool {
	return w.who == o.who && w.start == o.start && w.end == o.end && w.git == o.git
}

// before reports whether write b certainly came after write a on task id
// (see the rule above).
func (h *history) before(id int64, a, b write) bool {
	if a.end < b.start {
		return true
	}
	if a.git || b.git || a.gone || b.gone {
		return false
	}
	from, to := min(a.start, b.start), max(a.end, b.end)
	for _, g := range h.writes[id] {
		if g.git && g.start <= to && g.end >= from {
			return false
		}
	}
	return a.rev < b.rev || (a.rev == b.rev && a.sum != b.sum)
}

func (f found) describe() string {
	switch {
	case !f.exists:
		return "no file"
	case f.task == nil:
		return "an unreadable file"
	default:
		return fmt.Sprintf("rev %d (%s, bytes %s)", f.task.Rev, digest(*f.task), f.sum)
	}
}

func describeCands(cands []write) string {
	if len(cands) == 0 {
		return "no write made"
	}
	var s []string
	for _, c := range lastLines(cands, 3) {
		s = append(s, short(c.line))
	}
	return "these writes made: " + strings.Join(s, " | ")
}

// short cuts a ledger line for a report: a git line lists every file.
func short(line string) string {
	if len(line) > 240 {
		return line[:240] + "..."
	}
	return line
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func lastLines[S any](lines []S, n int) []S {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

// TestGitDamageTornCommit: a task file found holding, byte for byte, an
// unreadable version git wrote is git's damage (git committed a file the
// store was renaming a new version over, then checked it out: the kept
// round ext4-noauto_da_alloc-1796647803028578858 of bench/notebook/powerloss-runs.md);
// the same complaint about a file git did not write so stays the store's.
func TestGitDamageTornCommit(t *testing.T) {
	dir := t.TempDir()
	torn := []byte("{\n  \"id\": 1,\n  \"subject\": \"committed #0\",\n  \"history\": [\n    {\n ")
	lines := `{"who":"git","k":"intent","t":10,"op":"git-checkout","ids":[1,2],"meta":true}
{"who":"git","k":"git","t":20,"op":"git-checkout","git":[{"id":1,"sum":"` + bytesDigest(torn) + `"},{"id":2,"sum":"` + bytesDigest([]byte("{}")) + `"}]}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "git.ledger"), []byte(lines), 0o644))
	h, err := readLedgers(dir)
	require.NoError(t, err)
	needs := []string{
		"List: corrupt task file /mnt/tasks/task_1.json: invalid JSON: unexpected end of JSON input",
		"Check: /mnt/tasks/task_2.json: corrupt: invalid JSON: unexpected end of JSON input",
	}
	files := map[int64]found{
		1: {exists: true, sum: bytesDigest(torn)},              // as git wrote it
		2: {exists: true, sum: bytesDigest([]byte("{\"id\""))}, // not what git wrote
	}
	store, git := h.gitDamage(needs, files)
	require.Equal(t, needs[:1], git)
	require.Equal(t, needs[1:], store)
}

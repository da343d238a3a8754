package powerloss

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// entry is one line of a ledger. A writer appends an intent before each
// operation and an ack after it returned nil; the reader appends what it
// was shown. Each line is one write(2) to a file outside the image, so a
// line is in the ledger exactly if the process got past that point.
type entry struct {
	Who   string    `json:"who"`
	Kind  string    `json:"k"`            // "intent", "ack", "saw"
	Op    string    `json:"op,omitempty"` // create, update, delete, plan, claimnext, complete
	ID    int64     `json:"id,omitempty"` // the task an intent or a delete is about
	Tasks []version `json:"tasks,omitempty"`
	// Recycled is, on an ack, the writer's Stats().Recycled: how many of
	// its writes so far filled a spare (recycle.go), so that the table
	// shows the power loss cut across them.
	Recycled int64 `json:"recycled,omitempty"`
}

// version is a task as a store returned it: its rev and a digest of the
// content the test writes and compares.
type version struct {
	ID  int64  `json:"id"`
	Rev int64  `json:"rev"`
	Sum string `json:"sum,omitempty"`
}

func versionOf(t taskgraph.Task) version {
	return version{ID: int64(t.ID), Rev: t.Rev, Sum: digest(t)}
}

// digest sums the fields the writers set, so that a task found at the
// acknowledged rev can be told to hold the acknowledged content.
func digest(t taskgraph.Task) string {
	h := sha256.Sum256([]byte(strings.Join([]string{t.Subject, t.Description, string(t.Status), t.Owner}, "\x00")))
	return hex.EncodeToString(h[:8])
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

func (l *ledger) add(e entry) {
	e.Who = l.who
	line, err := json.Marshal(e)
	if err != nil {
		panic(err)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		panic(err)
	}
}

// history is what every ledger of a round says, by task.
type history struct {
	acked      map[int64]version  // the acknowledged version with the highest rev
	deleted    map[int64]bool     // an acknowledged delete
	delIntent  map[int64]bool     // a delete at least in flight
	seen       map[int64]int64    // the highest rev the reader was shown
	lines      map[int64][]string // every ledger line about the task, for reports
	ackedCount int                // acknowledged writes (a plan counts each task)
	recycled   map[string]int64   // each writer's last Recycled
}

// readLedgers reads every *.ledger file in dir. A last line cut short (a
// process killed in mid-write) is ignored.
func readLedgers(dir string) (*history, error) {
	h := &history{acked: map[int64]version{}, deleted: map[int64]bool{}, delIntent: map[int64]bool{}, seen: map[int64]int64{}, lines: map[int64][]string{}, recycled: map[string]int64{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.ledger"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e entry
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			h.add(e, sc.Text())
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return h, nil
}

func (h *history) add(e entry, line string) {
	note := func(id int64) {
		if e.Kind != "saw" { // the reader's lines would drown the rest
			h.lines[id] = append(h.lines[id], line)
		}
	}
	switch {
	case e.Kind == "intent" && e.Op == "delete":
		h.delIntent[e.ID] = true
		note(e.ID)
	case e.Kind == "intent":
		if e.ID != 0 {
			note(e.ID)
		}
	case e.Kind == "ack" && e.Op == "delete":
		h.deleted[e.ID] = true
		h.ackedCount++
		note(e.ID)
	case e.Kind == "ack":
		h.recycled[e.Who] = max(h.recycled[e.Who], e.Recycled)
		for _, v := range e.Tasks {
			h.ackedCount++
			if old, ok := h.acked[v.ID]; !ok || v.Rev > old.Rev {
				h.acked[v.ID] = v
			}
			note(v.ID)
		}
	case e.Kind == "saw":
		for _, v := range e.Tasks {
			h.seen[v.ID] = max(h.seen[v.ID], v.Rev)
		}
	}
}

// verdict is what the checker found in one round.
type verdict struct {
	Durability  taskgraph.Durability
	Checked     int                  // acknowledged writes
	Recycled    int64                // of the writes, those that filled a spare (recycle.go)
	Lost        []string             // acknowledged writes not found
	Undone      []string             // reads of a version that is no longer there
	NeedsPerson []string             // what a person would have to repair
	Log         string               // the change log's tail as found, when something was lost
	Chosen      taskgraph.Durability // what taskgraph.Open(dir) chooses here
	Before      map[int64]string     // the task files as found, before the store opened them
}

// verify compares the tasks found (by id) with the history; before holds
// the raw task files as found before the store opened, for the reports.
func (h *history) verify(found map[int64]taskgraph.Task, before map[int64]string, v *verdict) {
	v.Checked = h.ackedCount
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
		return fmt.Sprintf("task %d: %s\n    file before the store opened it: %s\n    ledger:\n      %s", id, what, file, strings.Join(lastLines(h.lines[id], 8), "\n      "))
	}
	for _, id := range sortedKeys(h.deleted) {
		if _, ok := found[id]; ok {
			v.Lost = append(v.Lost, report(id, "an acknowledged delete was undone: the task is back"))
		}
	}
	for _, id := range sortedKeys(h.acked) {
		a := h.acked[id]
		cur, ok := found[id]
		switch {
		case h.deleted[id]:
		case !ok && h.delIntent[id]:
			// A delete was in flight: it may have happened.
		case !ok:
			v.Lost = append(v.Lost, report(id, fmt.Sprintf("acknowledged at rev %d, now missing or unreadable", a.Rev)))
		case cur.Rev < a.Rev:
			v.Lost = append(v.Lost, report(id, fmt.Sprintf("acknowledged at rev %d, now at rev %d", a.Rev, cur.Rev)))
		case cur.Rev == a.Rev && digest(cur) != a.Sum:
			v.Lost = append(v.Lost, report(id, fmt.Sprintf("rev %d holds other content than acknowledged", a.Rev)))
		}
	}
	for _, id := range sortedKeys(h.seen) {
		rev := h.seen[id]
		cur, ok := found[id]
		switch {
		case !ok && (h.delIntent[id] || h.deleted[id]):
		case !ok:
			v.Undone = append(v.Undone, report(id, fmt.Sprintf("the reader was shown rev %d, now missing or unreadable", rev)))
		case cur.Rev < rev:
			v.Undone = append(v.Undone, report(id, fmt.Sprintf("the reader was shown rev %d, now at rev %d", rev, cur.Rev)))
		}
	}
}

func sortedKeys[V any](m map[int64]V) []int64 {
	keys := make([]int64, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func lastLines(lines []string, n int) []string {
	if len(lines) > n {
		return lines[len(lines)-n:]
	}
	return lines
}

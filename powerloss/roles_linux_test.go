package powerloss

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// The processes of a round are this test binary run again with roleEnv
// naming what to do; the other variables say where.
const (
	roleEnv   = "TASKGRAPH_POWERLOSS_ROLE"
	dirEnv    = "TASKGRAPH_POWERLOSS_DIR"    // the task directory
	ledgerEnv = "TASKGRAPH_POWERLOSS_LEDGER" // the ledger file (the checker: the ledgers' directory)
	seedEnv   = "TASKGRAPH_POWERLOSS_SEED"
	outEnv    = "TASKGRAPH_POWERLOSS_OUT" // where the checker writes its verdict
	opEnv     = "TASKGRAPH_POWERLOSS_OP"  // the deterministic cases' one operation
)

// TestMain runs a child's role instead of the tests when roleEnv is set.
func TestMain(m *testing.M) {
	role := os.Getenv(roleEnv)
	if role == "" {
		os.Exit(m.Run())
	}
	roles := map[string]func() error{"writer": writer, "reader": reader, "other": otherProgram, "checker": checker, "op": oneOp, "git": gitWriter, "merge-file": mergeFile}
	fn, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown role %q\n", role)
		os.Exit(2)
	}
	if err := fn(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// writer loops over random writes until it is stopped and killed,
// recording each intent and each acknowledgement in its ledger.
func writer() error {
	ctx := context.Background()
	s, err := taskgraph.Open(os.Getenv(dirEnv))
	if err != nil {
		return err
	}
	who := filepath.Base(os.Getenv(ledgerEnv))
	l, err := openLedger(os.Getenv(ledgerEnv), who)
	if err != nil {
		return err
	}
	seed, _ := strconv.ParseUint(os.Getenv(seedEnv), 10, 64)
	r := rand.New(rand.NewPCG(seed, 1))
	var mine []taskgraph.ID // the tasks this writer created and did not delete
	pick := func() taskgraph.ID {
		if len(mine) == 0 {
			return 1
		}
		return mine[r.IntN(len(mine))]
	}
	ack := func(op string, ts ...taskgraph.Task) {
		e := entry{Kind: "ack", Op: op, Recycled: s.Stats().Recycled}
		for _, t := range ts {
			e.Tasks = append(e.Tasks, versionOf(t))
		}
		l.add(e)
	}
	for n := 0; ; n++ {
		switch k := r.IntN(20); {
		case k < 5 || len(mine) < 3:
			l.add(entry{Kind: "intent", Op: "create"})
			t, err := s.Create(ctx, taskgraph.NewTask{Subject: fmt.Sprintf("%s #%d", who, n), Description: text(r)})
			if l.outcome(err) {
				ack("create", t)
				mine = append(mine, t.ID)
			}
		case k < 12:
			id := pick()
			d := text(r)
			l.add(entry{Kind: "intent", Op: "update", ID: int64(id)})
			t, err := s.Update(ctx, id, taskgraph.Patch{Description: &d})
			if l.outcome(err) {
				ack("update", t)
			}
		case k < 14:
			id := pick()
			l.add(entry{Kind: "intent", Op: "delete", ID: int64(id)})
			err := s.Delete(ctx, id)
			if l.outcome(err) {
				l.add(entry{Kind: "ack", Op: "delete", ID: int64(id)})
			}
			if err == nil || errors.Is(err, taskgraph.ErrNotFound) {
				mine = removeID(mine, id)
			}
		case k < 16:
			// A plan writes several files: the journal protocol.
			l.add(entry{Kind: "intent", Op: "plan"})
			key := fmt.Sprintf("%s-%d", who, n)
			nts := []taskgraph.NewTask{{Subject: "plan a", Key: key + "a", Description: text(r)}, {Subject: "plan b", Key: key + "b", After: []string{key + "a"}}}
			if r.IntN(2) == 0 {
				nts = append(nts, taskgraph.NewTask{Subject: "plan c", Key: key + "c", After: []string{key + "b"}})
			}
			ts, err := s.CreatePlan(ctx, nts)
			if l.outcome(err) {
				ack("plan", ts...)
				for _, t := range ts {
					mine = append(mine, t.ID)
				}
			}
		default:
			l.add(entry{Kind: "intent", Op: "claimnext"})
			t, err := s.ClaimNext(ctx, who)
			if !l.outcome(err) {
				continue
			}
			ack("claimnext", t)
			l.add(entry{Kind: "intent", Op: "complete", ID: int64(t.ID)})
			c, err := s.Complete(ctx, t.ID, who)
			if l.outcome(err) {
				ack("complete", c.Task)
			}
		}
	}
}

// refusal reports whether err is a refusal a random workload provokes
// (another writer or git deleted or claimed the task, a blocker is
// pending), which writes nothing.
func refusal(err error) bool {
	for _, ok := range []error{taskgraph.ErrNotFound, taskgraph.ErrBlocked, taskgraph.ErrClaimed, taskgraph.ErrConflict, taskgraph.ErrNoReady, taskgraph.ErrInvalid} {
		if errors.Is(err, ok) {
			return true
		}
	}
	return false
}

// report says whether err is nil. A refusal is expected; anything else is
// printed for the person reading the log.
func report(err error) bool {
	if err == nil {
		return true
	}
	if !refusal(err) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", time.Now().Format(time.StampMicro), err)
	}
	return false
}

// text returns a description of random length, up to 3 KiB: records of
// many sizes in the change log, task files that span several blocks.
func text(r *rand.Rand) string {
	n := 8 + r.IntN(3<<10)
	if r.IntN(4) != 0 {
		n = 8 + r.IntN(64)
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(r.IntN(26))
	}
	return string(b)
}

func removeID(ids []taskgraph.ID, id taskgraph.ID) []taskgraph.ID {
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// reader lists and gets in a loop, recording every version it is shown
// that differs from what it recorded before (one line per call, stamped
// with the time the call began).
func reader() error {
	ctx := context.Background()
	s, err := taskgraph.Open(os.Getenv(dirEnv))
	if err != nil {
		return err
	}
	l, err := openLedger(os.Getenv(ledgerEnv), "reader")
	if err != nil {
		return err
	}
	shown := map[taskgraph.ID]int64{}
	record := func(began int64, ts ...taskgraph.Task) {
		e := entry{T: began}
		for _, t := range ts {
			if rev, ok := shown[t.ID]; !ok || t.Rev != rev {
				shown[t.ID] = t.Rev
				e.Tasks = append(e.Tasks, version{ID: int64(t.ID), Rev: t.Rev})
			}
		}
		if len(e.Tasks) > 0 {
			e.Kind = "saw"
			l.add(e)
		}
	}
	r := rand.New(rand.NewPCG(uint64(os.Getpid()), 2))
	for {
		began := now()
		ts, err := s.List(ctx)
		if report(err) {
			record(began, ts...)
		}
		if len(ts) > 0 {
			began := now()
			t, err := s.Get(ctx, ts[r.IntN(len(ts))].ID)
			if report(err) {
				record(began, t)
			}
		}
	}
}

// otherProgram is someone else on the same filesystem: it writes and
// fsyncs files of its own, so the filesystem commits its journal at
// moments the store does not choose (an ext4 or xfs journal commit
// carries every metadata change made before it, the store's renames
// among them).
func otherProgram() error {
	dir := filepath.Join(filepath.Dir(os.Getenv(dirEnv)), "other")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(uint64(os.Getpid()), 3))
	buf := make([]byte, 64<<10)
	for i := 0; ; i++ {
		name := filepath.Join(dir, fmt.Sprint("f", r.IntN(8)))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if _, err := f.Write(buf[:4<<10+r.IntN(60<<10)]); err != nil {
			return err
		}
		if err := f.Sync(); err != nil {
			return err
		}
		f.Close()
		time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
	}
}

// checker opens the copy after the "restart", as the next program would,
// and judges it against the ledgers; it writes its verdict as JSON.
func checker() error {
	ctx := context.Background()
	dir := os.Getenv(dirEnv)
	h, err := readLedgers(os.Getenv(ledgerEnv))
	if err != nil {
		return err
	}
	before, tail := rawTasks(dir), logTail(dir)
	v := verdict{Before: before}
	files := map[int64]found{}
	defer func() {
		v.NeedsPerson, v.GitDamaged = h.gitDamage(v.NeedsPerson, files)
		data, _ := json.MarshalIndent(v, "", "  ")
		_ = os.WriteFile(os.Getenv(outEnv), data, 0o644)
	}()
	s, err := taskgraph.Open(dir)
	if err != nil {
		v.NeedsPerson = append(v.NeedsPerson, "Open: "+err.Error())
		return nil
	}
	defer s.Close()
	v.Durability = s.Durability()
	// List returns the tasks it could read even when it fails on a
	// corrupt file: the acknowledged writes are judged on those.
	ts, err := s.List(ctx)
	if err != nil {
		v.NeedsPerson = append(v.NeedsPerson, "List: "+err.Error())
	}
	for _, t := range ts {
		files[int64(t.ID)] = found{task: &t}
	}
	// The files as the store left them after it opened the directory
	// (moving aside what no write explains): git's versions are compared
	// byte for byte.
	names, _ := filepath.Glob(filepath.Join(dir, "task_*.json"))
	for _, name := range names {
		id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "task_"), ".json"), 10, 64)
		if err != nil {
			continue
		}
		if data, err := os.ReadFile(name); err == nil {
			f := files[id]
			f.exists, f.sum = true, bytesDigest(data)
			files[id] = f
		}
	}
	h.verify(files, before, &v)
	if len(v.Lost)+len(v.Overwritten)+len(v.Undone)+len(v.NeedsPerson) > 0 {
		v.Log = tail
	}
	problems, err := taskgraph.Check(ctx, dir)
	if err != nil {
		v.NeedsPerson = append(v.NeedsPerson, "Check: "+err.Error())
	}
	for _, p := range problems {
		if p.Kind == taskgraph.ProblemCorrupt || p.Kind == taskgraph.ProblemJournal {
			v.NeedsPerson = append(v.NeedsPerson, "Check: "+p.String())
		}
	}
	t, err := s.Create(ctx, taskgraph.NewTask{Subject: "after the restart"})
	if err != nil {
		v.NeedsPerson = append(v.NeedsPerson, "Create: "+err.Error())
		return nil
	}
	if err := s.Delete(ctx, t.ID); err != nil {
		v.NeedsPerson = append(v.NeedsPerson, "Delete: "+err.Error())
	}
	return nil
}

// rawTasks reads every task file as it is, before a store touches it.
func rawTasks(dir string) map[int64]string {
	out := map[int64]string{}
	names, _ := filepath.Glob(filepath.Join(dir, "task_*.json"))
	for _, name := range names {
		id, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "task_"), ".json"), 10, 64)
		if err != nil {
			continue
		}
		data, _ := os.ReadFile(name)
		if len(data) > 400 {
			data = append(data[:400:400], "..."...)
		}
		out[id] = string(data)
	}
	return out
}

// logTail is the end of the change log, for a report.
func logTail(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, ".taskgraph.log"))
	if err != nil {
		return "no change log: " + err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	for i, l := range lines {
		if len(l) > 200 {
			l = l[:200] + "..."
		}
		// A log cut by the power may end in zeros: show them.
		lines[i] = strings.TrimSuffix(strings.TrimPrefix(strconv.Quote(l), `"`), `"`)
	}
	return ".taskgraph.log (" + strconv.Itoa(len(data)) + " bytes), last lines:\n      " + strings.Join(lastLines(lines, 12), "\n      ")
}

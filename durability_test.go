//go:build !windows

package taskgraph_test

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func init() { roles["mutate"] = mutateForever } // a worker role (main_test.go)

// mutateForever is the crash-test worker: an endless stream of single- and
// multi-file mutations, each acknowledged on stdout after it returns.
func mutateForever(s *tg.FileStore, _, _ string) int {
	for k := 0; ; k++ {
		all, err := s.List(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "list:", err)
			return 1
		}
		last := all[len(all)-1].ID
		switch k % 4 {
		case 0: // two files: the new task and the one it blocks
			nt := tg.NewTask{Subject: "crash", Blocks: []tg.ID{last}, Metadata: map[string]any{"blocks": float64(last)}}
			if last == 1 {
				nt.Blocks, nt.Metadata = nil, nil
			}
			t, err := s.Create(ctx, nt)
			if err != nil {
				fmt.Fprintln(os.Stderr, "create:", err)
				return 1
			}
			fmt.Printf("C %d\n", t.ID)
		case 1: // one file: a counter
			c, err := s.Get(ctx, 1)
			if err != nil {
				return 1
			}
			n, _ := c.Metadata["n"].(float64)
			if _, err := s.Update(ctx, 1, tg.Patch{Metadata: map[string]any{"n": n + 1}, IfRev: c.Rev}); err != nil {
				fmt.Fprintln(os.Stderr, "update:", err)
				return 1
			}
			fmt.Printf("N %d\n", int(n+1))
		case 2: // several files: delete a task others depend on
			if last <= 2 {
				continue
			}
			victim := all[len(all)-2].ID
			if victim == 1 {
				continue
			}
			if err := s.Delete(ctx, victim, tg.Detach()); err != nil {
				fmt.Fprintln(os.Stderr, "delete:", err)
				return 1
			}
			fmt.Printf("D %d\n", victim)
		case 3: // several files: a plan of three tasks, in a chain
			var plan []tg.NewTask
			for part := range 3 {
				nt := tg.NewTask{Subject: "plan", Key: fmt.Sprintf("p%d-%d-%d", os.Getpid(), k, part), Metadata: map[string]any{"part": float64(part)}}
				if part > 0 {
					nt.After = []string{plan[part-1].Key}
				}
				plan = append(plan, nt)
			}
			ts, err := s.CreatePlan(ctx, plan)
			if err != nil {
				fmt.Fprintln(os.Stderr, "create plan:", err)
				return 1
			}
			fmt.Printf("P %d %d %d\n", ts[0].ID, ts[1].ID, ts[2].ID)
		}
	}
}

// TestCrashRecovery kills a writing process with SIGKILL at random moments
// and checks after every kill that the directory opens, every acknowledged
// mutation is there, multi-file mutations are all-or-nothing, and the store
// keeps working.
func TestCrashRecovery(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	dir := t.TempDir()
	s := openStore(t, dir)
	require.Equal(t, tg.ProtocolSyncEachWrite, s.Durability().Protocol)
	_, err := s.Create(ctx, tg.NewTask{Subject: "counter"})
	require.NoError(t, err)
	l := newLedger()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range rounds {
		// Let it do some work, then kill it wherever it is.
		l.run(t, worker(t, "mutate", dir, ""), func(cmd *exec.Cmd) {
			time.Sleep(time.Duration(rng.IntN(20_000)) * time.Microsecond)
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		})
		l.verify(t, dir, round)
		if t.Failed() {
			return
		}
	}
	goesOn(t, s)
	t.Logf("%d rounds, acknowledged mutations by kind %v, counter %d", rounds, l.kinds, l.counter)
}

// goesOn checks that a store open all along still writes after the kills.
func goesOn(t *testing.T, s *tg.FileStore) {
	t.Helper()
	next, err := s.Create(ctx, tg.NewTask{Subject: "after the crashes"})
	require.NoError(t, err)
	_, err = s.Claim(ctx, next.ID, "survivor")
	require.NoError(t, err)
}

// ledger is what the crash tests know of a directory that mutateForever
// workers write: every mutation they acknowledged, and what verify found
// there since (acknowledged or not, a mutation there has happened).
type ledger struct {
	created, deleted map[tg.ID]bool
	kinds            map[string]int
	counter          int
}

func newLedger() *ledger {
	return &ledger{created: map[tg.ID]bool{}, deleted: map[tg.ID]bool{}, kinds: map[string]int{}}
}

// run starts the worker cmd, calls stop once it has acknowledged its first
// mutation (stop kills it, or lets it kill itself), waits for it to end
// and records its acknowledgements.
func (l *ledger) run(t *testing.T, cmd *exec.Cmd, stop func(*exec.Cmd)) {
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	acks := make(chan string, 1<<16)
	started := make(chan struct{})
	go func() {
		var once sync.Once
		defer once.Do(func() { close(started) }) // a worker that died early
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			acks <- sc.Text()
			once.Do(func() { close(started) })
		}
		close(acks)
	}()
	<-started
	stop(cmd)
	_ = cmd.Wait()
	for a := range acks {
		f := strings.Fields(a)
		l.kinds[f[0]]++
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "C":
			l.created[tg.ID(n)] = true
		case "P":
			for _, id := range f[1:] {
				n, _ := strconv.Atoi(id)
				l.created[tg.ID(n)] = true
			}
		case "D":
			l.deleted[tg.ID(n)] = true
		case "N":
			l.counter = n
		}
	}
}

// verify opens the directory after a kill and checks that every
// acknowledged mutation is there and every multi-file one whole.
func (l *ledger) verify(t *testing.T, dir string, round int) {
	t.Helper()
	fresh, err := tg.Open(dir)
	require.NoError(t, err)
	defer fresh.Close()
	all, err := fresh.List(ctx)
	require.NoError(t, err, "round %d: every file parses", round)
	byID := map[tg.ID]tg.Task{}
	for _, task := range all {
		byID[task.ID] = task
	}
	var vanished []tg.ID
	for id := range l.created {
		_, ok := byID[id]
		switch {
		case l.deleted[id]:
			assert.False(t, ok, "round %d: acknowledged delete of %d", round, id)
		case !ok:
			vanished = append(vanished, id)
			l.deleted[id] = true
		}
	}
	// The one mutation in flight at the kill may have been a delete
	// that committed without its acknowledgement.
	assert.LessOrEqual(t, len(vanished), 1, "round %d: acknowledged creates lost: %v", round, vanished)
	n, _ := byID[1].Metadata["n"].(float64)
	assert.GreaterOrEqual(t, int(n), l.counter, "round %d: acknowledged counter", round)
	assert.LessOrEqual(t, int(n), l.counter+1, "round %d: counter moved by at most the one unacknowledged update", round)
	l.counter = int(n) // an unacknowledged update may have landed: the file is the truth now
	for _, task := range all {
		for _, b := range task.BlockedBy {
			assert.Contains(t, byID, b, "round %d: task %d names deleted %d: a detach was half done", round, task.ID, b)
		}
		if p, ok := task.Metadata["blocks"].(float64); ok {
			if pt, exists := byID[tg.ID(p)]; exists {
				assert.Contains(t, pt.BlockedBy, task.ID, "round %d: create of %d with Blocks was half done", round, task.ID)
			}
		}
		if part, ok := task.Metadata["part"].(float64); ok {
			// A plan's three ids are consecutive: each is there, or
			// was deleted since.
			first := task.ID - tg.ID(part)
			for id := first; id < first+3; id++ {
				_, ok := byID[id]
				assert.True(t, ok || l.deleted[id], "round %d: plan %d..%d has task %d but not %d: half created", round, first, first+2, task.ID, id)
			}
		}
	}
	// What is there now was committed, acknowledged or not: from now
	// on only a delete may take it away.
	for id := range byID {
		l.created[id] = true
	}
	_, err = os.Stat(filepath.Join(dir, ".taskgraph.journal"))
	assert.True(t, os.IsNotExist(err), "round %d: the journal was replayed", round)
}

func TestRestartKeepsTasksAndIDs(t *testing.T) {
	dir := t.TempDir()
	s, err := tg.Open(dir)
	require.NoError(t, err)
	for _, subj := range []string{"a", "b", "c"} {
		_, err := s.Create(ctx, tg.NewTask{Subject: subj})
		require.NoError(t, err)
	}
	_, err = s.Claim(ctx, 1, "agent")
	require.NoError(t, err)
	require.NoError(t, s.Delete(ctx, 3))
	require.NoError(t, s.Close())

	s2 := openStore(t, dir)
	got, err := s2.Get(ctx, 1)
	require.NoError(t, err)
	assert.Equal(t, tg.InProgress, got.Status)
	assert.Equal(t, "agent", got.Owner)
	n, err := s2.Create(ctx, tg.NewTask{Subject: "d"})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(4), n.ID, "id 3 was deleted and is not reused after a restart")
}

func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "256k")
	s := openStore(t, dir)
	a, err := s.Create(ctx, tg.NewTask{Subject: "first"})
	require.NoError(t, err)
	big := strings.Repeat("x", 40_000)
	var full error
	for i := 0; i < 100 && full == nil; i++ {
		_, full = s.Create(ctx, tg.NewTask{Subject: "filler", Description: big})
	}
	require.Error(t, full, "the tmpfs filled up")
	assert.ErrorIs(t, full, syscall.ENOSPC)
	assert.Contains(t, full.Error(), "no space left on device")

	// The old data is intact and readable, and updates of existing tasks
	// either happen or leave the file as it was.
	got, err := s.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, "first", got.Subject)
	_, err = s.Update(ctx, a.ID, tg.Patch{Description: ptr(big)})
	all, lerr := s.List(ctx)
	require.NoError(t, lerr, "every file still parses")
	if err != nil {
		assert.Equal(t, "", all[0].Description)
	}
	fresh := openStore(t, dir)
	again, err := fresh.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, len(all), len(again))

	// Not one byte left: a delete still frees space, and then writes
	// go on.
	pad, err := os.Create(filepath.Join(dir, "pad"))
	require.NoError(t, err)
	for _, err = pad.Write(make([]byte, 4096)); err == nil; _, err = pad.Write(make([]byte, 4096)) {
	}
	for _, err = pad.Write(make([]byte, 1)); err == nil; _, err = pad.Write(make([]byte, 1)) {
	}
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.NoError(t, pad.Close())
	for _, task := range all[1:] {
		require.NoError(t, s.Delete(ctx, task.ID), "a delete frees space on a full disk")
	}
	_, err = s.Create(ctx, tg.NewTask{Subject: "after the deletes"})
	require.NoError(t, err)
	rest, err := openStore(t, dir).List(ctx)
	require.NoError(t, err)
	assert.Len(t, rest, 2)
}

func TestReadOnlyDirectory(t *testing.T) {
	dir := mountTmpfs(t, "1m")
	s := openStore(t, dir)
	_, err := s.Create(ctx, tg.NewTask{Subject: "written before"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)

	ro := openStore(t, dir)
	all, err := ro.List(ctx)
	require.NoError(t, err, "a read-only directory can be read")
	assert.Len(t, all, 1)
	_, err = ro.Create(ctx, tg.NewTask{Subject: "refused"})
	require.Error(t, err)
	assert.ErrorIs(t, err, syscall.EROFS)
	assert.Contains(t, err.Error(), "writable")
	all, err = ro.List(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

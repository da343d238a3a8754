//go:build linux

package taskgraph_test

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func init() {
	roles["mutatekill"] = mutateThenKill // registered here, beside its test
}

// mutateThenKill is mutateForever in a store that replaces the change log
// at 32 KiB, killing itself with SIGKILL at the step its argument names
// ("fsync:3": the third fsync).
func mutateThenKill(s *tg.FileStore, dir, arg string) int {
	kind, n, _ := strings.Cut(arg, ":")
	at, _ := strconv.Atoi(n)
	tg.SetLogLimit(s, 32<<10)
	tg.KillAt(s, kind, at)
	return mutateForever(s, dir, "")
}

// TestKilledMidWrite kills a writer with SIGKILL at a random step of a
// write — an fsync (of a file written ahead of the lock, of one written
// under it, or of the directory at the commit point), an append to the
// change log (its announcement, or its record after the commit point), or
// as it puts a new change log in place of a full one — and checks, as
// TestCrashRecovery does, that every acknowledged mutation is there, none
// is half done, and the store goes on.
func TestKilledMidWrite(t *testing.T) {
	within := map[string]int{"fsync": 300, "append": 300, "logswap": 3}
	for _, kind := range []string{"fsync", "append", "logswap"} {
		t.Run(kind, func(t *testing.T) { killedAt(t, kind, within[kind], 5) })
	}
}

// killedAt runs rounds of a worker that kills itself with SIGKILL at the
// n-th step of kind (n drawn from 1..within, by seed), and checks after
// each that every acknowledged mutation is there and none is half done,
// then that the store goes on.
func killedAt(t *testing.T, kind string, within int, seed uint64) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	dir := t.TempDir()
	s := openStore(t, dir)
	_, err := s.Create(ctx, tg.NewTask{Subject: "counter"})
	require.NoError(t, err)
	l := newLedger()
	rng := rand.New(rand.NewPCG(uint64(len(kind)), seed))
	for round := range rounds {
		at := 1 + rng.IntN(within)
		l.run(t, worker(t, "mutatekill", dir, fmt.Sprintf("%s:%d", kind, at)), func(cmd *exec.Cmd) {
			// It kills itself; a worker that never reaches the step is
			// a failure of the test.
			done := make(chan struct{})
			go func() {
				select {
				case <-done:
				case <-time.After(60 * time.Second):
					cmd.Process.Kill()
				}
			}()
			state, _ := cmd.Process.Wait()
			close(done)
			ws, _ := state.Sys().(syscall.WaitStatus)
			require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "round %d: the worker died at %s %d by SIGKILL (%v)", round, kind, at, state)
		})
		l.verify(t, dir, round)
		if t.Failed() {
			return
		}
	}
	goesOn(t, s)
	t.Logf("%d kills at %s, acknowledged mutations by kind %v", rounds, kind, l.kinds)
}

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

// mutateThenKill is mutateForever in a store that checkpoints every 8 KiB
// of change log and replaces the log at 32 KiB, killing itself with
// SIGKILL at the step its argument names ("syncfs:3": the third syncfs).
func mutateThenKill(s *tg.FileStore, dir, arg string) int {
	kind, n, _ := strings.Cut(arg, ":")
	at, _ := strconv.Atoi(n)
	tg.SetLogLimits(8<<10, 32<<10)
	tg.KillAt(s, kind, at)
	return mutateForever(s, dir, "")
}

// TestKilledInGroupCommit kills a writer with SIGKILL inside each step of
// group commit — while it syncs the change log for the writers queued
// behind it (after letting go of the lock), in a checkpoint's syncfs, and
// as it puts a new change log in place of a full one — at a random
// position each round, and checks, as TestCrashRecovery does, that every
// acknowledged mutation is there, none is half done, and the store goes on.
func TestKilledInGroupCommit(t *testing.T) {
	within := map[string]int{"syncdata": 200, "syncfs": 15, "logswap": 3}
	for _, kind := range []string{"syncdata", "syncfs", "logswap"} {
		// Group commit whatever TASKGRAPH_TEST_PROTOCOL says: with the
		// full protocol these steps never come, and each round would
		// wait its full minute for a kill.
		t.Run(kind, func(t *testing.T) { killedAt(t, tg.ProtocolGroupCommit, kind, within[kind], 3) })
	}
}

// TestKilledInFullProtocol kills a writer of the full protocol with
// SIGKILL at a random fsync — of a file written ahead of the lock, of one
// written under it, or of the directory after the lock, with its record
// appended and the lock let go (dirsync.go) — and checks as
// TestKilledInGroupCommit does.
func TestKilledInFullProtocol(t *testing.T) {
	t.Run("fsync", func(t *testing.T) { killedAt(t, tg.ProtocolSyncEachWrite, "fsync", 300, 5) })
}

// killedAt runs rounds of a worker of protocol p that kills itself with
// SIGKILL at the n-th step of kind (n drawn from 1..within, by seed), and
// checks after each that every acknowledged mutation is there and none is
// half done, then that the store goes on.
func killedAt(t *testing.T, p tg.Protocol, kind string, within int, seed uint64) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	dir := t.TempDir()
	var opts []tg.Option // this process's store: as the suite runs
	if p == tg.ProtocolSyncEachWrite {
		opts = []tg.Option{tg.WithSyncEachWrite()}
	}
	s := openStore(t, dir, opts...)
	_, err := s.Create(ctx, tg.NewTask{Subject: "counter"})
	require.NoError(t, err)
	l := newLedger()
	rng := rand.New(rand.NewPCG(uint64(len(kind)), seed))
	for round := range rounds {
		at := 1 + rng.IntN(within)
		l.run(t, workerUsing(t, p, "mutatekill", dir, fmt.Sprintf("%s:%d", kind, at)), func(cmd *exec.Cmd) {
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

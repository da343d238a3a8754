//go:build !windows

package taskgraph_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func init() {
	roles["killatrecord"] = killAtRecord // registered here, beside its test
}

// killAtRecord makes one write (arg names it) and kills its own process
// with SIGKILL after the write's files are renamed into place and
// fsynced, before the write is recorded in the change log.
func killAtRecord(s *tg.FileStore, _, arg string) int {
	tg.KillAtLogAppend(s, 2) // 1: the announcement, 2: the record
	var err error
	switch arg {
	case "create":
		_, err = s.Create(ctx, tg.NewTask{Subject: "by the killed writer"})
	case "create with blocks":
		_, err = s.Create(ctx, tg.NewTask{Subject: "by the killed writer", Blocks: []tg.ID{3}})
	case "claim":
		_, err = s.Claim(ctx, 1, "killed")
	case "complete":
		_, err = s.Complete(ctx, 4, "w")
	case "delete with detach":
		err = s.Delete(ctx, 2, tg.Detach())
	}
	os.Stderr.WriteString("killatrecord: not killed; error: " + errors.Join(err).Error() + "\n")
	return 3
}

// TestKilledBeforeRecordIsSeen: a writer killed between its commit point
// and its change-log record leaves a write that every process sees,
// including long-lived stores that were current before it — whether they
// read right after the kill or only after another writer has written since
// (which used to hide the write from them indefinitely: a dispatcher saw
// phantom ready tasks).
func TestKilledBeforeRecordIsSeen(t *testing.T) {
	for _, m := range []string{"create", "create with blocks", "claim", "complete", "delete with detach"} {
		t.Run(m, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			for i, subj := range []string{"one", "two", "three", "four"} {
				var by []tg.ID
				if i == 1 || i == 2 {
					by = []tg.ID{tg.ID(i)}
				}
				_, err := s.Create(ctx, tg.NewTask{Subject: subj, BlockedBy: by})
				require.NoError(t, err)
			}
			_, err := s.Claim(ctx, 4, "w")
			require.NoError(t, err)
			early, late := openStore(t, dir), openStore(t, dir)
			for _, r := range []*tg.FileStore{early, late} {
				_, err := r.Board(ctx) // current, and following the log from now on
				require.NoError(t, err)
			}
			before, err := s.List(ctx)
			require.NoError(t, err)

			cmd := worker(t, "killatrecord", dir, m)
			err = cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit)
			status := exit.Sys().(syscall.WaitStatus)
			require.True(t, status.Signaled() && status.Signal() == syscall.SIGKILL, "the writer was killed (%v)", err)

			after := list(t, dir)
			require.NotEqual(t, before, after, "the write was committed before the kill")
			got, err := early.List(ctx)
			require.NoError(t, err)
			assert.Equal(t, after, got, "a store reading right after the kill")

			_, err = s.Create(ctx, tg.NewTask{Subject: "a later write"})
			require.NoError(t, err)
			after = list(t, dir)
			got, err = late.List(ctx)
			require.NoError(t, err)
			assert.Equal(t, after, got, "a store reading after a later write")
			b, err := late.Board(ctx)
			require.NoError(t, err)
			fresh := openStore(t, dir)
			want, err := fresh.Board(ctx)
			require.NoError(t, err)
			assert.Equal(t, idsOf(want.Ready), idsOf(b.Ready), "no phantom ready task")

			_, err = late.Create(ctx, tg.NewTask{Subject: "the long-lived store writes"})
			require.NoError(t, err)
			names, err := filepath.Glob(filepath.Join(dir, ".*"))
			require.NoError(t, err)
			for _, n := range names {
				base := filepath.Base(n)
				assert.True(t, base == ".taskgraph.lock" || base == ".taskgraph.log" || base == ".taskgraph.meta" || base == ".taskgraph.sync" || base == ".taskgraph.cache", "left behind: %s", base)
				assert.False(t, strings.HasPrefix(base, ".task_"), "a temporary file outlived the next write: %s", base)
			}
		})
	}
}

// list returns every task of dir as a fresh store reads it.
func list(t *testing.T, dir string) []tg.Task {
	t.Helper()
	s, err := tg.Open(dir)
	require.NoError(t, err)
	defer s.Close()
	all, err := s.List(ctx)
	require.NoError(t, err)
	return all
}

// TestCreateNeverOverwritesAnUnknownFile: a task file that a writer
// bypassing the lock made with the next id, in a way the store's cache
// cannot see (here: the directory's mtime set back, as a change within one
// tick of the filesystem clock leaves it), is found by the Create that
// would take its id: the file is kept and the new task gets the next id.
func TestCreateNeverOverwritesAnUnknownFile(t *testing.T) {
	dir := copyDir(t, "testdata/reference")
	s := openStore(t, dir)
	_, err := s.List(ctx) // warm
	require.NoError(t, err)
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	hand := `{"id": 5, "subject": "made by hand", "status": "pending"}`
	writeFile(t, dir, "task_5.json", hand)
	require.NoError(t, os.Chtimes(dir, fi.ModTime(), fi.ModTime()))

	n, err := s.Create(ctx, tg.NewTask{Subject: "by the store"})
	require.NoError(t, err)
	assert.Equal(t, tg.ID(6), n.ID)
	data, err := os.ReadFile(filepath.Join(dir, "task_5.json"))
	require.NoError(t, err)
	assert.Equal(t, hand, string(data), "the file made by hand is not overwritten")
	got, err := s.Get(ctx, 5)
	require.NoError(t, err)
	assert.Equal(t, "made by hand", got.Subject)
}

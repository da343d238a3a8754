//go:build linux

package taskgraph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/internal/changelog"
)

// The recovery after a restart, on the cases a random power loss rarely
// stages: records that do not continue the file, a log of another
// directory, a file that a create in flight left empty. The real power
// losses are in powerloss/.

// restartAs makes the next Open see the machine booted as boot.
func restartAs(t *testing.T, boot string) {
	t.Helper()
	real := bootID
	bootID = func() string { return boot }
	t.Cleanup(func() { bootID = real })
}

func openGC(t *testing.T, dir string) *FileStore {
	t.Helper()
	s, err := Open(dir, WithClock(fixedClock), WithGroupCommit())
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// appendLog appends lines to dir's change log as a writer would.
func appendToLog(t *testing.T, dir string, rec []byte) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, logFileName), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.Write(rec)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// TestReplayOnlyContinuesTheFile: after a restart a record is applied only
// over the version it continues, or over a file the power loss damaged; a
// forged record does not turn a healthy task into something else.
func TestReplayOnlyContinuesTheFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	restartAs(t, "boot-1")
	s := openGC(t, dir)
	a, err := s.Create(ctx, NewTask{Subject: "healthy"})
	require.NoError(t, err)
	b, err := s.Create(ctx, NewTask{Subject: "damaged"})
	require.NoError(t, err)
	require.NoError(t, s.acquire(ctx, true))
	release := s.endOp
	require.NoError(t, s.checkpointNow())
	require.NoError(t, release())
	b, err = s.Update(ctx, b.ID, Patch{Description: ptr("acknowledged")})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	forged := a
	forged.Status, forged.Rev = Completed, 99
	data, err := encodeTask(&forged)
	require.NoError(t, err)
	var rec []byte
	rec = changelog.AppendIntent(rec, 1, []int64{int64(a.ID)})
	rec = changelog.AppendPut(rec, int64(a.ID), stamp{}, changelog.VersionOf(stamp{Ino: 1}, []byte("another file")), []byte(strings.ReplaceAll(string(data), "\n", "")))
	rec = changelog.AppendMtime(rec, 1)
	appendToLog(t, dir, rec)
	// The power loss kept the rename of b's last write and lost its data.
	bfile := filepath.Join(dir, taskFileName(b.ID))
	fi, err := os.Stat(bfile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bfile, make([]byte, fi.Size()), 0o644))

	restartAs(t, "boot-2")
	after := openGC(t, dir)
	got, err := after.Get(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, a, got, "a record that does not continue the file is not replayed")
	got, err = after.Get(ctx, b.ID)
	require.NoError(t, err)
	assert.Equal(t, b, got, "a zero-filled file is restored from the records that chain to it")
	problems, err := Check(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// TestLogOfAnotherDirectoryIsSetAside: a directory copied with its log
// (another inode, another birth time) never replays that log's records: in
// another boot the log is set aside and reported, the files win; in the
// same boot the copy checkpoints as itself before its first write.
func TestLogOfAnotherDirectoryIsSetAside(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	restartAs(t, "boot-1")
	s := openGC(t, src)
	task, err := s.Create(ctx, NewTask{Subject: "copied"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	// A record after the checkpoint that the copy's files do not have.
	later := task
	later.Description, later.Rev = "only in the log", 2
	data, err := encodeTask(&later)
	require.NoError(t, err)
	// It continues the file as it is: only the set-aside keeps it from
	// being replayed in the copy.
	appendToLog(t, src, changelog.AppendMtime(changelog.AppendPut(changelog.AppendIntent(nil, 1, []int64{1}), 1, stamp{}, versionOnDisk(t, src, task.ID), []byte(strings.ReplaceAll(string(data), "\n", ""))), 1))

	t.Run("another boot", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "copy")
		require.NoError(t, exec.Command("cp", "-a", src, dst).Run())
		restartAs(t, "boot-2")
		c := openGC(t, dst)
		got, err := c.Get(ctx, task.ID)
		require.NoError(t, err)
		assert.Equal(t, task, got, "the files win")
		problems, err := Check(ctx, dst)
		require.NoError(t, err)
		require.Len(t, problems, 1)
		assert.Equal(t, ProblemSetAside, problems[0].Kind)
		_, err = c.Update(ctx, task.ID, Patch{Description: ptr("goes on")})
		require.NoError(t, err)
	})
	t.Run("same boot", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "copy")
		require.NoError(t, exec.Command("cp", "-a", src, dst).Run())
		c := openGC(t, dst)
		_, err := c.Update(ctx, task.ID, Patch{Description: ptr("in the copy")})
		require.NoError(t, err)
		log, err := os.ReadFile(filepath.Join(dst, logFileName))
		require.NoError(t, err)
		_, ck, ok, err := changelog.LastCheckpoint(bytes.NewReader(log), int64(len(log)))
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, c.dirID, ck.Dir, "the copy checkpointed as itself before its write")
		assert.NotEqual(t, s.dirID, c.dirID)
	})
}

// TestEmptyFileAfterPowerLossIsMovedAside: a file that a create in flight
// left empty or zero-filled, which no record explains, is moved aside by
// the recovery: reads and deletes go on, and Check says where it went.
func TestEmptyFileAfterPowerLossIsMovedAside(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	restartAs(t, "boot-1")
	s := openGC(t, dir)
	keep, err := s.Create(ctx, NewTask{Subject: "acknowledged"})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_7.json"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "task_8.json"), make([]byte, 300), 0o644))

	restartAs(t, "boot-2")
	after := openGC(t, dir)
	all, err := after.List(ctx)
	require.NoError(t, err)
	assert.Equal(t, []Task{keep}, all)
	assert.NoFileExists(t, filepath.Join(dir, "task_7.json"))
	assert.NoFileExists(t, filepath.Join(dir, "task_8.json"))
	problems, err := Check(ctx, dir)
	require.NoError(t, err)
	require.Len(t, problems, 2)
	for i, name := range []string{"task_7.json", "task_8.json"} {
		assert.Equal(t, ProblemLost, problems[i].Kind)
		assert.Contains(t, problems[i].Path, filepath.Join(lostDirName, name))
	}
	require.NoError(t, after.Delete(ctx, keep.ID))
}

// TestFirstWriteAfterCheckpointSyncsItsFile: a write that replaces a
// version only its file holds (its record is before the last checkpoint)
// fsyncs the new file before the rename; one that replaces a version whose
// record is after it and durable does not.
func TestFirstWriteAfterCheckpointSyncsItsFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openGC(t, dir)
	task, err := s.Create(ctx, NewTask{Subject: "x"})
	require.NoError(t, err)
	assert.Zero(t, s.Stats().FileSyncs, "a create replaces nothing")
	_, err = s.Update(ctx, task.ID, Patch{Description: ptr("1")})
	require.NoError(t, err)
	assert.Zero(t, s.Stats().FileSyncs, "the create's record is durable: a replay restores it")
	require.NoError(t, s.acquire(ctx, true))
	release := s.endOp
	require.NoError(t, s.checkpointNow())
	require.NoError(t, release())
	_, err = s.Update(ctx, task.ID, Patch{Description: ptr("2")})
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Stats().FileSyncs, "after a checkpoint the file is the only durable copy")
	_, err = s.Update(ctx, task.ID, Patch{Description: ptr("3")})
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Stats().FileSyncs)

	// Another store learns the records from the log, and the sync file
	// says they are durable.
	other := openGC(t, dir)
	_, err = other.Update(ctx, task.ID, Patch{Description: ptr("4")})
	require.NoError(t, err)
	assert.Zero(t, other.Stats().FileSyncs, "the records read at open are durable")
	_, err = s.Update(ctx, task.ID, Patch{Description: ptr("5")})
	require.NoError(t, err)
	assert.Equal(t, int64(1), s.Stats().FileSyncs, "the other store's record, durable by its sync")
}

// TestHardLinkedSidecars: a change log or sync file that is a hard link to
// another file is never written: the log refuses writes until removed,
// the sync file is not shared, and Check names both.
func TestHardLinkedSidecars(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{logFileName, syncFileName} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			outside := filepath.Join(t.TempDir(), "precious")
			require.NoError(t, os.WriteFile(outside, []byte("precious\n"), 0o644))
			require.NoError(t, os.Link(outside, filepath.Join(dir, name)))
			s := openGC(t, dir)
			_, err := s.Create(ctx, NewTask{Subject: "x"})
			if name == logFileName {
				require.ErrorIs(t, err, ErrCorrupt)
				assert.Contains(t, err.Error(), "hard links")
			} else {
				require.NoError(t, err)
			}
			data, err := os.ReadFile(outside)
			require.NoError(t, err)
			assert.Equal(t, "precious\n", string(data), "nothing written through the link")
			problems, err := Check(ctx, dir)
			require.NoError(t, err)
			require.Len(t, problems, 1, fmt.Sprint(problems))
			assert.Equal(t, ProblemCorrupt, problems[0].Kind)
			assert.Contains(t, problems[0].Message, "2 hard links")
		})
	}
}

// TestReplayAcrossAGap: a writer killed between its rename and its record
// leaves a gap in a task's records; the acknowledged writes after it are
// still replayed over a file the power loss damaged.
func TestReplayAcrossAGap(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	restartAs(t, "boot-1")
	s := openGC(t, dir)
	task, err := s.Create(ctx, NewTask{Subject: "x"})
	require.NoError(t, err)
	require.NoError(t, s.acquire(ctx, true))
	release := s.endOp
	require.NoError(t, s.checkpointNow())
	require.NoError(t, release())
	v2, err := s.Update(ctx, task.ID, Patch{Description: ptr("v2")})
	require.NoError(t, err)
	// The dead writer: its announcement, its file renamed in, no record.
	appendToLog(t, dir, changelog.AppendIntent(nil, s.dirMtime, []int64{int64(task.ID)}))
	v3 := v2
	v3.Description, v3.Rev = "v3 by a writer that died", v2.Rev+1
	data, err := encodeTask(&v3)
	require.NoError(t, err)
	tmp := filepath.Join(dir, "tmpx")
	require.NoError(t, os.WriteFile(tmp, data, 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, taskFileName(task.ID))))
	_, err = s.Update(ctx, task.ID, Patch{Description: ptr("v4")})
	require.NoError(t, err)
	v5, err := s.Update(ctx, task.ID, Patch{Description: ptr("v5 acknowledged")})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	// The power loss kept v5's unsynced rename and lost its data.
	f := filepath.Join(dir, taskFileName(task.ID))
	fi, err := os.Stat(f)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(f, make([]byte, fi.Size()), 0o644))

	restartAs(t, "boot-2")
	got, err := openGC(t, dir).Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, v5, got)
}

// TestLogCutShortInPlace: a change log truncated in place by something
// other than taskgraph is a new log: nothing known of the old one (how far
// it was durable, which versions its records restore) is trusted, so the
// next write fsyncs its file and syncs its record.
func TestLogCutShortInPlace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openGC(t, dir)
	task, err := s.Create(ctx, NewTask{Subject: "x"})
	require.NoError(t, err)
	for range 5 {
		_, err = s.Update(ctx, task.ID, Patch{Description: ptr("padding padding padding padding padding padding")})
		require.NoError(t, err)
	}
	before := s.Stats()
	require.NoError(t, os.Truncate(filepath.Join(dir, logFileName), 0))
	_, err = s.Update(ctx, task.ID, Patch{Description: ptr("after the cut")})
	require.NoError(t, err)
	after := s.Stats()
	assert.Greater(t, after.FileSyncs, before.FileSyncs, "the file is the only durable copy")
	assert.Greater(t, after.Syncs+after.Checkpoints, before.Syncs+before.Checkpoints, "the new record is made durable")
}

// versionOnDisk names the version of task id's file in dir as a record of
// a write that replaced it would (changelog.VersionOf).
func versionOnDisk(t *testing.T, dir string, id ID) string {
	t.Helper()
	path := filepath.Join(dir, taskFileName(id))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	return changelog.VersionOf(stampOf(fi), data)
}

// TestReplayLeavesWhatOthersWrote: after a restart the files that git or a
// person wrote since the store's records win — a file rewritten without
// the rev (as git's clean filter commits it), the very bytes a store once
// wrote checked out again as a new file, a file deleted by hand, and a
// file of a task created since the last checkpoint removed by a checkout —
// while a file that still holds a version the records replaced is brought
// up to date. (Before records named the version they replaced, the replay
// matched revs, and rewrote all but the last of these: issue 38.)
func TestReplayLeavesWhatOthersWrote(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	restartAs(t, "boot-1")
	s := openGC(t, dir)
	mk := func(subject string) Task {
		task, err := s.Create(ctx, NewTask{Subject: subject})
		require.NoError(t, err)
		return task
	}
	pulled, restored, handDeleted, branch, behind := mk("pulled"), mk("restored"), mk("deleted by hand"), mk("branch"), mk("behind")
	require.NoError(t, s.acquire(ctx, true))
	release := s.endOp
	require.NoError(t, s.checkpointNow())
	require.NoError(t, release())
	created := mk("created since the checkpoint")
	file := func(task Task) string { return filepath.Join(dir, taskFileName(task.ID)) }
	read := func(task Task) []byte {
		data, err := os.ReadFile(file(task))
		require.NoError(t, err)
		return data
	}
	// A hard link keeps the version of "behind" that the update replaces.
	oldBehind := filepath.Join(t.TempDir(), "behind")
	require.NoError(t, os.Link(file(behind), oldBehind))
	oldRestored := read(restored)
	for _, task := range []Task{pulled, restored, handDeleted, branch, behind, created} {
		_, err := s.Update(ctx, task.ID, Patch{Description: ptr("written by the store")})
		require.NoError(t, err)
	}
	want, err := s.Get(ctx, behind.ID)
	require.NoError(t, err)
	require.NoError(t, s.Close())

	// A pull: the other clone's completion, committed without the rev.
	gitVersion := pulled
	gitVersion.Status, gitVersion.Owner, gitVersion.Result, gitVersion.Rev = Completed, "other", "done there", 0
	data, err := encodeTask(&gitVersion)
	require.NoError(t, err)
	replaceAsGit(t, file(pulled), data)
	// A checkout of the bytes the store wrote first (a clone without the
	// clean filter commits the rev): a new file, at another time.
	time.Sleep(10 * time.Millisecond) // past the filesystem's clock tick
	replaceAsGit(t, file(restored), oldRestored)
	require.NoError(t, os.Remove(file(handDeleted)))
	require.NoError(t, os.Remove(file(branch)))
	require.NoError(t, os.Remove(file(created)))
	before := map[string][]byte{}
	for _, task := range []Task{pulled, restored} {
		before[file(task)] = read(task)
	}
	// The power loss undid the last rename of "behind": its inode, its
	// bytes, its mtime are the version before.
	require.NoError(t, os.Rename(oldBehind, file(behind)))

	restartAs(t, "boot-2")
	after := openGC(t, dir)
	got, err := after.Get(ctx, behind.ID)
	require.NoError(t, err)
	assert.Equal(t, want, got, "the version a record replaced is brought up to date")
	for path, data := range before {
		assert.Equal(t, string(data), string(readPath(t, path)), "%s: what git wrote wins", filepath.Base(path))
	}
	for _, task := range []Task{handDeleted, branch, created} {
		_, err := os.Stat(file(task))
		assert.True(t, errors.Is(err, fs.ErrNotExist), "%s stays deleted", task.Subject)
	}
	problems, err := Check(ctx, dir)
	require.NoError(t, err)
	assert.Empty(t, problems)
}

// replaceAsGit replaces the file at path with data as git does: a new
// file (a new inode, the time now) in its place.
func replaceAsGit(t *testing.T, path string, data []byte) {
	t.Helper()
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

func readPath(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return data
}

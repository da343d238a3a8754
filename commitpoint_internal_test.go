//go:build linux

package taskgraph

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Every write is announced before its commit point, the directory's
// fsync, and no one — a reader, a watcher — sees it before that fsync
// returned. These tests fail the steps of that with a file system that
// counts and fails them.

// dirSyncFS counts the fsyncs of the directory dirf, and fails them
// (failDir) or the change log's appends (appendFails: how many, from the
// first; -1 all) with the errors a full or failing disk gives.
type dirSyncFS struct {
	fileSystem
	dirf        *os.File
	syncs       *atomic.Int64
	failDir     bool
	appendFails *atomic.Int64
}

func (d dirSyncFS) Sync(f *os.File) error {
	if f == d.dirf {
		d.syncs.Add(1)
		if d.failDir {
			return &os.PathError{Op: "sync", Path: f.Name(), Err: syscall.EIO}
		}
	}
	return d.fileSystem.Sync(f)
}

func (d dirSyncFS) Append(f *os.File, data []byte) error {
	if d.appendFails != nil && d.appendFails.Load() != 0 {
		d.appendFails.Add(-1)
		return &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return d.fileSystem.Append(f, data)
}

func countingFS(s *FileStore) dirSyncFS {
	return dirSyncFS{fileSystem: s.fs, dirf: s.dirf, syncs: &atomic.Int64{}}
}

// SetLimit and SetLivenessDefault write the meta file alone: announced,
// and durable (the directory fsynced) before they return, as any write.
func TestMetaWritesCommitLikeAnyWrite(t *testing.T) {
	ctx := context.Background()
	for name, set := range map[string]func(s *FileStore, n int) error{
		"SetLimit": func(s *FileStore, n int) error { return s.SetLimit(ctx, "gpu", n) },
		"SetLivenessDefault": func(s *FileStore, n int) error {
			return s.SetLivenessDefault(ctx, "gpu", LivenessDefault{MaxRuntime: time.Duration(n) * time.Hour})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			_, err := s.Create(ctx, NewTask{Subject: "a"})
			require.NoError(t, err)
			fsys := countingFS(s)
			s.useFS(fsys)
			before, err := os.ReadFile(filepath.Join(dir, logFileName))
			require.NoError(t, err)
			require.NoError(t, set(s, 2))
			assert.EqualValues(t, 1, fsys.syncs.Load(), "the directory fsynced once, at the commit point")
			after, err := os.ReadFile(filepath.Join(dir, logFileName))
			require.NoError(t, err)
			assert.Regexp(t, `^I -?\d+\nM \d+\n$`, string(after[len(before):]), "announced, then recorded")

			// Its directory fsync failing leaves its outcome unknown,
			// once: it is not retried (a second fsync after a failed one
			// proves nothing).
			fsys.failDir, fsys.syncs = true, &atomic.Int64{}
			s.useFS(fsys)
			require.ErrorIs(t, set(s, 3), ErrUnknownOutcome)
			assert.EqualValues(t, 1, fsys.syncs.Load())
		})
	}
}

// A write whose announcement the change log cannot take is refused before
// anything of it is written, and says why; a log that takes it once cut
// short (a full disk that freeing the log's blocks relieves) lets it go on.
func TestUnannouncedWriteIsRefused(t *testing.T) {
	ctx := context.Background()
	for _, del := range []bool{false, true} {
		t.Run(map[bool]string{false: "update", true: "delete"}[del], func(t *testing.T) {
			dir := t.TempDir()
			w := openStore(t, dir)
			a, err := w.Create(ctx, NewTask{Subject: "a"})
			require.NoError(t, err)
			data, err := os.ReadFile(filepath.Join(dir, taskFileName(a.ID)))
			require.NoError(t, err)
			fsys := countingFS(w)
			fsys.appendFails = &atomic.Int64{}
			fsys.appendFails.Store(-1)
			w.useFS(fsys)
			if del {
				err = w.Delete(ctx, a.ID)
			} else {
				_, err = w.Update(ctx, a.ID, Patch{Description: ptr("never written")})
			}
			require.Error(t, err)
			assert.False(t, errors.Is(err, ErrUnknownOutcome), "nothing was written: %v", err)
			assert.ErrorIs(t, err, syscall.ENOSPC)
			assert.Contains(t, err.Error(), "nothing was written")
			after, rerr := os.ReadFile(filepath.Join(dir, taskFileName(a.ID)))
			require.NoError(t, rerr)
			assert.Equal(t, string(data), string(after), "the file as it was")
			assert.Zero(t, fsys.syncs.Load())

			// The first append fails, the log cut short takes it: the
			// write goes on, and another store sees it.
			fsys.appendFails.Store(1)
			if del {
				err = w.Delete(ctx, a.ID)
			} else {
				_, err = w.Update(ctx, a.ID, Patch{Description: ptr("written")})
			}
			require.NoError(t, err)
			got, err := openStore(t, dir).List(ctx)
			require.NoError(t, err)
			if del {
				assert.Empty(t, got)
			} else {
				require.Len(t, got, 1)
				assert.Equal(t, "written", got[0].Description)
			}
		})
	}
}

// blockDirSyncFS holds the first fsync of the directory dirf until
// released.
type blockDirSyncFS struct {
	fileSystem
	dirf             *os.File
	once             *sync.Once
	entered, release chan struct{}
}

func (b blockDirSyncFS) Sync(f *os.File) error {
	if f == b.dirf {
		b.once.Do(func() { close(b.entered); <-b.release })
	}
	return b.fileSystem.Sync(f)
}

// A writer that dies between its rename and its directory fsync (here:
// the fsync fails, which leaves the directory and the log as a kill
// there does) left a version a power loss may undo: a reader fsyncs the
// directory before it tells its watchers of it, by a read of the log's
// records or by a scan.
func TestWatchersHearOnlyDurableWrites(t *testing.T) {
	for _, scan := range []bool{false, true} {
		t.Run(map[bool]string{false: "log", true: "scan"}[scan], func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			dir := t.TempDir()
			w := openStore(t, dir)
			_, err := w.Create(ctx, NewTask{Subject: "a"})
			require.NoError(t, err)
			r := openStore(t, dir)
			_, err = r.List(ctx)
			require.NoError(t, err)
			events, err := r.Watch(ctx)
			require.NoError(t, err)
			b := blockDirSyncFS{fileSystem: r.fs, dirf: r.dirf, once: &sync.Once{}, entered: make(chan struct{}), release: make(chan struct{})}
			r.useFS(b)
			if scan {
				w.log.SetMax(1) // a new log before the announcement: the reader scans
			}
			fsys := countingFS(w)
			fsys.failDir = true
			w.useFS(fsys)
			_, err = w.Update(ctx, 1, Patch{Description: ptr("not durable yet")})
			require.ErrorIs(t, err, ErrUnknownOutcome)

			release := sync.OnceFunc(func() { close(b.release) })
			defer release() // a failure below must not leave the read blocked
			listed := make(chan error, 1)
			go func() { _, err := r.List(ctx); listed <- err }()
			<-b.entered
			deadline := time.After(500 * time.Millisecond)
		wait:
			for {
				select {
				case e := <-events:
					require.NotEqual(t, "not durable yet", e.Task.Description, "a watcher heard of %v before the directory fsync that makes it durable returned", e.Kind)
				case <-deadline:
					break wait
				}
			}
			release()
			require.NoError(t, <-listed)
			for {
				select {
				case e := <-events:
					if e.Task.Description == "not durable yet" {
						return // once durable, told
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the watcher never heard of the write once it was durable")
				}
			}
		})
	}
}

//go:build linux

package taskgraph

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDirSyncAfterLock: under the full protocol a write fsyncs the
// directory after the lock, once; a reader in another store finds, in the
// sync file, that the directory is durable up to what it read and syncs
// nothing; with that record gone (a writer killed before its fsync), the
// reader fsyncs the directory itself before returning what it read.
func TestDirSyncAfterLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := openAhead(t, dir, newFakeClock())
	require.True(t, a.dirSyncAfter, "the full protocol on Linux syncs the directory after the lock")
	task, err := a.Create(ctx, NewTask{Subject: "a"})
	require.NoError(t, err)

	before := a.Stats()
	_, err = a.Update(ctx, task.ID, Patch{Subject: ptr("a, renamed")})
	require.NoError(t, err)
	after := a.Stats()
	assert.Equal(t, before.Writes+1, after.Writes)
	assert.Equal(t, before.DirSyncs+1, after.DirSyncs, "one fsync of the directory after the lock")

	b := openAhead(t, dir, newFakeClock())
	_, err = b.Get(ctx, task.ID) // the scan syncs what it read (syncSeen)
	require.NoError(t, err)
	_, err = a.Update(ctx, task.ID, Patch{Subject: ptr("a, renamed again")})
	require.NoError(t, err)
	got, err := b.Get(ctx, task.ID) // reads a's record: a's fsync covers it
	require.NoError(t, err)
	assert.Equal(t, "a, renamed again", got.Subject)
	assert.Zero(t, b.Stats().DirSyncs, "the sync file says the directory is durable up to what b read")

	_, err = a.Update(ctx, task.ID, Patch{Subject: ptr("a, unsynced")})
	require.NoError(t, err)
	// As if a had been killed between its record and its fsync.
	require.NoError(t, os.Truncate(filepath.Join(dir, syncFileName), dirSyncRecordAt))
	got, err = b.Get(ctx, task.ID)
	require.NoError(t, err)
	assert.Equal(t, "a, unsynced", got.Subject)
	assert.EqualValues(t, 1, b.Stats().DirSyncs, "nothing says the directory is durable up to what b read: b syncs it")
}

// TestDirSyncShared: writers of one store that arrive while the
// directory's fsync is in flight share the next one.
func TestDirSyncShared(t *testing.T) {
	ctx := context.Background()
	s := openAhead(t, t.TempDir(), newFakeClock())
	const writers, each = 8, 25
	ids := make([]ID, writers)
	for i := range ids {
		task, err := s.Create(ctx, NewTask{Subject: fmt.Sprint("task ", i)})
		require.NoError(t, err)
		ids[i] = task.ID
	}
	before := s.Stats()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			for k := range each {
				_, err := s.Update(ctx, id, Patch{Subject: ptr(fmt.Sprint("edit ", k))})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	after := s.Stats()
	writes, syncs := after.Writes-before.Writes, after.DirSyncs-before.DirSyncs
	t.Logf("%d writes, %d fsyncs of the directory after the lock", writes, syncs)
	assert.EqualValues(t, writers*each, writes)
	assert.Positive(t, syncs)
	assert.Less(t, syncs, writes, "no fsync of the directory served two writes")
	for i, id := range ids {
		got, err := s.Get(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint("edit ", each-1), got.Subject, "task %d", i)
	}
}

//go:build !windows

package taskgraph

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenSyncsNewDirectories: Open makes the directories it creates
// durable by fsyncing the parent of each; it syncs nothing for one that
// exists, and creates nothing with WithoutCreate.
func TestOpenSyncsNewDirectories(t *testing.T) {
	var synced []string
	spy := func(c *config) {
		c.syncDir = func(p string) error {
			synced = append(synced, p)
			return syncPath(p)
		}
	}
	base := t.TempDir()
	dir := filepath.Join(base, "a", "b", ".tasks")
	_, err := Open(dir, WithoutCreate(), spy)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), dir)
	assert.NoDirExists(t, filepath.Join(base, "a"), "WithoutCreate creates nothing")
	assert.Empty(t, synced)

	s, err := Open(dir, spy)
	require.NoError(t, err)
	s.Close()
	assert.Equal(t, []string{filepath.Join(base, "a", "b"), filepath.Join(base, "a"), base}, synced, "the parent of each new directory")
	synced = nil
	s, err = Open(dir, spy)
	require.NoError(t, err)
	s.Close()
	assert.Empty(t, synced, "an existing directory needs no sync")
	s, err = Open(dir, WithoutCreate(), spy)
	require.NoError(t, err, "WithoutCreate opens a directory that exists")
	s.Close()

	file := filepath.Join(base, "file")
	writeFiles(t, base, map[string]string{"file": ""})
	_, err = Open(file)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "not a directory")
	_, err = Open(file, WithoutCreate())
	assert.False(t, errors.Is(err, ErrNotFound))
}

package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCreatedPerm: the permissions a new file gets, as the kernel gives
// them.
func TestCreatedPerm(t *testing.T) {
	for _, perm := range []os.FileMode{0o644, 0o666, 0o600, 0o755} {
		path := filepath.Join(t.TempDir(), "f")
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, perm)
		require.NoError(t, err)
		fi, err := f.Stat()
		require.NoError(t, err)
		require.NoError(t, f.Close())
		assert.Equal(t, fi.Mode().Perm(), CreatedPerm(perm), "%o", perm)
	}
}

// TestReusable: a file may be overwritten in place only if nothing else
// reaches it: no other open file description, no other name, the
// permissions asked for.
func TestReusable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spare")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	require.NoError(t, os.Chmod(path, 0o640))
	reusable := func(perm os.FileMode) bool {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		require.NoError(t, err)
		defer f.Close()
		_, ok := Reusable(f, perm)
		return ok
	}
	assert.True(t, reusable(0o640))
	assert.False(t, reusable(0o644), "other permissions")
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	size, ok := Reusable(f, 0o640)
	require.NoError(t, f.Close())
	assert.True(t, ok)
	assert.Equal(t, int64(len("old")), size, "and its size")

	reader, err := os.Open(path)
	require.NoError(t, err)
	assert.False(t, reusable(0o640), "open by a reader")
	require.NoError(t, reader.Close())
	assert.True(t, reusable(0o640), "once the reader is done")

	require.NoError(t, os.Link(path, filepath.Join(dir, "other name")))
	assert.False(t, reusable(0o640), "a second name")
	require.NoError(t, os.Remove(filepath.Join(dir, "other name")))
	assert.True(t, reusable(0o640))
}

// movedDirs makes the directories from and to, lets setup fill them, opens
// them, and then moves them away, putting empty directories at their paths:
// what goes through the handles reaches the moved directories, whose paths
// it returns as from and to, and what goes through the paths reaches the
// empty ones (emptyTo is the second).
func movedDirs(t *testing.T, setup func(from, to string)) (fromDir, toDir *os.File, from, to, emptyTo string) {
	t.Helper()
	base := t.TempDir()
	from, to = filepath.Join(base, "from"), filepath.Join(base, "to")
	require.NoError(t, os.Mkdir(from, 0o755))
	require.NoError(t, os.Mkdir(to, 0o755))
	setup(from, to)
	fromDir, err := os.Open(from)
	require.NoError(t, err)
	t.Cleanup(func() { fromDir.Close() })
	toDir, err = os.Open(to)
	require.NoError(t, err)
	t.Cleanup(func() { toDir.Close() })
	require.NoError(t, os.Rename(from, from+".moved"))
	require.NoError(t, os.Rename(to, to+".moved"))
	require.NoError(t, os.Mkdir(from, 0o755))
	require.NoError(t, os.Mkdir(to, 0o755))
	return fromDir, toDir, from + ".moved", to + ".moved", to
}

// TestLinkIn: LinkIn gives a file a second name through the directories'
// handles — even once the directories' paths name others — and links a
// symlink itself, never its target.
func TestLinkIn(t *testing.T) {
	fromDir, toDir, from, to, emptyTo := movedDirs(t, func(from, _ string) {
		require.NoError(t, os.WriteFile(filepath.Join(from, "file"), []byte("content"), 0o644))
		require.NoError(t, os.Symlink(filepath.Join(from, "file"), filepath.Join(from, "symlink")))
	})
	require.NoError(t, LinkIn(fromDir, "file", toDir, "second"))
	a, err := os.Stat(filepath.Join(from, "file"))
	require.NoError(t, err)
	b, err := os.Stat(filepath.Join(to, "second"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(a, b), "the same file under a second name")
	assert.Equal(t, uint64(2), Links(b))

	require.NoError(t, LinkIn(fromDir, "symlink", toDir, "link of symlink"))
	fi, err := os.Lstat(filepath.Join(to, "link of symlink"))
	require.NoError(t, err)
	assert.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the symlink itself, not the file it points to")

	assert.ErrorIs(t, LinkIn(fromDir, "missing", toDir, "x"), os.ErrNotExist)
	entries, err := os.ReadDir(emptyTo)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing went through the paths")
}

// TestRenameIn: RenameIn moves a file between directories through their
// handles, replacing the target, even once the paths name other
// directories; a missing file is an error that matches os.ErrNotExist.
func TestRenameIn(t *testing.T) {
	fromDir, toDir, from, to, emptyTo := movedDirs(t, func(from, to string) {
		require.NoError(t, os.WriteFile(filepath.Join(from, "new"), []byte("new"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(to, "target"), []byte("old"), 0o644))
	})
	require.NoError(t, RenameIn(fromDir, "new", toDir, "target"))
	got, err := os.ReadFile(filepath.Join(to, "target"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(got), "the target replaced")
	_, err = os.Stat(filepath.Join(from, "new"))
	assert.ErrorIs(t, err, os.ErrNotExist, "and the old name gone")
	assert.ErrorIs(t, RenameIn(fromDir, "new", toDir, "target"), os.ErrNotExist)
	entries, err := os.ReadDir(emptyTo)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing went through the paths")
}

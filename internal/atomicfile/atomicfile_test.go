package atomicfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWritesReplaceWholeFiles(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	for _, write := range []func(*os.Root, string, []byte, os.FileMode) error{WriteDurable, WriteNoSync} {
		require.NoError(t, write(root, "f", []byte("old"), 0o644))
		require.NoError(t, write(root, "f", []byte("new"), 0o644))
		data, err := os.ReadFile(filepath.Join(dir, "f"))
		require.NoError(t, err)
		require.Equal(t, "new", string(data))
	}
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, names, 1, "no temporary file is left behind")
	d, err := root.Open(".")
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, SyncDir(d))
}

func TestFileIDChangesOnReplace(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	require.NoError(t, WriteNoSync(root, "f", []byte("a"), 0o644))
	fi1, err := root.Lstat("f")
	require.NoError(t, err)
	require.NoError(t, WriteNoSync(root, "f", []byte("a"), 0o644))
	fi2, err := root.Lstat("f")
	require.NoError(t, err)
	require.NotEqual(t, FileID(fi1), FileID(fi2))
}

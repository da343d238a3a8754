//go:build !windows

package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpenNoFollowRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "target"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink("target", filepath.Join(dir, "link")))
	_, err := OpenNoFollow(filepath.Join(dir, "link"))
	require.Error(t, err)
	f, err := OpenNoFollow(filepath.Join(dir, "target"))
	require.NoError(t, err)
	f.Close()
	require.True(t, strings.HasPrefix(TempPrefix("task_1.json"), "."))
}

func TestOpenInGoesThroughTheHandle(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "a")
	require.NoError(t, os.Mkdir(dir, 0o755))
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	d, err := root.Open(".")
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink("f", filepath.Join(dir, "link")))
	require.NoError(t, os.Symlink("missing", filepath.Join(dir, "dangling")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))

	_, err = OpenIn(d, root, "link", os.O_RDONLY, 0)
	require.Error(t, err, "a symlink is never followed")
	_, err = OpenIn(d, root, "dangling", os.O_RDWR|os.O_CREATE, 0o644)
	require.Error(t, err, "nor created through")
	assert.NoFileExists(t, filepath.Join(dir, "missing"))
	f, err := OpenIn(d, root, "fifo", os.O_RDONLY, 0) // returns at once
	require.NoError(t, err)
	fi, err := f.Stat()
	require.NoError(t, err)
	assert.False(t, fi.Mode().IsRegular())
	f.Close()

	require.NoError(t, os.Rename(dir, filepath.Join(parent, "b")))
	f, err = OpenIn(d, root, "new", os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	f.Close()
	assert.FileExists(t, filepath.Join(parent, "b", "new"), "the handle follows the renamed directory")
	assert.True(t, IsTempOf(TempName("task_1.json"), "task_1.json"))
	assert.False(t, IsTempOf(".task_1.json.swp", "task_1.json"))
	assert.False(t, IsTempOf(".task_1.json", "task_1.json"))
}

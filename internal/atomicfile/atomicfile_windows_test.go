package atomicfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"
)

// holdUnshared opens path sharing nothing, as a scanner may, and closes
// it after d.
func holdUnshared(t *testing.T, path string, d time.Duration) {
	t.Helper()
	p, err := syscall.UTF16PtrFromString(path)
	require.NoError(t, err)
	h, err := syscall.CreateFile(p, syscall.GENERIC_READ, 0, nil, syscall.OPEN_EXISTING, syscall.FILE_ATTRIBUTE_NORMAL, 0)
	require.NoError(t, err)
	time.AfterFunc(d, func() { syscall.CloseHandle(h) })
}

// A replacement waits out a sharing violation that ends within retryFor,
// and reports one that does not.
func TestReplaceRetriesSharingViolations(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	defer root.Close()
	require.NoError(t, WriteDurable(root, "f", []byte("old"), 0o644))

	holdUnshared(t, filepath.Join(dir, "f"), 300*time.Millisecond)
	require.NoError(t, WriteDurable(root, "f", []byte("new"), 0o644), "retried until the holder let go")
	data, err := os.ReadFile(filepath.Join(dir, "f"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(data))

	defer func(old time.Duration) { retryFor = old }(retryFor)
	retryFor = 200 * time.Millisecond
	holdUnshared(t, filepath.Join(dir, "f"), time.Second)
	err = WriteDurable(root, "f", []byte("newer"), 0o644)
	assert.True(t, transient(err), "a holder that outlasts retryFor: %v", err)
	time.Sleep(time.Second) // the holder lets go before TempDir's cleanup
	data, err = os.ReadFile(filepath.Join(dir, "f"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(data), "not replaced")
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, names, 1, "the temporary file is removed")
}

func TestTransient(t *testing.T) {
	assert.True(t, transient(&os.PathError{Op: "rename", Err: windows.ERROR_SHARING_VIOLATION}))
	assert.False(t, transient(os.ErrNotExist))
	assert.False(t, transient(&os.PathError{Op: "open", Err: windows.ERROR_FILE_NOT_FOUND}))
}

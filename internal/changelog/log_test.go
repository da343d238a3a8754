//go:build unix

package changelog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// The change log's invariants, on a real directory and without a store:
// two logs of the same directory stand for two stores.

// dirFS is the FS of a real directory, as a store's is, without faults.
type dirFS struct {
	atomicfile.FS
	root *os.Root
	dirf *os.File
}

func (dirFS) Append(f *os.File, data []byte) error { _, err := f.Write(data); return err }
func (d dirFS) OpenRead(name string) (*os.File, error) {
	return atomicfile.OpenIn(d.dirf, d.root, name, os.O_RDONLY, 0)
}

func logDir(t *testing.T) (dir string, newLog func() *Log) {
	t.Helper()
	dir = t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	dirf, err := root.Open(".")
	require.NoError(t, err)
	t.Cleanup(func() { dirf.Close(); root.Close() })
	return dir, func() *Log {
		l := New(dirFS{atomicfile.Root(root), root, dirf}, root, dir, 1<<20)
		t.Cleanup(func() { l.Close() })
		return &l
	}
}

func TestChangeLogNewsOfAnotherStore(t *testing.T) {
	_, newLog := logDir(t)
	writer, reader := newLog(), newLog()
	news, _, err := reader.News()
	require.NoError(t, err)
	assert.Equal(t, Same, news, "no log, and none seen: nothing to read")

	require.NoError(t, writer.Prepare())
	reader.SkipToEnd()
	rec := AppendMtime(AppendDelete(nil, 7), 42)
	require.NoError(t, writer.Append(rec))
	news, size, err := reader.News()
	require.NoError(t, err)
	require.Equal(t, Grown, news)
	got, err := reader.ReadNew(size)
	require.NoError(t, err)
	assert.Equal(t, string(rec), string(got))
	news, size, err = reader.News()
	require.NoError(t, err)
	assert.Equal(t, Same, news, "read to its end")
	reader.CaughtUp(size)
	assert.True(t, reader.checked)
}

func TestChangeLogLeavesALineNotYetWhole(t *testing.T) {
	dir, newLog := logDir(t)
	writer, reader := newLog(), newLog()
	require.NoError(t, writer.Prepare())
	reader.SkipToEnd()
	// A writer killed in mid-append leaves the start of a line.
	f, err := os.OpenFile(filepath.Join(dir, filenames.Log), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("D 7\nP 8 1 2 3 {\"subj")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, size, err := reader.News()
	require.NoError(t, err)
	got, err := reader.ReadNew(size)
	require.NoError(t, err)
	assert.Equal(t, "D 7\n", string(got), "only whole lines are read")
	unfinished, err := reader.EndsUnfinished()
	require.NoError(t, err)
	assert.True(t, unfinished, "a log that does not end in an M line ends in an unfinished write")

	// The next append ends the torn line first, so its own stays whole.
	require.NoError(t, reader.Open())
	require.NoError(t, reader.Append(AppendMtime(nil, 9)))
	data, err := os.ReadFile(filepath.Join(dir, filenames.Log))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(data), "{\"subj\nM 9\n"), "got %q", data)
	unfinished, err = reader.EndsUnfinished()
	require.NoError(t, err)
	assert.False(t, unfinished, "a log that ends in an M line ends in a finished write")

	// A scan takes a log as read to its last whole line.
	third := newLog()
	third.SkipToEnd()
	assert.Equal(t, int64(len(data)), third.off)
}

func TestChangeLogLostWhenReplacedCutOrRemoved(t *testing.T) {
	dir, newLog := logDir(t)
	path := filepath.Join(dir, filenames.Log)
	for name, lose := range map[string]func(w *Log) error{
		"replaced": func(w *Log) error { return w.Replace() },
		"removed":  func(w *Log) error { w.Remove(); return nil },
		"cut":      func(*Log) error { return os.Truncate(path, 1) },
		"something else in its place": func(w *Log) error {
			w.Remove()
			return os.Mkdir(path, 0o755)
		},
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(path)
			writer, reader := newLog(), newLog()
			require.NoError(t, writer.Prepare())
			require.NoError(t, writer.Append(AppendMtime(nil, 1)))
			reader.SkipToEnd()
			require.NoError(t, lose(writer))
			news, _, err := reader.News()
			require.NoError(t, err)
			assert.Equal(t, Lost, news, "records may have been lost: the reader rescans")
		})
	}
}

func TestChangeLogRefusesWhatIsNotItsOwnFile(t *testing.T) {
	dir, newLog := logDir(t)
	path := filepath.Join(dir, filenames.Log)
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("precious\n"), 0o644))
	for name, plant := range map[string]func() error{
		"symlink":   func() error { return os.Symlink(other, path) },
		"FIFO":      func() error { return syscall.Mkfifo(path, 0o644) },
		"directory": func() error { return os.Mkdir(path, 0o755) },
		"hard link": func() error { return os.Link(other, path) },
	} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, os.RemoveAll(path))
			require.NoError(t, plant())
			err := newLog().Prepare()
			var unusable *UnusableError
			require.True(t, errors.As(err, &unusable), "got %v", err)
			assert.Equal(t, path, unusable.Path)
			data, err := os.ReadFile(other)
			require.NoError(t, err)
			assert.Equal(t, "precious\n", string(data), "nothing written through it")
		})
	}
}

func TestChangeLogReplacedOnceLarge(t *testing.T) {
	_, newLog := logDir(t)
	l := newLog()
	l.max = 10
	require.NoError(t, l.Prepare())
	require.NoError(t, l.Append(AppendMtime(nil, 123456789)))
	ino := l.ino
	require.NoError(t, l.Prepare())
	assert.NotEqual(t, ino, l.ino, "a new log in its place")
	assert.Zero(t, l.off)
	assert.True(t, l.ReadAll())
}

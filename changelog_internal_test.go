//go:build unix

package taskgraph

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/internal/changelog"
)

// The change log's invariants, on a real directory and without a
// FileStore: two logs of the same directory stand for two stores.

func logDir(t *testing.T) (dir string, newLog func() *changeLog) {
	t.Helper()
	dir = t.TempDir()
	root, err := os.OpenRoot(dir)
	require.NoError(t, err)
	dirf, err := root.Open(".")
	require.NoError(t, err)
	t.Cleanup(func() { dirf.Close(); root.Close() })
	return dir, func() *changeLog {
		l := newChangeLog(newDirFS(root, dirf), root, dir, maxLogSize)
		t.Cleanup(func() { l.close() })
		return &l
	}
}

func TestChangeLogNewsOfAnotherStore(t *testing.T) {
	_, newLog := logDir(t)
	writer, reader := newLog(), newLog()
	news, _, err := reader.news()
	require.NoError(t, err)
	assert.Equal(t, logSame, news, "no log, and none seen: nothing to read")

	require.NoError(t, writer.prepare())
	reader.skipToEnd()
	rec := changelog.AppendMtime(changelog.AppendDelete(nil, 7), 42)
	require.NoError(t, writer.append(rec))
	news, size, err := reader.news()
	require.NoError(t, err)
	require.Equal(t, logGrown, news)
	got, err := reader.readNew(size)
	require.NoError(t, err)
	assert.Equal(t, string(rec), string(got))
	news, size, err = reader.news()
	require.NoError(t, err)
	assert.Equal(t, logSame, news, "read to its end")
	reader.caughtUp(size)
	assert.True(t, reader.checked)
}

func TestChangeLogLeavesALineNotYetWhole(t *testing.T) {
	dir, newLog := logDir(t)
	writer, reader := newLog(), newLog()
	require.NoError(t, writer.prepare())
	reader.skipToEnd()
	// A writer killed in mid-append leaves the start of a line.
	f, err := os.OpenFile(filepath.Join(dir, logFileName), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString("D 7\nP 8 1 2 3 {\"subj")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, size, err := reader.news()
	require.NoError(t, err)
	got, err := reader.readNew(size)
	require.NoError(t, err)
	assert.Equal(t, "D 7\n", string(got), "only whole lines are read")
	unfinished, err := reader.endsUnfinished()
	require.NoError(t, err)
	assert.True(t, unfinished, "a log that does not end in an M line ends in an unfinished write")

	// The next append ends the torn line first, so its own stays whole.
	require.NoError(t, reader.open())
	require.NoError(t, reader.append(changelog.AppendMtime(nil, 9)))
	data, err := os.ReadFile(filepath.Join(dir, logFileName))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(data), "{\"subj\nM 9\n"), "got %q", data)
	unfinished, err = reader.endsUnfinished()
	require.NoError(t, err)
	assert.False(t, unfinished, "a log that ends in an M line ends in a finished write")

	// A scan takes a log as read to its last whole line.
	third := newLog()
	third.skipToEnd()
	assert.Equal(t, int64(len(data)), third.off)
}

func TestChangeLogLostWhenReplacedCutOrRemoved(t *testing.T) {
	dir, newLog := logDir(t)
	path := filepath.Join(dir, logFileName)
	for name, lose := range map[string]func(w *changeLog) error{
		"replaced": func(w *changeLog) error { return w.replace() },
		"removed":  func(w *changeLog) error { w.remove(); return nil },
		"cut":      func(*changeLog) error { return os.Truncate(path, 1) },
		"something else in its place": func(w *changeLog) error {
			w.remove()
			return os.Mkdir(path, 0o755)
		},
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(path)
			writer, reader := newLog(), newLog()
			require.NoError(t, writer.prepare())
			require.NoError(t, writer.append(changelog.AppendMtime(nil, 1)))
			reader.skipToEnd()
			require.NoError(t, lose(writer))
			news, _, err := reader.news()
			require.NoError(t, err)
			assert.Equal(t, logLost, news, "records may have been lost: the reader rescans")
		})
	}
}

func TestChangeLogRefusesWhatIsNotItsOwnFile(t *testing.T) {
	dir, newLog := logDir(t)
	path := filepath.Join(dir, logFileName)
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
			err := newLog().prepare()
			var corrupt *CorruptError
			require.True(t, errors.As(err, &corrupt), "got %v", err)
			assert.Equal(t, path, corrupt.Path)
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
	require.NoError(t, l.prepare())
	require.NoError(t, l.append(changelog.AppendMtime(nil, 123456789)))
	ino := l.ino
	require.NoError(t, l.prepare())
	assert.NotEqual(t, ino, l.ino, "a new log in its place")
	assert.Zero(t, l.off)
	assert.True(t, l.readAll())
}

//go:build unix

package gitrepo

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph/internal/errs"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// withinSeconds runs f and fails the test if it has not returned in a few
// seconds.
func withinSeconds(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s hangs", what)
	}
}

// A .gitignore git would not read — a symbolic link, a directory, a FIFO —
// is an error matching errs.ErrInvalid, from both functions, and is left as it
// is: nothing is written through a link to a file elsewhere, and a FIFO
// does not block.
func TestGitIgnoreNotARegularFile(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "elsewhere")
	require.NoError(t, os.WriteFile(outside, []byte("mine\n"), 0o644))
	for kind, mk := range map[string]func(name string) error{
		"symlink":   func(name string) error { return os.Symlink(outside, name) },
		"directory": func(name string) error { return os.Mkdir(name, 0o755) },
		"fifo":      func(name string) error { return syscall.Mkfifo(name, 0o644) },
	} {
		dir := t.TempDir()
		name := filepath.Join(dir, IgnoreName)
		require.NoError(t, mk(name))
		withinSeconds(t, kind, func() {
			_, err := IgnoreMissing(dir)
			assert.ErrorIs(t, err, errs.ErrInvalid, kind)
			changed, err := WriteIgnore(dir)
			assert.ErrorIs(t, err, errs.ErrInvalid, kind)
			assert.False(t, changed, kind)
			if err != nil {
				assert.Contains(t, err.Error(), name, kind)
			}
		})
	}
	data, err := os.ReadFile(outside)
	require.NoError(t, err)
	assert.Equal(t, "mine\n", string(data), "the link's target is not written")
}

// A later negation un-ignores a line: the line is missing, and the one
// WriteIgnore adds after it makes git ignore the file again. Leading
// spaces and trailing tabs are part of a pattern for git; trailing spaces
// and CRLF line ends are not.
func TestGitIgnoreReadAsGitReadsIt(t *testing.T) {
	needGit(t)
	repo := realDir(t)
	runGit(t, repo, "init", "-q")
	dir := filepath.Join(repo, DirName)
	mkdirs(t, dir)
	name := filepath.Join(dir, IgnoreName)
	for _, f := range []string{filenames.Lock, filenames.Log, filenames.Sync} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), nil, 0o644))
	}
	ignored := func(f string) bool {
		cmd := runGitStatus(t, repo, "check-ignore", "-q", DirName+"/"+f)
		return cmd == 0
	}
	full := func() string {
		var b strings.Builder
		for _, p := range gitIgnorePatterns {
			b.WriteString(p + "\n")
		}
		return b.String()
	}()

	for what, content := range map[string]string{
		"an exact negation": full + "!" + filenames.Lock + "\n",
		"a glob negation":   full + "!.taskgraph.*\n",
		"a leading space":   strings.Replace(full, filenames.Lock+"\n", " "+filenames.Lock+"\n", 1),
		"a trailing tab":    strings.Replace(full, filenames.Lock+"\n", filenames.Lock+"\t\n", 1),
	} {
		require.NoError(t, os.WriteFile(name, []byte(content), 0o644))
		require.False(t, ignored(filenames.Lock), "%s: git does not ignore the lock", what)
		missing, err := IgnoreMissing(dir)
		require.NoError(t, err)
		assert.Contains(t, missing, filenames.Lock, what)
		changed, err := WriteIgnore(dir)
		require.NoError(t, err)
		assert.True(t, changed, what)
		data, err := os.ReadFile(name)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(string(data), content), "%s: what was there is kept", what)
		assert.True(t, ignored(filenames.Lock), "%s: after WriteIgnore git ignores the lock", what)
		missing, err = IgnoreMissing(dir)
		require.NoError(t, err)
		assert.Empty(t, missing, what)
	}

	// Trailing spaces and CRLF: git reads the patterns, so nothing is
	// missing; a line added to a CRLF file ends in CRLF too.
	crlf := strings.ReplaceAll(strings.Replace(full, filenames.Sync+"\n", "", 1), "\n", "  \r\n")
	require.NoError(t, os.WriteFile(name, []byte(crlf), 0o644))
	assert.True(t, ignored(filenames.Lock))
	missing, err := IgnoreMissing(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{filenames.Sync}, missing)
	_, err = WriteIgnore(dir)
	require.NoError(t, err)
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, crlf+gitIgnoreHeader+"\r\n"+filenames.Sync+"\r\n", string(data))
	assert.True(t, ignored(filenames.Sync))
}

// runGitStatus runs git in dir and returns its exit status.
func runGitStatus(t *testing.T, dir string, args ...string) int {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	err := cmd.Run()
	var ee interface{ ExitCode() int }
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	require.NoError(t, err)
	return 0
}

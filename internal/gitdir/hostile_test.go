//go:build unix

package gitdir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// findWithin runs Find(start) and fails the test if it does not return
// within a few seconds: a read that blocks is a hang of every command.
func findWithin(t *testing.T, start string) (Repo, error) {
	t.Helper()
	type result struct {
		r   Repo
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := Find(start)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		return res.r, res.err
	case <-time.After(5 * time.Second):
		t.Fatalf("Find(%s) hangs", start)
		return Repo{}, nil
	}
}

// A .git, commondir or config that is a FIFO is refused, not read: reading
// one blocks until a writer comes, which is forever.
func TestFindFIFOsDoNotHang(t *testing.T) {
	root := t.TempDir()
	j := func(p string) string { return filepath.Join(root, filepath.FromSlash(p)) }
	mkfifo := func(p string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(j(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(j(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	mkfifo("fifo/.git")
	_, err := findWithin(t, j("fifo"))
	if err == nil || !strings.Contains(err.Error(), j("fifo/.git")) || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf(".git FIFO: got %v, want an error naming it as not a regular file", err)
	}

	write(t, root, "cd/wt/.git", "gitdir: ../gd\n")
	mkfifo("cd/gd/commondir")
	_, err = findWithin(t, j("cd/wt"))
	if err == nil || !strings.Contains(err.Error(), j("cd/gd/commondir")) {
		t.Errorf("commondir FIFO: got %v, want an error naming it", err)
	}

	// A config that cannot be read says neither bare nor a worktree, as
	// documented: the .git file's own directory is the top.
	write(t, root, "cf/wt/.git", "gitdir: ../gd\n")
	mkfifo("cf/gd/config")
	r, err := findWithin(t, j("cf/wt"))
	if err != nil || r != (Repo{Top: j("cf/wt"), Main: j("cf/wt")}) {
		t.Errorf("config FIFO: got %+v, %v", r, err)
	}
}

// A huge .git file is not read whole: git's holds one line.
func TestFindHugeGitFileIsBounded(t *testing.T) {
	root := t.TempDir()
	write(t, root, "huge/x", "")
	f, err := os.Create(filepath.Join(root, "huge", ".git"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	start := time.Now()
	_, err = findWithin(t, filepath.Join(root, "huge"))
	if err == nil || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("got %v, want an error saying the file is too large", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v: the file was read", d)
	}
}

// A commondir that names no directory is an error, as git makes it: a
// guess would put the shared graph in a directory that does not exist
// (and init would create it there).
func TestFindCommondirMissing(t *testing.T) {
	root := t.TempDir()
	j := func(p string) string { return filepath.Join(root, filepath.FromSlash(p)) }
	write(t, root, "a/wt/.git", "gitdir: ../gd\n")
	write(t, root, "a/gd/commondir", "../nowhere/.git\n")
	write(t, root, "b/wt/.git", "gitdir: ../gd\n")
	write(t, root, "b/gd/commondir", "../x/.git\n")
	write(t, root, "b/x/.git", "a file, not the common directory\n")
	for _, wt := range []string{"a/wt", "b/wt"} {
		r, err := findWithin(t, j(wt))
		if err == nil || !strings.Contains(err.Error(), "commondir") || !strings.Contains(err.Error(), "$TASKGRAPH_DIR") {
			t.Errorf("%s: got %+v, %v; want an error naming commondir", wt, r, err)
		}
	}
}

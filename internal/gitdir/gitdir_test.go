package gitdir

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// write creates the file name under root with content, and its directory.
func write(t *testing.T, root, name, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Layouts written by hand, as git and tools that imitate it write them:
// relative and absolute links, CRLF line ends, core.worktree, a bare
// repository said in each of git's ways.
func TestFindLayouts(t *testing.T) {
	root := t.TempDir()
	j := func(p string) string { return filepath.Join(root, filepath.FromSlash(p)) }

	// A linked worktree with relative links (worktree.useRelativePaths).
	write(t, root, "main/.git/config", "[core]\n\tbare = false\n")
	write(t, root, "main/.git/worktrees/w/commondir", "../..\r\n")
	write(t, root, "w/.git", "gitdir: ../main/.git/worktrees/w\r\n")
	// A submodule's linked worktree: the common directory is not named
	// .git; its config says where the worktree is.
	write(t, root, "main/.git/modules/lib/config", "[core]\n\tworktree = \"../../../lib\" ; the submodule\n")
	write(t, root, "main/.git/modules/lib/worktrees/lw/commondir", j("main/.git/modules/lib")+"\n")
	write(t, root, "lw/.git", "gitdir: "+filepath.ToSlash(j("main/.git/modules/lib/worktrees/lw"))+"\n")
	// A bare repository whose config says so with a bare key.
	write(t, root, "b.git/config", "[Core]\n  repositoryformatversion = 0\n  BARE\n")
	write(t, root, "b.git/worktrees/bw/commondir", "../..\n")
	write(t, root, "bw/.git", "gitdir: "+j("b.git/worktrees/bw")+"\n")
	// A directory whose .git file names a bare repository, and a
	// submodule (a .git file naming a git directory that is neither).
	write(t, root, "p/.bare/config", "[core]\n\tbare = yes # comment\n")
	write(t, root, "p/.git", "gitdir: ./.bare\n")
	write(t, root, "main/lib/.git", "gitdir: ../.git/modules/lib\n")
	// A worktree of a repository whose main worktree cannot be told.
	write(t, root, "sep/config", "[core]\n\tbare = false\n")
	write(t, root, "sep/worktrees/s/commondir", "../..\n")
	write(t, root, "s/.git", "gitdir: ../sep/worktrees/s\n")

	for _, c := range []struct {
		start string
		want  Repo
	}{
		{"main/x/y", Repo{Top: j("main"), Main: j("main")}},
		{"w", Repo{Top: j("w"), Shared: true, Main: j("main")}},
		{"lw/deep", Repo{Top: j("lw"), Shared: true, Main: j("main/lib")}},
		{"bw", Repo{Top: j("bw"), Shared: true, Main: j("b.git")}},
		{"p/x", Repo{Top: j("p"), Shared: true, Main: j("p/.bare")}},
		{"main/lib", Repo{Top: j("main/lib"), Main: j("main/lib")}},
	} {
		got, err := Find(j(c.start))
		if err != nil || got != c.want {
			t.Errorf("Find(%s) = %+v, %v; want %+v", c.start, got, err, c.want)
		}
	}
	if _, err := Find(j("s")); err == nil {
		t.Error("a worktree whose main worktree cannot be told: no error")
	}
}

// A drive letter in a link file is an absolute path on Windows and a
// missing one elsewhere: an error either way here, never a crash.
func TestFindDriveLetter(t *testing.T) {
	root := t.TempDir()
	write(t, root, "w/.git", "gitdir: Z:/no/such/repo/.git/worktrees/w\n")
	_, err := Find(filepath.Join(root, "w"))
	if err == nil {
		t.Fatal("a link to a missing git directory: no error")
	}
	if runtime.GOOS == "windows" && !filepath.IsAbs(resolve(root, "Z:/x")) {
		t.Errorf("resolve(Z:/x) = %s, not absolute", resolve(root, "Z:/x"))
	}
}

func TestNearest(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a/.tasks/x", "")
	write(t, root, "a/b/.tasks", "a file, not a directory")
	write(t, root, "a/b/c/keep", "")
	from := filepath.Join(root, "a", "b", "c")
	if got, _ := Nearest(from, "", ".tasks"); got != filepath.Join(root, "a", ".tasks") {
		t.Errorf("Nearest = %q", got)
	}
	if got, _ := Nearest(from, filepath.Join(root, "a", "b"), ".tasks"); got != "" {
		t.Errorf("Nearest past stop = %q", got)
	}
	if got, _ := Nearest(filepath.Join(from, "missing", "dirs"), "", ".tasks"); got != filepath.Join(root, "a", ".tasks") {
		t.Errorf("Nearest from a path that does not exist = %q", got)
	}
}

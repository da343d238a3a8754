// Package gitdir reads the layout of a git repository from the files git
// leaves on disk, without running git: the top of the working tree a
// directory is in, and — for a linked worktree (`git worktree add`) or a
// directory whose .git file names a bare repository — the place that
// stands for the whole repository: the main worktree, or the bare
// repository's own directory when there is none.
//
// What it reads: a .git directory marks the top of a main worktree. A .git
// file holds "gitdir: PATH" (relative to the file's directory, or
// absolute); a gitdir that holds a commondir file is a linked worktree's,
// and commondir names the repository's common directory (relative to the
// gitdir, or absolute). The main worktree is the directory holding that
// common directory when it is named .git, or the [core] worktree of its
// config; a common directory whose config says [core] bare = true has no
// main worktree, and stands for it itself. $GIT_DIR and $GIT_COMMON_DIR
// are not consulted.
package gitdir

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Repo is where a directory stands in a git repository.
type Repo struct {
	// Top is the top of the working tree: the nearest directory at or
	// above the start that holds a .git entry. "" outside any repository.
	Top string
	// Shared is set when Top is not where the repository's shared things
	// live: Top is a linked worktree, or its .git file names a bare
	// repository.
	Shared bool
	// Main is where the repository's shared things live: the main
	// worktree, or the bare repository's directory. It is Top unless
	// Shared is set.
	Main string
}

// Find returns the repository start is in. start must be absolute. A .git
// file that cannot be read or followed is an error naming it: git itself
// refuses such a working tree, and guessing would split what should be
// shared.
func Find(start string) (Repo, error) {
	for dir := start; ; {
		fi, err := os.Lstat(filepath.Join(dir, ".git"))
		switch {
		case err == nil && fi.IsDir():
			return Repo{Top: dir, Main: dir}, nil
		case err == nil:
			return fromFile(dir)
		case !absent(err):
			return Repo{}, err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return Repo{}, nil
		}
		dir = parent
	}
}

// fromFile reads the .git file of the working tree top.
func fromFile(top string) (Repo, error) {
	name := filepath.Join(top, ".git")
	data, err := readSmall(name)
	if err != nil {
		return Repo{}, fmt.Errorf("%w; or name the task directory with --dir or $TASKGRAPH_DIR", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok || strings.TrimSpace(rest) == "" {
		return Repo{}, fmt.Errorf(`%s is a file but does not start with "gitdir: PATH", so the repository it belongs to is unknown: fix or remove it (git refuses it too), or name the task directory with --dir or $TASKGRAPH_DIR`, name)
	}
	gitDir := resolve(top, strings.TrimSpace(rest))
	if fi, err := os.Stat(gitDir); err != nil || !fi.IsDir() {
		return Repo{}, fmt.Errorf("%s names the git directory %s, which is not there (a moved repository or worktree: `git worktree repair` fixes the link); or name the task directory with --dir or $TASKGRAPH_DIR", name, gitDir)
	}
	common := gitDir
	cd, err := readSmall(filepath.Join(gitDir, "commondir"))
	switch {
	case err == nil:
		common = resolve(gitDir, strings.TrimSpace(string(cd)))
		if fi, err := os.Stat(common); err != nil || !fi.IsDir() {
			return Repo{}, fmt.Errorf("%s names the common git directory %s, which is not there (git refuses this worktree too): name the task directory with --dir or $TASKGRAPH_DIR", filepath.Join(gitDir, "commondir"), common)
		}
	case absent(err):
		// Not a linked worktree: a submodule, a worktree whose git
		// directory lives elsewhere (--separate-git-dir), or a
		// directory pointing at a bare repository.
		if bare, _ := config(gitDir); bare {
			return Repo{Top: top, Shared: true, Main: gitDir}, nil
		}
		return Repo{Top: top, Main: top}, nil
	default:
		return Repo{}, fmt.Errorf("%w; or name the task directory with --dir or $TASKGRAPH_DIR", err)
	}
	bare, worktree := config(common)
	switch {
	case bare:
		return Repo{Top: top, Shared: true, Main: common}, nil
	case worktree != "":
		return Repo{Top: top, Shared: true, Main: resolve(common, worktree)}, nil
	case filepath.Base(common) == ".git":
		return Repo{Top: top, Shared: true, Main: filepath.Dir(common)}, nil
	}
	return Repo{}, fmt.Errorf("%s is a linked worktree of the repository in %s, whose main worktree cannot be told from it (its git directory is not named .git, is not bare, and sets no core.worktree; git worktree list cannot tell either): name the shared task directory with --dir or $TASKGRAPH_DIR", top, common)
}

// maxFile bounds what readSmall reads: git's link files hold one path,
// and a repository's config is a few kilobytes.
const maxFile = 1 << 20

// readSmall reads the regular file name, of at most maxFile bytes. Anything
// else — a FIFO, which would block the read until a writer came, a device,
// a directory, a file too large to be git's — is an error naming it.
func readSmall(name string) ([]byte, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s), so git does not read it either", name, fi.Mode().Type())
	}
	if fi.Size() > maxFile {
		return nil, fmt.Errorf("%s holds %d bytes, more than git writes there (at most %d are read)", name, fi.Size(), maxFile)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err == nil && len(data) > maxFile {
		err = fmt.Errorf("%s holds more than %d bytes, more than git writes there", name, maxFile)
	}
	return data, err
}

// resolve returns path made absolute against base, as git reads the paths
// in its link files. Forward slashes, which git writes on every system,
// become the system's separator.
func resolve(base, path string) string {
	path = filepath.FromSlash(path)
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	return filepath.Clean(path)
}

// absent reports whether err says a path is not there: it, or a directory
// on the way to it.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// config reads what Find needs of the config file in the git directory
// dir: [core] bare, and [core] worktree. A config it cannot read says
// neither.
func config(dir string) (bare bool, worktree string) {
	data, err := readSmall(filepath.Join(dir, "config"))
	if err != nil {
		return false, ""
	}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "["), "]")
			section = strings.ToLower(strings.TrimSpace(name))
			continue
		}
		if section != "core" || line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, value, hasValue := strings.Cut(line, "=")
		key, value = strings.ToLower(strings.TrimSpace(key)), configValue(value)
		switch key {
		case "bare":
			// A key with no "=" is true, as git reads it.
			bare = !hasValue || isTrue(value)
		case "worktree":
			worktree = value
		}
	}
	return bare, worktree
}

// configValue returns a config value without its comment and quotes.
func configValue(v string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(v):
			i++
			b.WriteByte(v[i])
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// isTrue reports whether a config value is git's true.
func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

// SharedPlace returns where dir, an absolute directory in repo (as Find
// returns it), stands in the worktree whose things every worktree shares:
// in a linked worktree, the same place relative to the top in the main
// worktree (or the bare repository's directory); elsewhere dir itself.
func (repo Repo) SharedPlace(dir string) (string, error) {
	if !repo.Shared {
		return dir, nil
	}
	rel, err := filepath.Rel(repo.Top, dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(repo.Main, rel), nil
}

// Nearest returns the nearest directory named name in from or in one of
// its parents, going no higher than stop (or the filesystem root when stop
// is "" or not above from), or "" when there is none. A file of that name
// does not count.
func Nearest(from, stop, name string) (string, error) {
	for dir := from; ; {
		candidate := filepath.Join(dir, name)
		fi, err := os.Stat(candidate)
		if err == nil && fi.IsDir() {
			return candidate, nil
		}
		if err != nil && !absent(err) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if dir == stop || parent == dir {
			return "", nil
		}
		dir = parent
	}
}

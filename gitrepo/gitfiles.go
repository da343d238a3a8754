// The .gitignore and .gitattributes a task directory in a git repository
// needs: the first keeps the files that belong to one machine — the lock,
// the change log, the id file, a journal in flight, temporary files, and
// what earlier versions kept (the sync file, what a restart set aside) —
// out of commits, so that only the tasks are shared; the second sends the
// task files through taskgraph's merge driver and clean filter
// (taskgraph.MergeTaskFiles, taskgraph.CleanTaskFile).

package gitrepo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/errs"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// IgnoreName is the name of the file [WriteIgnore] writes in a task
// directory.
const IgnoreName = ".gitignore"

// gitIgnoreHeader opens the lines WriteIgnore adds.
const gitIgnoreHeader = "# taskgraph: files of this machine, not of the graph (`taskgraph init` adds them)"

// gitIgnorePatterns are the machine-local files of a FileStore, as
// .gitignore patterns. The task files and the meta file (the highest id
// ever allocated, which keeps a deleted id from coming back in another
// clone) are the graph's and are not among them.
var gitIgnorePatterns = []string{
	filenames.Lock,                    // the flock: its content means nothing
	filenames.Log,                     // what each write changed, for this machine's other processes
	filenames.SetAsideLogPrefix + "*", // change logs an earlier version set aside after a restart
	filenames.Sync,                    // left by an earlier version: how far its log was synced
	filenames.IDs,                     // the last id this checkout drew from its block
	filenames.CacheDir + "/",          // a cache of the decoded tasks
	filenames.Journal,                 // a multi-file write in flight, replayed here
	filenames.LostDir + "/",           // what a power loss left empty, moved aside by an earlier version
	filenames.Tokens,                  // the hashes of a hub's tokens
	atomicfile.TempPrefix(filenames.Prefix) + "*",                                  // a meta or journal being written
	atomicfile.TempPrefix(filenames.TaskPrefix) + "*" + filenames.TaskSuffix + "*", // a task file being written
}

// WriteIgnore makes dir/.gitignore list every file a FileStore keeps in
// dir that belongs to this machine rather than to the graph, so that `git
// add -A` stages task files only. It creates the file, or appends to one
// that exists only the lines it lacks, under a comment; it reports whether
// it changed anything. Calling it again changes nothing. What is there is
// never rewritten, so a failed write loses none of it. A line the file
// un-ignores later ("!.taskgraph.*") does not count, and the line added
// after it wins. A .gitignore that is a symbolic link (git does not read
// one), a directory or anything but a regular file is an error matching
// taskgraph.ErrInvalid, and is left as it is.
func WriteIgnore(dir string) (bool, error) {
	return appendLines(filepath.Join(dir, IgnoreName), gitIgnoreHeader, missingLines)
}

// appendLines appends to the git file name the lines missing reports it
// lacks, under header, creating the file if there is none.
func appendLines(name, header string, missing func([]byte) []string) (bool, error) {
	old, exists, err := readGitFile(name)
	if err != nil {
		return false, err
	}
	add := missing(old)
	if len(add) == 0 {
		return false, nil
	}
	eol := "\n"
	if strings.Contains(string(old), "\r\n") {
		eol = "\r\n" // as the file's own lines end
	}
	var text string
	if len(old) > 0 && old[len(old)-1] != '\n' {
		text = eol
	}
	if !slices.Contains(lines(old), header) {
		add = append([]string{header}, add...)
	}
	text += strings.Join(add, eol) + eol
	flag := os.O_WRONLY | os.O_APPEND
	if !exists {
		flag = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(name, flag, 0o644)
	if err != nil {
		return false, err
	}
	if _, err = f.WriteString(text); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return true, err
}

// IgnoreMissing returns the patterns [WriteIgnore] would add to
// dir/.gitignore: none when it is complete, all of them when there is no
// such file. It fails as WriteIgnore does on a .gitignore git would not
// read.
func IgnoreMissing(dir string) ([]string, error) {
	old, _, err := readGitFile(filepath.Join(dir, IgnoreName))
	if err != nil {
		return nil, err
	}
	return missingLines(old), nil
}

// readGitFile returns the content of the .gitignore or .gitattributes name
// and whether it exists. A symbolic link is refused rather than followed —
// git reads no patterns from one, and writing through it would change a
// file elsewhere — and so is anything but a regular file (reading a FIFO
// would block).
func readGitFile(name string) ([]byte, bool, error) {
	fi, err := os.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false, nil
	case err != nil:
		return nil, false, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, true, fmt.Errorf("taskgraph: %s is a symbolic link, and git reads no patterns from one: replace it with a regular file: %w", name, errs.ErrInvalid)
	case !fi.Mode().IsRegular():
		return nil, true, fmt.Errorf("taskgraph: %s is not a regular file (%s): remove it, or make it a file: %w", name, fi.Mode().Type(), errs.ErrInvalid)
	}
	data, err := os.ReadFile(name)
	return data, true, err
}

// missingLines returns the patterns the .gitignore content data lacks: a
// pattern counts when a line holds it and no later line negates it.
func missingLines(data []byte) []string {
	have := lines(data)
	var missing []string
	for _, p := range gitIgnorePatterns {
		ignored := false
		for _, l := range have {
			if l == p {
				ignored = true
			} else if neg, ok := strings.CutPrefix(l, "!"); ok && negates(neg, p) {
				ignored = false
			}
		}
		if !ignored {
			missing = append(missing, p)
		}
	}
	return missing
}

// negates reports whether the negated pattern neg un-ignores what the
// pattern p ignores: the same pattern, or a glob that matches it.
func negates(neg, p string) bool {
	neg = strings.TrimPrefix(neg, "/")
	if neg == p {
		return true
	}
	ok, _ := path.Match(strings.TrimSuffix(neg, "/"), strings.TrimSuffix(p, "/"))
	return ok
}

// lines returns the lines of data as git reads patterns from them: without
// the line end and trailing spaces (leading spaces and tabs are part of a
// pattern).
func lines(data []byte) []string {
	var out []string
	for l := range strings.Lines(string(data)) {
		l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		out = append(out, strings.TrimRight(l, " "))
	}
	return out
}

// AttributesName is the name of the file [WriteAttributes] writes in
// a task directory.
const AttributesName = ".gitattributes"

const gitAttributesHeader = "# taskgraph: how git merges and commits task files (`taskgraph init` adds these and registers the driver and filter in .git/config)"

// Driver is the name under which a graph kept in git registers its merge
// driver and clean filter in git's configuration (merge.taskgraph.driver,
// filter.taskgraph.clean): see taskgraph.MergeTaskFiles and
// taskgraph.CleanTaskFile.
const Driver = "taskgraph"

// gitAttributeLines route the task files through the merge driver and the
// clean filter, and the meta file through the merge driver.
var gitAttributeLines = []string{
	filenames.TaskPrefix + "*" + filenames.TaskSuffix + " merge=" + Driver + " filter=" + Driver,
	filenames.Meta + " merge=" + Driver,
}

// WriteAttributes makes dir/.gitattributes send the task files and the
// meta file to taskgraph's merge driver, and the task files through its
// clean filter, as [WriteIgnore] does for .gitignore (the lines are
// appended if missing; nothing is rewritten). The driver and the filter
// are commands that git's configuration names, which a repository does
// not carry: every clone registers them itself (`taskgraph init`). Until
// it does, git merges task files as text and commits lease renewals.
func WriteAttributes(dir string) (bool, error) {
	return appendLines(filepath.Join(dir, AttributesName), gitAttributesHeader, missingAttributes)
}

// AttributesMissing returns the lines [WriteAttributes] would add.
func AttributesMissing(dir string) ([]string, error) {
	old, _, err := readGitFile(filepath.Join(dir, AttributesName))
	if err != nil {
		return nil, err
	}
	return missingAttributes(old), nil
}

func missingAttributes(data []byte) []string {
	have := lines(data)
	var missing []string
	for _, l := range gitAttributeLines {
		if !slices.Contains(have, l) {
			missing = append(missing, l)
		}
	}
	return missing
}

// The .gitignore a task directory in a git repository needs: it keeps the
// files that belong to one machine — the lock, the change log, the sync
// file, a journal in flight, temporary files, what a restart set aside —
// out of commits, so that only the tasks are shared.

package taskgraph

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
)

// GitIgnoreName is the name of the file [WriteGitIgnore] writes in a task
// directory.
const GitIgnoreName = ".gitignore"

// gitIgnoreHeader opens the lines WriteGitIgnore adds.
const gitIgnoreHeader = "# taskgraph: files of this machine, not of the graph (`taskgraph init` adds them)"

// gitIgnorePatterns are the machine-local files of a FileStore, as
// .gitignore patterns. The task files and the meta file (the highest id
// ever allocated, which keeps a deleted id from coming back in another
// clone) are the graph's and are not among them.
var gitIgnorePatterns = []string{
	lockFileName,            // the flock: its content means nothing
	logFileName,             // what each write changed, checkpointed by this machine
	setAsideLogPrefix + "*", // change logs set aside after a restart
	syncFileName,            // how far this machine's log is synced
	journalFileName,         // a multi-file write in flight, replayed here
	lostDirName + "/",       // what a power loss left empty, moved aside
	atomicfile.TempPrefix(".taskgraph.") + "*",                         // a meta or journal being written
	atomicfile.TempPrefix(taskFilePrefix) + "*" + taskFileSuffix + "*", // a task file being written
}

// WriteGitIgnore makes dir/.gitignore list every file a FileStore keeps in
// dir that belongs to this machine rather than to the graph, so that `git
// add -A` stages task files only. It creates the file, or adds to one that
// exists only the lines it lacks, under a comment; it reports whether it
// changed anything. Calling it again changes nothing.
func WriteGitIgnore(dir string) (bool, error) {
	name := filepath.Join(dir, GitIgnoreName)
	old, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	missing := missingLines(old)
	if len(missing) == 0 {
		return false, nil
	}
	data := old
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	if !slices.Contains(lines(old), gitIgnoreHeader) {
		missing = append([]string{gitIgnoreHeader}, missing...)
	}
	data = append(data, strings.Join(missing, "\n")+"\n"...)
	return true, os.WriteFile(name, data, 0o644)
}

// GitIgnoreMissing returns the patterns [WriteGitIgnore] would add to
// dir/.gitignore: none when it is complete, all of them when there is no
// such file.
func GitIgnoreMissing(dir string) ([]string, error) {
	old, err := os.ReadFile(filepath.Join(dir, GitIgnoreName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return missingLines(old), nil
}

// missingLines returns the patterns the .gitignore content data lacks.
func missingLines(data []byte) []string {
	have := lines(data)
	var missing []string
	for _, p := range gitIgnorePatterns {
		if !slices.Contains(have, p) {
			missing = append(missing, p)
		}
	}
	return missing
}

// lines returns the lines of data, trimmed.
func lines(data []byte) []string {
	var out []string
	for l := range strings.Lines(string(data)) {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

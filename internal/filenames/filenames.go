// Package filenames names the files a FileStore keeps in a task directory,
// for the root package, which writes them, for internal/cachedir, and for
// the packages that only need their names: gitrepo (which of them git
// must ignore) and hub (its tokens file).
package filenames

import (
	"strconv"
	"strings"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
)

// The files of a task directory. Every name but the task files' starts
// with a dot, so that the reference's glob task_*.json never matches one.
const (
	// The graph's files, committed to git.
	TaskPrefix = "task_"           // a task file is TaskPrefix + id + TaskSuffix
	TaskSuffix = ".json"           //
	Meta       = ".taskgraph.meta" // the id high-water mark, limits and liveness defaults
	Prefix     = ".taskgraph."     // what the name of every file but the tasks starts with

	// This machine's files, never committed.
	Lock     = ".taskgraph.lock"    // the flock: its content means nothing
	Log      = ".taskgraph.log"     // what each write changed, for this machine's other processes
	Journal  = ".taskgraph.journal" // a multi-file write in flight
	IDs      = ".taskgraph.ids"     // the last id this checkout drew from its block
	CacheDir = ".taskgraph.cache"   // decoded tasks (the snapshot) and spare files
	Tokens   = ".taskgraph.tokens"  // the hashes of a hub's tokens (package hub)

	// Left by earlier versions (group commit): never written now, still
	// ignored by git and reported by Check.
	Sync              = ".taskgraph.sync"           // how far the log was synced
	SetAsideLogPrefix = ".taskgraph.log.set-aside-" // a log of another directory, set aside after a restart
	LostDir           = ".taskgraph.lost"           // files a power loss left empty, moved aside by the replay
)

// Task is the name of the file of task id.
func Task(id int64) string {
	return TaskPrefix + strconv.FormatInt(id, 10) + TaskSuffix
}

// ParseTask returns the id of a canonical task file name: a positive id,
// written as Task writes it (no sign, no leading zero).
func ParseTask(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, TaskPrefix)
	if !ok {
		return 0, false
	}
	if s, ok = strings.CutSuffix(s, TaskSuffix); !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

// TempTarget returns the task file that name is a temporary file of
// (atomicfile.TempName's), if it is one.
func TempTarget(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, atomicfile.TempPrefix(TaskPrefix))
	if !ok {
		return "", false
	}
	i := strings.Index(rest, TaskSuffix)
	if i < 0 {
		return "", false
	}
	target := TaskPrefix + rest[:i+len(TaskSuffix)]
	_, ok = ParseTask(target)
	return target, ok && atomicfile.IsTempOf(name, target)
}

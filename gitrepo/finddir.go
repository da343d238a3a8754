// Finding the task directory of a working directory, as the taskgraph
// command and its MCP server do: the nearest .tasks upward, and in a
// linked git worktree the graph every worktree of the repository shares.

package gitrepo

import (
	"fmt"
	"path/filepath"

	"github.com/taskgraph-dev/taskgraph/internal/gitdir"
)

// DirName is the name of a task directory that [FindDir] looks for.
const DirName = ".tasks"

// FindDir returns the task directory for work in the directory start, or
// "" and no error when there is none. The taskgraph command uses it when
// neither --dir nor $TASKGRAPH_DIR names one (--dir wins over the
// variable). The rule:
//
//   - Look for a directory named .tasks in start, then in each parent, as
//     git looks for .git, going no higher than the top of the repository
//     (the nearest directory holding .git) or the filesystem root. A graph
//     above a repository belongs to something else.
//   - In a linked worktree of a git repository (`git worktree add`), look
//     in the main worktree instead, from the same place relative to the
//     top: every worktree of a repository shares the main worktree's
//     graph, and the .tasks a worktree has checked out — a copy of what its
//     branch committed — is never used.
//   - A repository without a main worktree — a bare one, as in `git clone
//     --bare` followed by `git worktree add`, or a directory whose .git
//     file names a bare repository — keeps its one shared graph inside the
//     bare repository's directory: repo.git/.tasks. Nothing there is ever
//     checked out or committed.
//
// The layout is read from the worktree's .git file ("gitdir: PATH") and
// that git directory's commondir file; git is not run, and $GIT_DIR is
// not consulted. A .git file that cannot be followed is an error that
// names it rather than a guess, which could split one graph in two.
func FindDir(start string) (string, error) {
	start, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	repo, err := gitdir.Find(start)
	if err != nil {
		return "", fmt.Errorf("taskgraph: finding the task directory: %w", err)
	}
	from, err := repo.SharedPlace(start)
	if err != nil {
		return "", err
	}
	return gitdir.Nearest(from, repo.Main, DirName) // no higher than the shared worktree's top
}

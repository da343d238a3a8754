// Package gitrepo places a task directory in a git repository, as the
// taskgraph command does: which directory a working directory's graph is
// (FindDir: the nearest .tasks, and one graph for every worktree of a
// repository), and the .gitignore and .gitattributes that keep this
// machine's files out of commits and send task files through taskgraph's
// merge driver and clean filter (WriteIgnore, WriteAttributes).
//
// A library user who opens a directory by its path needs none of it.
package gitrepo

// The task graph a command works on: named by --dir or $TASKGRAPH_DIR,
// found upward from the working directory by gitrepo.FindDir (in a linked
// git worktree, the main worktree's), or a --store graph; opened, and read.

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// dirName is the task directory the command looks for.
const dirName = gitrepo.DirName

// taskDir returns the task directory to use: --dir or $TASKGRAPH_DIR as
// given, else the one gitrepo.FindDir finds from the working directory
// (the nearest .tasks upward; in a linked git worktree, the main
// worktree's). It returns a noGraphError when there is none.
func (e *env) taskDir() (string, error) {
	if e.dirFrom != "" {
		if fi, err := os.Stat(e.dir); err != nil || !fi.IsDir() {
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return "", err
			}
			if e.dirFrom == "--dir" {
				return "", noGraphError{fmt.Sprintf("no task directory %s (--dir); run `taskgraph init --dir %s`", e.dir, e.dir)}
			}
			return "", noGraphError{fmt.Sprintf("no task directory %s ($TASKGRAPH_DIR); run `taskgraph init`", e.dir)}
		}
		return e.dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	dir, err := gitrepo.FindDir(wd)
	if err != nil {
		return "", err
	}
	if dir == "" {
		if where, shared, _ := sharedPlace(wd); shared {
			return "", noGraphError{fmt.Sprintf("no %s found in %s or any parent, which this git worktree shares with the others (its own checked-out copy is never used); run `taskgraph init`", dirName, where)}
		}
		return "", noGraphError{fmt.Sprintf("no %s found in %s or any parent; run `taskgraph init`", dirName, wd)}
	}
	return dir, nil
}

// initDir returns the directory init creates: --dir or $TASKGRAPH_DIR, else
// .tasks in the working directory — in a linked git worktree, at the same
// place in the main worktree, where every worktree finds it.
func (e *env) initDir() (string, error) {
	if e.dirFrom != "" {
		return e.dir, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	where, _, err := sharedPlace(wd)
	if err != nil {
		return "", err
	}
	return filepath.Join(where, dirName), nil
}

// openDir opens a task directory; unless create is set, one that does not
// exist is a noGraphError and nothing is created.
func openDir(dir string, create bool) (*taskgraph.FileStore, error) {
	if create {
		return taskgraph.Open(dir, taskgraph.WithLogger(logger))
	}
	s, err := taskgraph.Open(dir, taskgraph.WithoutCreate(), taskgraph.WithLogger(logger))
	if errors.Is(err, taskgraph.ErrNotFound) {
		return nil, noGraphError{fmt.Sprintf("no task directory %s; run `taskgraph init`", dir)}
	}
	return s, err
}

// openGraph opens a graph of a PostgreSQL database; unless create is set,
// one that does not exist is an error matching taskgraph.ErrNotFound and
// nothing is created, not even the schema.
func openGraph(ctx context.Context, pool *pgxpool.Pool, graph string, create bool) (*pgstore.Store, error) {
	if create {
		return pgstore.Open(ctx, pool, graph, pgstore.WithLogger(logger))
	}
	return pgstore.Open(ctx, pool, graph, pgstore.WithoutCreate(), pgstore.WithLogger(logger))
}

// store is what the commands need of a store; both backends have it all.
type store interface {
	taskgraph.Store
	taskgraph.Loader
	taskgraph.Watcher
	taskgraph.Noter
	taskgraph.Limiter
	taskgraph.LivenessDefaulter
	taskgraph.Approver
	taskgraph.ApprovalPolicer
}

// withStore opens the task graph — the directory found or named, the
// --store graph, or the --store hub's — runs f, and closes it. It never creates a graph: without
// one it returns a noGraphError.
func (e *env) withStore(f func(s store) error) error {
	if e.isHub() {
		return e.withHub(f)
	}
	if e.storeURL == "" {
		dir, err := e.taskDir()
		if err != nil {
			return err
		}
		s, err := openDir(dir, false)
		if err != nil {
			return err
		}
		defer s.Close()
		return f(s)
	}
	return e.withPostgres(false, func(s store, _ bool) error { return f(s) })
}

// withPostgres opens the --store graph, creating it if create is set, and
// runs f with it and whether it was created.
func (e *env) withPostgres(create bool, f func(s store, created bool) error) error {
	pool, err := pgxpool.New(e.ctx, e.storeURL)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	defer pool.Close()
	if create {
		// init migrates a schema of an older version, as the message
		// of every other command tells the user to do.
		if err := pgstore.Migrate(e.ctx, pool); err != nil {
			return err
		}
	}
	s, err := openGraph(e.ctx, pool, e.graph, false)
	created := false
	if errors.Is(err, taskgraph.ErrNotFound) {
		if !create {
			return noGraphError{fmt.Sprintf("no graph %q in the --store database; run `taskgraph init` with the same --store and --graph", e.graph)}
		}
		s, err = openGraph(e.ctx, pool, e.graph, true)
		created = true
	}
	if err != nil {
		return err
	}
	defer s.Close()
	return f(s, created)
}

// where names the store for messages.
func (e *env) where() string {
	if e.isHub() {
		return e.storeURL
	}
	if e.storeURL != "" {
		return fmt.Sprintf("graph %q", e.graph)
	}
	if dir, err := e.taskDir(); err == nil {
		return dir
	}
	return e.dir
}

// readFailed reports whether a read of the graph failed: an error other
// than taskgraph.ErrCorrupt, which comes with every task that could be
// read, and the command goes on with those.
func readFailed(err error) bool {
	return err != nil && !errors.Is(err, taskgraph.ErrCorrupt)
}

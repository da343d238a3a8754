// A command's positional arguments: how many it takes, the task ids and
// input files among them, and running on the store with the task they name.

package main

import (
	"io"
	"os"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

func (e *env) wantArgs(n int) error {
	if len(e.args) != n {
		return usagef("want %d argument(s), got %d", n, len(e.args))
	}
	return nil
}

// parseID reads a task id argument: an id (taskgraph.ParseID) or its
// short form, %N (resolveShort); a bad one is a usage error.
func (e *env) parseID(s string) (taskgraph.ID, error) {
	if n, ok := parseShort(s); ok {
		return e.resolveShort(n)
	}
	id, err := taskgraph.ParseID(s)
	if err != nil {
		return 0, usageError{reasonOf(err).Error()}
	}
	return id, nil
}

func (e *env) oneID() (taskgraph.ID, error) {
	ids, err := e.argIDs(1, 0)
	if err != nil {
		return 0, err
	}
	return ids[0], nil
}

// argIDs checks that the command has n arguments and parses the ones at
// the positions at as task ids.
func (e *env) argIDs(n int, at ...int) ([]taskgraph.ID, error) {
	if err := e.wantArgs(n); err != nil {
		return nil, err
	}
	ids := make([]taskgraph.ID, len(at))
	for i, a := range at {
		id, err := e.parseID(e.args[a])
		if err != nil {
			return nil, err
		}
		ids[i] = id
	}
	return ids, nil
}

// idAndReason parses ID REASON.
func (e *env) idAndReason() (taskgraph.ID, string, error) {
	if len(e.args) != 2 {
		return 0, "", usagef("want the task id and the reason (quote it)")
	}
	id, err := e.parseID(e.args[0])
	if err != nil {
		return 0, "", err
	}
	if strings.TrimSpace(e.args[1]) == "" {
		return 0, "", usagef("the reason must not be empty: say why, for whoever reopens the task")
	}
	return id, e.args[1], nil
}

// openInput opens the file an argument names, or stdin for "-" (which it
// does not close).
func (e *env) openInput(name string) (io.ReadCloser, error) {
	if name == "-" {
		return io.NopCloser(e.stdin), nil
	}
	return os.Open(name)
}

// withNoArgs runs f on the store, for a command that takes no arguments.
func (e *env) withNoArgs(f func(s store) error) error {
	if err := e.wantArgs(0); err != nil {
		return err
	}
	return e.withStore(f)
}

// withID runs f on the store and the task id that is the command's one
// argument.
func (e *env) withID(f func(s store, id taskgraph.ID) error) error {
	id, err := e.oneID()
	if err != nil {
		return err
	}
	return e.withStore(func(s store) error { return f(s, id) })
}

// withTask runs f on the store and the task whose id is the command's one
// argument.
func (e *env) withTask(f func(s store, t taskgraph.Task) error) error {
	return e.withID(func(s store, id taskgraph.ID) error {
		t, err := s.Get(e.ctx, id)
		if err != nil {
			return err
		}
		return f(s, t)
	})
}

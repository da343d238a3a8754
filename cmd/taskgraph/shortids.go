// Ids a person can type: %N, the short form of a task's id.
//
// A checkout other than the one where the graph began draws its ids from
// a block of a million of its own (taskgraph's ids.go, docs/git.md):
// 878122000001, 878122000002, ... Typing twelve digits in every command is
// a chore, so the command line takes %N for the task numbered N in its
// block: %1 for 878122000001 (and for 1, in block 0). The % sets it apart
// from an id (12, #12) for good: it is never read as one, and an id is
// never read as it. After a pull, tasks of another block may share the
// number: a short form that names more than one task is refused, naming
// them, instead of picking one, so that %1 never silently means another
// task than yesterday. Text for a person shows the short form of a task
// drawn from a block (block 0's ids are short already); --json, the tools
// and the files keep the full id.

package main

import (
	"errors"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/taskgraph-dev/taskgraph"
)

// idBlock is how many ids a checkout's block holds: blockSize in
// taskgraph's ids.go (TestShortIDsOfAClone pins it on a real clone).
const idBlock = 1_000_000

// shortForm matches the short form of an id, %N, N from 1 to 999,999.
var shortForm = regexp.MustCompile(`^%([1-9][0-9]{0,5})$`)

// parseShort returns N of a short form %N, and false for anything else.
func parseShort(s string) (taskgraph.ID, bool) {
	m := shortForm.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return taskgraph.ID(n), true
}

// idText is how a person reads id: %N for an id drawn from a block, #N
// for one of block 0, which is as short.
func idText(id taskgraph.ID) string {
	if id >= idBlock {
		return "%" + strconv.FormatInt(int64(id%idBlock), 10)
	}
	return "#" + strconv.FormatInt(int64(id), 10)
}

// idsText is a list of ids as a person reads them: "[%1, #5]".
func idsText(ids []taskgraph.ID) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strings.TrimPrefix(idText(id), "#")
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// AmbiguousIDError is a short form that names more than one task: which
// to take is the person's choice, by the full id.
type ambiguousIDError struct {
	short string
	ids   []taskgraph.ID
}

func (a *ambiguousIDError) Error() string {
	full := make([]string, len(a.ids))
	for i, id := range a.ids {
		full[i] = "#" + strconv.FormatInt(int64(id), 10)
	}
	return fmt.Sprintf("%s is ambiguous: it names %d tasks, %s; give the full id", a.short, len(a.ids), strings.Join(full, ", "))
}

// shortIDs maps the number N of each short form to the tasks it names,
// read once from the graph when a command line first uses a short form.
type shortIDs map[taskgraph.ID][]taskgraph.ID

// resolveShort returns the task the short form %n names: refused if it
// names none (ErrNotFound) or more than one (*ambiguousIDError).
func (e *env) resolveShort(n taskgraph.ID) (taskgraph.ID, error) {
	if e.shorts == nil {
		shorts := shortIDs{}
		err := e.withStore(func(s store) error {
			all, err := s.List(e.ctx)
			if readFailed(err) {
				return err
			}
			for _, t := range all {
				shorts[t.ID%idBlock] = append(shorts[t.ID%idBlock], t.ID)
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
		e.shorts = shorts
	}
	short := "%" + strconv.FormatInt(int64(n), 10)
	switch ids := e.shorts[n]; len(ids) {
	case 0:
		return 0, fmt.Errorf("%s names no task: %w", short, taskgraph.ErrNotFound)
	case 1:
		return ids[0], nil
	default:
		return 0, &ambiguousIDError{short, slices.Sorted(slices.Values(ids))}
	}
}

// resolveFlagIDs replaces the short forms given to id flags (--after,
// --parent, --under, ...), which Set keeps as -N, by the ids they name.
func (e *env) resolveFlagIDs() error {
	var err error
	e.fs.Visit(func(f *flag.Flag) {
		l, ok := f.Value.(*idList)
		if !ok || err != nil {
			return
		}
		for i, id := range *l {
			if id < 0 {
				if (*l)[i], err = e.resolveShort(-id); err != nil {
					err = fmt.Errorf("--%s %w", f.Name, err)
					return
				}
			}
		}
	})
	return err
}

// errAmbiguous reports whether err is a short form naming several tasks.
func errAmbiguous(err error) bool {
	var a *ambiguousIDError
	return errors.As(err, &a)
}

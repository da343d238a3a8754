// The flag types the commands share: lists of ids and of strings, a
// priority, a lease, and --force.

package main

import (
	"errors"
	"flag"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/taskview"
)

// idList is a flag that takes ids, repeated or comma-separated, each a
// full id or a short form (%N), which it keeps as -N until
// env.resolveFlagIDs replaces it by the id it names.
type idList []taskgraph.ID

func (l *idList) String() string { return taskview.FormatIDs(*l) }

func (l *idList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if n, ok := parseShort(strings.TrimSpace(part)); ok {
			*l = append(*l, -n)
			continue
		}
		ids, err := taskgraph.ParseIDs(part)
		if err != nil {
			return reasonOf(err)
		}
		*l = append(*l, ids...)
	}
	return nil
}

// stringList is a flag that takes strings, repeated or comma-separated.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l = append(*l, f)
		}
	}
	return nil
}

// priorityFlag is a priority given as P0 to P4 (or 0 to 4); unset, nil.
type priorityFlag struct{ p *taskgraph.Priority }

func (f *priorityFlag) String() string {
	if f.p == nil {
		return ""
	}
	return f.p.String()
}

// value is the priority given, or the default.
func (f *priorityFlag) value() taskgraph.Priority {
	if f.p == nil {
		return taskgraph.DefaultPriority
	}
	return *f.p
}

func (f *priorityFlag) Set(v string) error {
	p, err := taskgraph.ParsePriority(v)
	if err != nil {
		return reasonOf(err)
	}
	f.p = &p
	return nil
}

// reasonOf returns the reason of an *InvalidError, without its field, for
// a message that names the flag or argument itself; other errors as they
// are.
func reasonOf(err error) error {
	var inv *taskgraph.InvalidError
	if errors.As(err, &inv) {
		return errors.New(inv.Reason)
	}
	return err
}

// durationFlag is a lease flag (taskgraph.ParseLease) that keeps the text
// it was given, for messages. A negative lease is kept in err, for check
// to refuse as a usage error that names the flag.
type durationFlag struct {
	d    time.Duration
	text string
	err  error
}

func (f *durationFlag) String() string {
	if f.text != "" {
		return f.text
	}
	return f.d.String()
}

func (f *durationFlag) Set(v string) error {
	d, err := taskgraph.ParseLease(v)
	if err != nil && !strings.HasPrefix(v, "-") {
		return reasonOf(err)
	}
	f.d, f.text, f.err = d, v, err
	return nil
}

// leaseFlag defines --lease, a duration that must not be negative: check
// says so.
func leaseFlag(fs *flag.FlagSet, usage string) *durationFlag {
	f := &durationFlag{}
	fs.Var(f, "lease", usage)
	return f
}

// check refuses a negative lease.
func (f *durationFlag) check() error {
	if f.err != nil {
		return usagef("--lease %s: %v", f, reasonOf(f.err))
	}
	return nil
}

// forceFlag defines --force, for acting on a task someone else holds; its
// help begins with what the command does to the task ("fail", "act on").
func forceFlag(fs *flag.FlagSet, what string) *bool {
	return fs.Bool("force", false, what+" the task even if someone else holds it")
}

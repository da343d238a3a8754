// Command taskgraph is the command line for a taskgraph task directory: for
// people looking at and fixing a plan, and for agents that drive tools from
// a shell. `taskgraph mcp` serves the same tools to MCP clients.
//
// Exit status: 0 success; 1 error; 2 usage; 3 the task is blocked or held
// by someone else, or no task is ready.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskgraph/taskgraph"
	"github.com/taskgraph/taskgraph/pgstore"
)

const usage = `taskgraph is a durable task graph shared by agents and people.

Usage:

	taskgraph <command> [arguments] [flags]

The commands are:

	init                     create the task directory
	add SUBJECT              add a task (--desc TEXT, --after ID..., --blocks ID...)
	list                     list every task
	ready                    list the tasks that can start now
	show ID                  show one task
	claim ID                 claim a ready task (--lease DURATION)
	next                     claim the ready task with the lowest id (--lease DURATION)
	done ID                  complete a task and say what it unblocked
	release ID               give a claimed task back
	renew ID DURATION        extend the lease of a task you hold
	dep add|rm ID BLOCKER    add or remove "ID is blocked by BLOCKER"
	edit ID                  edit a task in $EDITOR; the edit is checked before it is saved
	delete ID                delete a task (--detach to remove the edges to it)
	check                    report problems in the directory, changing nothing
	watch                    print changes as they happen, by anyone
	graph                    print the graph (--format mermaid|dot)
	export                   print every task as JSON, for import elsewhere
	import FILE|--claude-code DIR
	                         load tasks from an export, or from a Claude Code task list
	mcp                      serve the task tools over MCP on stdin/stdout

Flags for every command:

	--dir DIR      task directory (default $TASKGRAPH_DIR, else .tasks)
	--store URL    a PostgreSQL database instead of a directory (default $TASKGRAPH_STORE),
	               e.g. postgres://user@host/db; --graph NAME picks the graph in it (default "default")
	--owner NAME   who you are (default $TASKGRAPH_OWNER, else user@host:ppid)
	--json         machine-readable output

Use "taskgraph help <command>" for more about a command.

Exit status is 0 on success, 1 on error, 2 on a usage error, and 3 when a
task is blocked or held by someone else, or no task is ready.
`

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitUnavailable = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command runs with.
type env struct {
	ctx      context.Context
	stdin    io.Reader
	stdout   io.Writer
	stderr   io.Writer
	dir      string
	storeURL string
	graph    string
	owner    string
	ownerSet bool // --owner or $TASKGRAPH_OWNER given: done/release check it
	json     bool
	color    bool
	args     []string
	fs       *flag.FlagSet
}

type command struct {
	args  string // argument synopsis
	help  string
	flags func(fs *flag.FlagSet) func(e *env) error
}

var commands map[string]command

func init() {
	commands = map[string]command{
		"init":    {"", "Create the task directory if it does not exist.", simple(cmdInit)},
		"add":     {"SUBJECT", "Add a pending task.", flagsAdd},
		"list":    {"", "List every task, one a line: [ ] pending, [>] in progress, [x] completed.", simple(cmdList)},
		"ready":   {"", "List the tasks that can start now. Exit status 3 if there is none.", simple(cmdReady)},
		"show":    {"ID", "Show one task in full.", simple(cmdShow)},
		"claim":   {"ID", "Claim a ready task for --owner.", flagsClaim(false)},
		"next":    {"", "Claim the ready task with the lowest id for --owner. Exit status 3 if none is ready.", flagsClaim(true)},
		"done":    {"ID", "Complete a task and print the tasks this made ready.", simple(cmdDone)},
		"release": {"ID", "Give a claimed task back: it becomes pending again.", simple(cmdRelease)},
		"renew":   {"ID DURATION", "Extend the lease of a task --owner holds.", simple(cmdRenew)},
		"dep":     {"add|rm ID BLOCKER", "Add or remove the edge \"ID is blocked by BLOCKER\". Edges that would close a cycle are refused.", simple(cmdDep)},
		"edit":    {"ID", "Open the task in $EDITOR (default vi). The edit is validated before it is saved; nothing changes if it is refused.", simple(cmdEdit)},
		"delete":  {"ID", "Delete a task.", flagsDelete},
		"check":   {"", "Report corrupt files, dangling edges, cycles, expired leases and leftovers, changing nothing. Exit status 1 if there are problems.", simple(cmdCheck)},
		"watch":   {"", "Print every change as it happens, by this or any other process, until interrupted.", simple(cmdWatch)},
		"graph":   {"", "Print the dependency graph.", flagsGraph},
		"export":  {"", "Print every task as a JSON array, ids and edges included.", simple(cmdExport)},
		"import":  {"FILE | --claude-code DIR", "Load tasks from an export (or - for stdin), or from a Claude Code task list (~/.claude/tasks/<list>). Ids are kept; they must be new to this directory.", flagsImport},
		"mcp":     {"", "Serve the task tools (the same as package agenttools) over MCP on stdin/stdout.", simple(cmdMCP)},
	}
}

func simple(f func(e *env) error) func(fs *flag.FlagSet) func(e *env) error {
	return func(*flag.FlagSet) func(e *env) error { return f }
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	args = commandFirst(args)
	name := args[0]
	if name == "help" {
		name, args = args[1], []string{args[1], "--help"}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "taskgraph: unknown command %q\nRun 'taskgraph help' for usage.\n", name)
		return exitUsage
	}
	fs := flag.NewFlagSet("taskgraph "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, fs: fs}
	fs.StringVar(&e.dir, "dir", envOr("TASKGRAPH_DIR", ".tasks"), "task directory")
	fs.StringVar(&e.storeURL, "store", os.Getenv("TASKGRAPH_STORE"), "PostgreSQL `URL` to use instead of a directory")
	fs.StringVar(&e.graph, "graph", envOr("TASKGRAPH_GRAPH", "default"), "graph `NAME` in the --store database")
	fs.StringVar(&e.owner, "owner", os.Getenv("TASKGRAPH_OWNER"), "who you are (default $TASKGRAPH_OWNER, else user@host:ppid)")
	fs.BoolVar(&e.json, "json", false, "machine-readable output")
	do := cmd.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: taskgraph %s %s\n\n%s\n\nFlags:\n", name, cmd.args, cmd.help)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	e.args = pos
	e.ownerSet = e.owner != ""
	if !e.ownerSet {
		e.owner = defaultOwner()
	}
	e.color = isTerminal(stdout) && os.Getenv("NO_COLOR") == ""
	err = do(e)
	var ue usageError
	var quiet errQuiet
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &quiet):
		return quiet.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "taskgraph %s: %v\nusage: taskgraph %s %s\n", name, err, name, cmd.args)
		return exitUsage
	case errors.Is(err, taskgraph.ErrBlocked), errors.Is(err, taskgraph.ErrClaimed), errors.Is(err, taskgraph.ErrNoReady):
		fmt.Fprintf(stderr, "taskgraph %s: %v\n", name, err)
		return exitUnavailable
	default:
		fmt.Fprintf(stderr, "taskgraph %s: %v\n", name, err)
		return exitError
	}
}

// commandFirst moves flags given before the command after it, so that
// `taskgraph --owner x claim 1` works like `taskgraph claim 1 --owner x`.
func commandFirst(args []string) []string {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
		name := strings.TrimLeft(args[i], "-")
		if strings.Contains(name, "=") || name == "json" || name == "h" || name == "help" {
			i++
		} else {
			i += 2 // --dir DIR, --owner NAME
		}
	}
	if i == 0 || i >= len(args) {
		return args
	}
	return append(append([]string{args[i]}, args[i+1:]...), args[:i]...)
}

// parseInterspersed parses flags wherever they appear among the arguments,
// as git and go do: `add "api" --after 1` works.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos, after []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, after = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return append(pos, after...), nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// defaultOwner names the shell session the command runs in, so that
// `taskgraph next` and a later `taskgraph renew` from the same shell agree.
func defaultOwner() string {
	user := envOr("USER", "user")
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s:%d", user, host, os.Getppid())
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// store is what the commands need of a store; both backends have it all.
type store interface {
	taskgraph.Store
	taskgraph.Loader
	taskgraph.Watcher
}

// withStore opens the directory (or the --store database), runs f, and
// closes it.
func (e *env) withStore(f func(s store) error) error {
	if e.storeURL == "" {
		s, err := taskgraph.Open(e.dir)
		if err != nil {
			return err
		}
		defer s.Close()
		return f(s)
	}
	pool, err := pgxpool.New(e.ctx, e.storeURL)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	defer pool.Close()
	s, err := pgstore.Open(e.ctx, pool, e.graph)
	if err != nil {
		return err
	}
	defer s.Close()
	return f(s)
}

// where names the store for messages.
func (e *env) where() string {
	if e.storeURL != "" {
		return fmt.Sprintf("graph %q", e.graph)
	}
	return e.dir
}

func (e *env) wantArgs(n int) error {
	if len(e.args) != n {
		return usagef("want %d argument(s), got %d", n, len(e.args))
	}
	return nil
}

func parseID(s string) (taskgraph.ID, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || n <= 0 {
		return 0, usagef("%q is not a task id (a positive integer)", s)
	}
	return taskgraph.ID(n), nil
}

// idList is a flag that takes ids, repeated or comma-separated.
type idList []taskgraph.ID

func (l *idList) String() string { return fmt.Sprint([]taskgraph.ID(*l)) }

func (l *idList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		id, err := parseID(strings.TrimSpace(f))
		if err != nil {
			return err
		}
		*l = append(*l, id)
	}
	return nil
}

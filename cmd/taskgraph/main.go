// Command taskgraph is the command line for a taskgraph task directory: for
// people looking at and fixing a plan, and for agents that drive tools from
// a shell. `taskgraph mcp` serves the same tools to MCP clients.
//
// Like git, it finds the task directory by looking for .tasks in the
// working directory and then in each parent, stopping at the filesystem
// root or at a directory that holds .git (a repository's root); in a
// linked git worktree it looks in the main worktree (gitrepo.FindDir).
// --dir or $TASKGRAPH_DIR names one instead. Only `taskgraph init` creates
// a task directory (or a --store graph), and `taskgraph mcp` on its first
// write to a directory --dir or $TASKGRAPH_DIR names: every other command
// says so when there is none, and creates nothing.
//
// Exit status (exitStatuses, in reference.go): 0 success; 1 error; 2
// usage; 3 wait: the task is blocked, held by someone else or held back
// by a label's limit, or no task is ready now; 4 no task graph was found;
// and from next, 5 finished (nothing left to do) and 6 finished, but
// tasks failed or are stranded.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"os/user"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/taskview"
)

// Exit codes.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitUnavailable = 3 // blocked, held by someone else, nothing ready now
	exitNoGraph     = 4
	exitFinished    = 5 // next: nothing left to do
	exitStalled     = 6 // next: finished, but tasks failed or are stranded
)

func main() {
	if gc, set := commandGC(os.Args[1:]); set && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gc)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// answerOnceGC is the garbage collector's target (GOGC) of a command that
// answers once and exits, unless $GOGC sets one. Such a command spends its
// life loading the graph, nearly all of which stays live until it exits,
// so each collection while the graph loads frees little and scans all of
// it: at Go's default, 100, a cold "ready --json" of 100,000 tasks spent a
// quarter of its time collecting; at 400 it runs 13 % faster and peaks
// lower (RSS 156 → 110 MB: fewer collections running beside the load).
// A command that makes much short-lived garbage (import of a large file)
// may peak higher.
const answerOnceGC = 400

// readOnceGC is the target of a command that reads the graph and prints
// it (readsOnce), whose garbage is little besides its output: at 2,000 the
// first collection comes at about 84 MB of heap, so that a graph of up to
// about 100,000 tasks loads without one (at 400, one collection while a
// cold "ready --json" of 100,000 tasks loaded made it 25 % slower, and its
// RSS was no lower), and a larger one is collected about once. Commands
// that make much garbage (graph --json, export, import) run faster at
// answerOnceGC: what they would not collect costs page faults instead.
const readOnceGC = 2000

// readsOnce lists the commands that read the graph and print it.
var readsOnce = map[string]bool{"ready": true, "list": true, "board": true, "show": true, "explain": true}

// commandGC returns the garbage collector's target for the command line
// args, and false for a command that stays (serve, mcp, watch, a wait),
// which keeps Go's default: its garbage would otherwise pile up.
func commandGC(args []string) (int, bool) {
	switch {
	case staying(args):
		return 0, false
	case len(args) > 0 && readsOnce[commandFirst(args)[0]]:
		return readOnceGC, true
	}
	return answerOnceGC, true
}

// staying reports whether the command line args runs a command that stays
// (serve, mcp, watch, a wait), which keeps Go's default: its garbage would
// otherwise pile up to five times what it holds.
func staying(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch commandFirst(args)[0] {
	case "serve", "mcp", "watch":
		return true
	}
	return slices.ContainsFunc(args, func(a string) bool {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		return name == "wait"
	})
}

// env is what a command runs with.
type env struct {
	ctx       context.Context
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	dir       string // --dir, else $TASKGRAPH_DIR; "" to search upward
	dirFrom   string // "--dir", "$TASKGRAPH_DIR", or "" when searched
	storeURL  string
	graph     string
	owner     string
	ownerSet  bool // --owner or $TASKGRAPH_OWNER given
	ownerFlag bool // --owner given on the command line
	json      bool
	color     bool
	args      []string
	given     []string // the command line as given, after the command's name
	shorts    shortIDs // the tasks each short form names, once one is used
	fs        *flag.FlagSet
}

// command is one command of the table: its name, its arguments'
// synopsis, a line for the overview, its help, and its flags (which it
// defines on the FlagSet given) with the function that runs it.
type command struct {
	name    string
	args    string
	summary string
	help    string
	flags   func(fs *flag.FlagSet) func(e *env) error
}

// commandTable is every command, in the order the overview (taskgraph
// help) lists them: the one table the help, docs/cli.md's reference, the
// shell completions and the man pages are made from (reference.go).
var commandTable []command

// commands is commandTable by name.
var commands map[string]command

func init() {
	commandTable = []command{
		{"init", "", "create the task directory (.tasks here, or --dir)", "Create the task directory: .tasks in the working directory, or --dir (with --store, the graph). The one command that creates a task graph; it is harmless on one that exists.", simple(cmdInit)},
		{"add", "SUBJECT", "add a task", "Add a pending task. --priority P0..P4 (default P2) orders ClaimNext and next; --label routes it (next --label); --key names it, so that adding the same key again adds nothing; --needs-approval holds it until someone approves it (taskgraph approve).", flagsAdd},
		{"plan", "FILE", "add a whole plan from a JSON file, all or nothing", "Create the tasks of a plan file (or - for stdin), all or nothing: JSON, {\"tasks\": [{\"key\", \"subject\", \"description\", \"after\": [key or \"#id\"], \"priority\": \"P0\"..\"P4\" (or 0-4), \"labels\": [...], \"under\": key or \"#id\" (the task it is under, as --under; also \"parent\"), \"maxAttempts\", \"backoffSeconds\"}]}, the shape of the task_plan tool and the words of the command line. Tasks whose key exists are not created again, so a plan can be applied twice.", simple(cmdPlan)},
		{"list", "", "list every task", "List every task, one a line: [ ] pending, [>] in progress, [x] completed, [!] failed, [-] cancelled; a priority other than P2 and {labels} follow the subject; \"blocked by\" lists the blockers not completed yet, and \"cannot start\" names the failed or cancelled task a pending one waits on. --status, --state (ready, awaiting_approval, deferred, limited, blocked, stranded, in_progress, completed, failed, cancelled: where a task stands), --owned-by, --label and --ready filter; --limit caps. With --json each task carries its \"state\".", flagsList},
		{"ready", "", "list the tasks that can start now, most urgent first", "List the tasks that can start now in the order next claims them: the most urgent first (P0), then the first created. --label filters, --limit caps. Exit status 3 if there is none.", flagsReady},
		{"board", "", "list every task under its state", "List every task under its state, the board's columns: ready (in claim order), blocked, stranded (waits on a failed or cancelled task), in progress, completed, failed and cancelled. With --json an object keyed by state, each an array of tasks with their \"state\".", simple(cmdBoard)},
		{"show", "ID", "show one task, with its metadata, notes and times", "Show one task in full: status, owner, lease, edges, times, metadata, description, its notes (latest first) and the last transitions of its history.", simple(cmdShow)},
		{"explain", "ID", "say why a task is not ready", "Say where a task stands and why: what it waits on (status, owner, lease left), or the failed or cancelled task that strands it.", simple(cmdExplain)},
		{"history", "ID", "list every transition of a task", "List every transition of a task, oldest first: created, claimed (with the lease), lapsed, released, failed (why), completed (the result), cancelled, reopened, edited (which fields), noted; who and when. With --json an array of {at, event, by, detail}.", simple(cmdHistory)},
		{"claim", "ID", "claim a ready task", "Claim a ready task for --owner.", flagsClaim(false)},
		{"next", "", "claim the most urgent ready task, or say whether to wait or stop", "Claim the most urgent ready task (P0 first, then the first created) for --owner; with --label, only a task carrying all those labels. When it claims nothing, it says why, and its exit status says whether to wait or stop: 3, nothing ready now (it says what is in progress and when the next lease lapses); 5, finished: nothing left to do; 6, finished, but tasks failed or are stranded (it names them). --wait waits until a task can be claimed (exit status 0) or the graph is finished (5 or 6); --timeout DURATION bounds the wait (then 3). With --json, an outcome other than a claim is an object: {\"outcome\": \"nothing_ready\", \"finished\" or \"stalled\", \"message\", \"failed\", \"stranded\"}.", flagsClaim(true)},
		{"note", "ID TEXT", "leave a note on a task for whoever takes it next", "Add a note to a task, by --owner: what you tried, what you found, where you stopped. Whoever takes the task next sees the latest note first (show, next, task_get).", simple(cmdNote)},
		{"done", "ID", "complete a task you hold and say what it unblocked", "Complete a task you hold and print the tasks this made ready; --result TEXT records what was done. A task someone else holds needs --force. A task that names a check (add --check) completes only if the check passes: done runs its command, from checks.json beside the task files (.tasks/checks.json under the working directory for --store or a hub), in the directory that holds them, killing its process group at its timeout, and records the evidence (exit status, duration, output digest and tail, git commit) in the history; a failing check fails the attempt, with the evidence as the reason. --no-verify (for a person) completes it without running the check, and the history records the skip.", flagsDone},
		{"fail", "ID REASON", "fail a task you hold; what depends on it cannot start", "Fail a task you hold, saying why: the tasks that depend on it cannot start until it is reopened, and are printed. A task someone else holds needs --force.", flagsFail},
		{"cancel", "ID REASON", "cancel a task; what depends on it cannot start", "Cancel a pending or in-progress task, saying why: the tasks that depend on it cannot start until it is reopened. A task someone else holds needs --force.", flagsCancel},
		{"reopen", "ID", "make a failed, cancelled or completed task pending again", "Make a failed, cancelled or completed task pending again (its owner, reason and result are cleared). A completed task whose dependents have started is not reopened.", simple(cmdReopen)},
		{"release", "ID", "give a task you hold back", "Give a task you hold back: it becomes pending again. A task someone else holds needs --force.", flagsForce(cmdRelease)},
		{"renew", "ID DURATION", "extend the lease of a task you hold", "Extend the lease of a task --owner holds to DURATION (e.g. 30m) from now.", simple(cmdRenew)},
		{"limit", "[LABEL N]", "cap the tasks of a label in progress at once, or list the caps", "Cap at N the tasks carrying LABEL that may be in progress at once (0 removes the cap): no claim, next or edit goes past it, also when agents race; a ready task held back is \"limited\". Without arguments, list the limits. The limits are kept with the graph (and committed with it in git).", simple(cmdLimit)},
		{"liveness", "[LABEL --max-runtime D --progress-window D]", "give a label's new tasks a max runtime and a no-progress window, or list them", "Give the tasks created with LABEL from now on, unless they set their own, a max runtime (a claim that has run that long lapses) and a no-progress window (a claim that has gone that long without a claim or a note lapses), however their leases are renewed; with neither flag, or both 0, remove LABEL's default. Of several labels, a task gets the shortest. Without arguments, list the defaults. They are kept with the limits (and committed with the graph in git).", flagsLiveness},
		{"approve", "ID", "approve a task awaiting approval, so that it can be claimed", "Approve a task awaiting approval (add --needs-approval, or the approval policy): until then no one can claim it, and it is listed as awaiting_approval. The history records who approved (--owner, by default you) and when. On a local graph anyone who can run taskgraph can approve, so the gate is advisory there; through a hub only an admin's token can. The agent tools never approve.", simple(cmdApprove)},
		{"reject", "ID REASON", "reject a task awaiting approval: it is cancelled", "Reject a task awaiting approval, saying why: it is cancelled (the tasks that depend on it cannot start until it is reopened, and are printed), and the history records who rejected it (--owner, by default you) and when. Reopened, it awaits approval again. Through a hub only an admin's token can.", simple(cmdReject)},
		{"approval", "[--label L] [--via WAY] [--none]", "say which new tasks need approval, or print the policy", "Set which new tasks need approval besides those added with --needs-approval: those with a --label, and those created through a --via (tools: the agent tools; mcp: taskgraph mcp and the hub's /mcp; cli) — --via tools,mcp gates every task a model creates. The flags replace the policy; --none removes it; without flags, print it. Tasks that exist are left as they are. The policy is kept with the limits (and committed with the graph in git).", flagsApproval},
		{"link", "ID REF...", "link a commit, a pull request, a file or a URL to a task", "Add links to a task: commits, pull requests, files, URLs (at most 20, each one line). Links are a set: one the task carries is left as it is. show, task_get and the board show them; adding one counts as progress for the task's no-progress window, as a note does.", simple(cmdLink)},
		{"dep", "add|rm ID BLOCKER", "add or remove \"ID is blocked by BLOCKER\"", "Add or remove the edge \"ID is blocked by BLOCKER\". Edges that would close a cycle are refused; removing an edge that does not exist is an error.", simple(cmdDep)},
		{"edit", "ID", "edit a task in $EDITOR; the edit is checked before it is saved", "Open the task in $EDITOR (default vi): its subject, description, status, owner, blockedBy, metadata, parent, check and acceptance items (add a \"parent\" or \"check\" line to give it one; 0 or \"\" for none). The edit is validated before it is saved; if it is refused, nothing changes and the text you wrote is kept in a file named in the message (edit it again with --from FILE). Changing the status or owner of a task someone else holds needs --force.", flagsEdit},
		{"delete", "ID", "delete a task (--detach to remove the edges to it and free its children)", "Delete a task. A task someone else holds needs --force; one that others depend on, or that has children, needs --detach (the edges go, and the children are left without a parent).", flagsDelete},
		{"check", "", "report problems in the directory, changing nothing", "Report corrupt files, dangling edges and parents, cycles (of edges and of parents), work begun before its blockers were done, duplicate keys, expired leases, leftovers and task files a git merge left unmerged, each with what settles it, changing nothing. Exit status 1 if there are problems (on stdout); advice about setup (a clone that has not run init) is a warning, on stderr, and does not change the exit status.", simple(cmdCheck)},
		{"watch", "", "print changes as they happen, by anyone", "Print every change as it happens, by this or any other process, until interrupted. With --json, one JSON object a line.", simple(cmdWatch)},
		{"graph", "", "print the graph (Mermaid, dot, waves, or --json)", "Print the dependency graph: Mermaid or Graphviz dot, with the remaining work ranked in waves left to right, or --format waves for the waves (what can run at once, round by round) and the critical path (the longest chain of unfinished work) as text; with --json an object of nodes, edges (from blocks to), waves and the critical path.", flagsGraph},
		{"export", "", "print every task as JSON, for import elsewhere", "Print every task as a JSON array, ids and edges included.", simple(cmdExport)},
		{"import", "FILE | --claude-code DIR", "load tasks from an export, or from a Claude Code task list", "Load tasks from an export (or - for stdin), or from a Claude Code task list (~/.claude/tasks/<list>), all or nothing. Ids are kept and must be new to this graph; with --renumber the tasks get fresh ids after the graph's own and their edges follow, to merge a plan into an existing graph.", flagsImport},
		{"mcp", "", "serve the task tools over MCP on stdin/stdout", "Serve the task tools (the same as package agenttools) over MCP on stdin/stdout. --tools claude-code serves Claude Code's own task tools instead (TaskCreate, TaskGet, TaskUpdate, TaskList, with its argument names), on the same graph and with the same checks; --tools taskgraph,claude-code serves both. Unless --owner is given, each server is its own agent, mcp-HOST-PID-RANDOM ($TASKGRAPH_OWNER, a person's identity, is not used). Every claim is a lease (--lease, default 5m) that the server renews while it runs, so a killed session's tasks are free again within one lease. It stops renewing once the session has made no tool call for --progress-window (default 60m; 0: never stops), so a hung session's tasks come back too. It starts without a graph: the first write creates the directory --dir or $TASKGRAPH_DIR names, as init would; otherwise the tools say to run taskgraph init.", flagsMCP},
		{"serve", "", "serve a live board of the graph to a web browser, and the hub's API", serveHelp, flagsServe},
		{"token", "add NAME | list | revoke NAME", "the tokens of the hub's API (--role agent|viewer|admin)", tokenHelp, flagsToken},
		{"version", "", "print the version", "Print the version of taskgraph — its tag for a tagged build; for an untagged one a pseudo-version, or the release after the last with -dev and the VCS revision (v0.1.1-dev+abcdef123456), never a release it is not — the Go it was built with, and the VCS revision if the build recorded one.", simple(cmdVersion)},
		{"prime", "", "print a guide to working this graph, for AGENTS.md or CLAUDE.md", "Print a short guide to working the graph from a shell — claim, read the notes, leave notes, finish, and what next's exit status says to do — to paste into AGENTS.md or CLAUDE.md (taskgraph prime >> AGENTS.md). taskgraph mcp sends its tools' own guide as the server's instructions.", simple(cmdPrime)},
		{"completion", "bash|zsh|fish", "print the shell completion script", "Print the completion script of a shell, made from the commands and flags of this binary: bash (source it, or put it in /etc/bash_completion.d/taskgraph), zsh (put it on $fpath as _taskgraph) or fish (put it in ~/.config/fish/completions/taskgraph.fish).", simple(cmdCompletion)},
		{"man", "DIR", "write the man pages into DIR", "Write the man pages, taskgraph(1) and taskgraph-COMMAND(1) for each command, made from the commands and flags of this binary, into DIR (e.g. /usr/local/share/man/man1).", simple(cmdMan)},
		{"merge-file", "BASE OURS THEIRS PATH", "git's merge driver for task files (init registers it)", "git's merge driver for task files, which init registers in a git repository (merge.taskgraph.driver): merges OURS and THEIRS, each changed from BASE, into OURS, field by field — edges and labels as sets, the state by the workflow's order (pending, in progress, then done), text by the later write — without leases or versions. Exit status 1 when a person should look (check then says why), 2 when the files cannot be merged.", simple(cmdMergeFile)},
		{"clean-file", "PATH", "git's clean filter for task files (init registers it)", "git's clean filter for task files, which init registers in a git repository (filter.taskgraph.clean): copies stdin to stdout without the lease and the version, so that lease renewals leave the working tree clean.", simple(cmdCleanFile)},
	}
	commands = make(map[string]command, len(commandTable))
	for _, c := range commandTable {
		commands[c.name] = c
	}
}

func simple(f func(e *env) error) func(fs *flag.FlagSet) func(e *env) error {
	return func(*flag.FlagSet) func(e *env) error { return f }
}

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// noGraphError says that there is no task graph to use.
type noGraphError struct{ msg string }

func (n noGraphError) Error() string { return n.msg }

// heldError is a task someone else holds, with what the user can do.
type heldError struct {
	err  error
	hint string
}

func (h heldError) Error() string { return h.err.Error() + "\nhint: " + h.hint }

func (h heldError) Unwrap() error { return h.err }

// errQuiet ends a command with an exit status and no message.
type errQuiet struct{ code int }

func (e errQuiet) Error() string { return "" }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" || args[0] == "help" && len(args) == 1 {
		fmt.Fprint(stdout, overview())
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	args = commandFirst(args)
	name := args[0]
	if strings.HasPrefix(name, "-") && name != "-" {
		// Flags and no command: taskgraph --owner x --help, or
		// taskgraph --owner x.
		if slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "--help" || a == "-help" }) {
			fmt.Fprint(stdout, overview())
			return exitOK
		}
		fmt.Fprintf(stderr, "taskgraph: no command after %s\nRun 'taskgraph help' for usage.\n", strings.Join(args, " "))
		return exitUsage
	}
	if name == "help" {
		if name = helpTopic(args[1:]); name == "" {
			fmt.Fprint(stdout, overview()) // taskgraph --owner x help
			return exitOK
		}
		args = []string{name, "--help"}
	}
	cmd, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "taskgraph: unknown command %q\nRun 'taskgraph help' for usage.\n", name)
		return exitUsage
	}
	e, do := newEnv(ctx, name, cmd, stdin, stdout, stderr)
	pos, err := parseInterspersed(e.fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, commandHelp(cmd))
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s\nusage: %s\nRun 'taskgraph help %s' for details.\n", longFlags(err.Error()), usageLine(name, cmd), name)
		return exitUsage
	}
	e.args, e.given = pos, args[1:]
	e.settle()
	if logger, err = newLogger(stderr); err != nil {
		return exitCode(stderr, name, cmd, usageError{err.Error()})
	}
	if err := e.resolveFlagIDs(); err != nil {
		return exitCode(stderr, name, cmd, err)
	}
	return exitCode(stderr, name, cmd, do(e))
}

// newEnv returns the env of command name, its flags defined (those of
// every command, then its own) but not parsed, and the function that runs
// it.
func newEnv(ctx context.Context, name string, cmd command, stdin io.Reader, stdout, stderr io.Writer) (*env, func(e *env) error) {
	fs := flag.NewFlagSet("taskgraph "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // run reports parse errors, and prints help
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, fs: fs}
	defineGlobalFlags(fs, e)
	do := cmd.flags(fs)
	fs.Usage = func() {}
	return e, do
}

// settle completes e once its flags are parsed: which of them were given,
// and the environment's values and the defaults of the others.
func (e *env) settle() {
	given := map[string]bool{}
	e.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["dir"] {
		e.dirFrom = "--dir"
	}
	e.ownerFlag = given["owner"]
	if !given["store"] {
		e.storeURL = os.Getenv("TASKGRAPH_STORE")
	}
	if !given["graph"] {
		e.graph = envOr("TASKGRAPH_GRAPH", "default")
	}
	if !e.ownerFlag {
		e.owner = os.Getenv("TASKGRAPH_OWNER")
	}
	if e.dirFrom == "" {
		if e.dir = os.Getenv("TASKGRAPH_DIR"); e.dir != "" {
			e.dirFrom = "$TASKGRAPH_DIR"
		}
	}
	e.ownerSet = e.owner != ""
	if !e.ownerSet {
		e.owner = defaultOwner()
	}
	e.color = isTerminal(e.stdout) && os.Getenv("NO_COLOR") == ""
}

// exitCode says what went wrong, if anything, on stderr, and returns the
// exit status for err, which command name returned.
func exitCode(stderr io.Writer, name string, cmd command, err error) int {
	var ue usageError
	var quiet errQuiet
	var ng noGraphError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &quiet):
		return quiet.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "taskgraph %s: %v\nusage: %s\n", name, err, usageLine(name, cmd))
		return exitUsage
	case errAmbiguous(err):
		fmt.Fprintf(stderr, "taskgraph %s: %v\n", name, err)
		return exitUsage
	case errors.As(err, &ng):
		fmt.Fprintf(stderr, "taskgraph %s: %v\n", name, err)
		return exitNoGraph
	case errors.Is(err, taskgraph.ErrBlocked), errors.Is(err, taskgraph.ErrClaimed), errors.Is(err, taskgraph.ErrNoReady),
		errors.Is(err, taskgraph.ErrLimited): // a label at its limit: wait for a task of it to finish
		fmt.Fprintf(stderr, "taskgraph %s: %s\n", name, describe(err))
		return exitUnavailable
	default:
		fmt.Fprintf(stderr, "taskgraph %s: %s\n", name, describe(err))
		return exitError
	}
}

// idListText matches an id list as fmt prints a slice, "[1 2 3]".
var idListText = regexp.MustCompile(`\[(\d+(?: \d+)+)\]`)

// describe words an error for a person: id lists as everywhere else
// ("[1, 2]"), the options of this command instead of the library's, and
// a task's status that does not allow the command as a plain sentence
// ("task 1 is pending, …", not "status: task 1 is pending, …": the
// user gave no status).
func describe(err error) string {
	var be *taskgraph.BlockedError
	if errors.As(err, &be) && err.Error() == be.Error() {
		s := fmt.Sprintf("task %d is blocked by %s", be.ID, taskview.FormatIDs(be.By))
		if len(be.Missing) > 0 {
			s += fmt.Sprintf(" (missing: %s)", taskview.FormatIDs(be.Missing))
		}
		if len(be.OutOfOrder) > 0 {
			s += fmt.Sprintf(" (completed before their own blockers, so unfinished until those are: %s; see taskgraph check)", taskview.FormatIDs(be.OutOfOrder))
		}
		return s
	}
	var inv *taskgraph.InvalidError
	if errors.As(err, &inv) && err.Error() == inv.Error() && inv.Field == "status" && strings.HasPrefix(inv.Reason, "task ") {
		err = errors.New(inv.Reason)
	}
	// The library's errors begin "taskgraph: "; the line already begins
	// "taskgraph CMD: ".
	s := idListText.ReplaceAllStringFunc(strings.TrimPrefix(err.Error(), "taskgraph: "), func(m string) string {
		return strings.ReplaceAll(m, " ", ", ")
	})
	return strings.NewReplacer("or delete with taskgraph.Detach()", "or delete with --detach",
		"use Claim, or set Owner in the same patch", "use taskgraph claim",
		"open it once without WithoutCreate (or call Migrate) to migrate it", "run `taskgraph init` with the same --store to migrate it").Replace(s)
}

// helpTopic returns the command `taskgraph help` is asked about, the
// first of args that is neither a flag nor a flag's value, or "" if there
// is none (`taskgraph --owner x help`).
func helpTopic(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return a
		}
		if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && valueFlags()[name] {
			i++ // --owner NAME
		}
	}
	return ""
}

// longFlag matches a flag name where Go's flag package writes it with one
// dash: at the start of a line of PrintDefaults, and in its errors.
var longFlag = regexp.MustCompile(`(?m)(^  |defined: |argument: |for flag |for )-([a-z])`)

// longFlags writes the flag names in s, help or a flag error of the flag
// package, as the command line takes them: --after, not -after.
func longFlags(s string) string { return longFlag.ReplaceAllString(s, "$1--$2") }

// commandFirst moves flags given before the command after it, so that
// `taskgraph --owner x claim 1` works like `taskgraph claim --owner x 1`:
// right after its name, before its arguments, so that a flag of the
// command left without its value at the end (`taskgraph --dir D add x
// --after`) cannot take a global flag as its value.
func commandFirst(args []string) []string {
	i := 0
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
		name := strings.TrimLeft(args[i], "-")
		if !strings.Contains(name, "=") && valueFlags()[name] {
			i += 2 // --dir DIR, --owner NAME
		} else {
			i++
		}
	}
	if i == 0 || i >= len(args) {
		return args
	}
	return slices.Concat(args[i:i+1], args[:i], args[i+1:])
}

// parseInterspersed parses flags wherever they appear among the arguments,
// as git and go do: `add "api" --after 1` works. An argument that reads as
// a negative number or duration (-1, -5m) and is not a flag's value is an
// argument, not an unknown flag, so that `renew 1 -5m` is refused for the
// negative lease it asks for.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos, after []string
	if i := slices.Index(args, "--"); i >= 0 {
		args, after = args[:i], args[i+1:]
	}
	for {
		head, rest := args, []string(nil)
		if i := negativeArg(fs, args); i >= 0 {
			head, rest = args[:i], args[i:]
		}
		if err := fs.Parse(head); err != nil {
			return nil, err
		}
		if fs.NArg() > 0 {
			// Stopped at an argument: take it, and go on after it.
			pos = append(pos, fs.Arg(0))
			args = append(slices.Clone(fs.Args()[1:]), rest...)
			continue
		}
		if len(rest) == 0 {
			return append(pos, after...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// negativeNumber matches an argument such as -1, -1.5 or -30m.
var negativeNumber = regexp.MustCompile(`^-\.?[0-9]`)

// negativeArg returns the index of the first argument that reads as a
// negative number and is not the value of the flag before it, or -1.
func negativeArg(fs *flag.FlagSet, args []string) int {
	value := false // the argument is the value of the flag before it
	for i, a := range args {
		if value {
			value = false
			continue
		}
		if negativeNumber.MatchString(a) {
			return i
		}
		name, ok := strings.CutPrefix(a, "-")
		if !ok || name == "" || strings.Contains(name, "=") {
			continue
		}
		name = strings.TrimPrefix(name, "-")
		if f := fs.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				value = true
			}
		}
	}
	return -1
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// defaultOwner names the person at the keyboard, user@host: the same in
// every shell, Makefile step and agent tool call of theirs on this
// machine, so that a claim made in one shell can be renewed or completed
// from another.
func defaultOwner() string {
	name := os.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" {
		name = "user"
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	return name + "@" + host
}

// whoHint says who the user is and how to be someone else; force names
// what --force would do, if the command has it.
func (e *env) whoHint(force string) string {
	var s string
	if e.ownerSet {
		s = fmt.Sprintf("you are %q (from --owner or $TASKGRAPH_OWNER)", e.owner)
	} else {
		s = fmt.Sprintf("you are %q (the default: --owner NAME or $TASKGRAPH_OWNER sets who you are)", e.owner)
	}
	if force != "" {
		s += "; --force " + force + " anyway"
	}
	return s
}

// held adds whoHint to an error that says a task is someone else's.
func (e *env) held(err error, force string) error {
	if errors.Is(err, taskgraph.ErrClaimed) {
		return heldError{err, e.whoHint(force)}
	}
	return err
}

// release is the last version of taskgraph released, as CHANGELOG.md
// names it: bump it with each release. A binary that Go stamped with a
// module version (go install …@v0.1.0, or a build of a tagged checkout,
// as scripts/release makes) reports that instead.
const release = "v0.1.0"

// version returns the version of taskgraph the binary was built from.
func version() string {
	bi, _ := debug.ReadBuildInfo()
	return versionOf(bi)
}

// versionOf returns the version of the build bi describes: the module
// version Go stamped, a tag or, for an untagged commit, a pseudo-version
// (v0.0.0-20261204120000-abcdef123456); else, for a build that recorded
// none (a linked worktree, -buildvcs=false, a tree without git), a
// development version after release, never release itself: the build
// holds changes that release does not. It is release with the patch
// number bumped and "-dev" (as a pseudo-version bumps it), and the
// revision if the build recorded one: v0.1.1-dev+abcdef123456.
func versionOf(bi *debug.BuildInfo) string {
	if bi != nil && strings.HasPrefix(bi.Main.Version, "v") {
		return bi.Main.Version
	}
	dot := strings.LastIndex(release, ".")
	patch, _ := strconv.Atoi(release[dot+1:])
	v := fmt.Sprintf("%s.%d-dev", release[:dot], patch+1)
	if rev := revisionOf(bi); rev != "" {
		v += "+" + strings.ReplaceAll(rev, "+", ".") // semver build metadata: one "+"
	}
	return v
}

// revision returns the VCS revision the build recorded (revisionOf).
func revision() string {
	bi, _ := debug.ReadBuildInfo()
	return revisionOf(bi)
}

// revisionOf returns the VCS revision build bi recorded, "+dirty" if the
// tree was modified, or "" if it recorded none (go install of a module
// version).
func revisionOf(bi *debug.BuildInfo) string {
	if bi == nil {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev[:min(12, len(rev))] + modified
}

func cmdVersion(e *env) error {
	if err := e.wantArgs(0); err != nil {
		return err
	}
	if e.json {
		return e.printJSON(struct {
			Version  string `json:"version"`
			Go       string `json:"go"`
			Revision string `json:"revision,omitempty"`
		}{version(), runtime.Version(), revision()})
	}
	built := runtime.Version()
	if rev := revision(); rev != "" {
		built += ", " + rev
	}
	fmt.Fprintf(e.stdout, "taskgraph %s (%s)\n", version(), built)
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// usageLine is a command's usage: its name and its arguments, if any.
func usageLine(name string, cmd command) string {
	return strings.TrimSpace("taskgraph " + name + " " + cmd.args)
}

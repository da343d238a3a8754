// What the command line says about itself, made from the one command
// table (commandTable) and the flags each command defines: the overview
// (taskgraph help), each command's help, docs/cli.md's reference, the man
// pages and the shell completions. None is written by hand, so none can
// omit a command or a flag: TestReferenceMatchesTheTable checks the
// copy in docs/cli.md.

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// exitStatus is one exit status of the command line and what it means.
type exitStatus struct {
	code    int
	meaning string
}

// exitStatuses is every exit status, for the overview, the reference and
// the man page.
var exitStatuses = []exitStatus{
	{exitOK, "success"},
	{exitError, "error"},
	{exitUsage, "usage: the command line is wrong"},
	{exitUnavailable, "wait: the task is blocked, held by someone else or held back by a label's limit, or no task is ready now; try again later (next --wait waits)"},
	{exitNoGraph, "no task graph was found: run taskgraph init"},
	{exitFinished, "next: the graph is finished, nothing left to do"},
	{exitStalled, "next: finished, but tasks failed or are stranded: stop, a person must look"},
}

// defineGlobalFlags defines the flags of every command on fs, into e.
// Their defaults do not depend on the environment, so that the help and
// the reference read the same everywhere: env.settle takes the
// environment's values for the flags not given.
func defineGlobalFlags(fs *flag.FlagSet, e *env) {
	fs.StringVar(&e.dir, "dir", "", "task `DIR`ectory (default $TASKGRAPH_DIR, else the nearest .tasks here or in a parent; in a linked git worktree, the main worktree's)")
	fs.StringVar(&e.storeURL, "store", "", "PostgreSQL `URL`, or a hub's https://HOST[:PORT] (token in $TASKGRAPH_TOKEN), to use instead of a directory (default $TASKGRAPH_STORE)")
	fs.StringVar(&e.graph, "graph", "default", "graph `NAME` in the --store database (default $TASKGRAPH_GRAPH, else default)")
	fs.StringVar(&e.owner, "owner", "", "who you are, `NAME` (default $TASKGRAPH_OWNER, else user@host)")
	fs.BoolVar(&e.json, "json", false, "machine-readable output")
}

// flagsOf returns the flags of every command (global) or, for a command,
// its own, in the order of their names.
func flagsOf(c *command) []*flag.Flag {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	if c == nil {
		defineGlobalFlags(fs, &env{})
	} else {
		c.flags(fs)
	}
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	return flags
}

// isBool reports whether flag f takes no value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// valueFlags returns the names of the flags that take a value, of any
// command, for commandFirst and helpTopic, which read a command line
// before they know its command.
var valueFlags = sync.OnceValue(func() map[string]bool {
	names := map[string]bool{}
	for _, c := range append([]*command{nil}, tablePointers()...) {
		for _, f := range flagsOf(c) {
			if !isBool(f) {
				names[f.Name] = true
			}
		}
	}
	return names
})

// tablePointers returns a pointer to each command of the table.
func tablePointers() []*command {
	ps := make([]*command, len(commandTable))
	for i := range commandTable {
		ps[i] = &commandTable[i]
	}
	return ps
}

// printDefaults returns the flags as the flag package lists them, with
// the names as the command line takes them (--after, not -after).
func printDefaults(flags []*flag.Flag) string {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	for _, f := range flags {
		fs.Var(f.Value, f.Name, f.Usage)
	}
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return longFlags(b.String())
}

// commandHelp is `taskgraph help NAME`: the usage line, the help, and
// the command's flags, then those of every command.
func commandHelp(c command) string {
	s := fmt.Sprintf("usage: %s\n\n%s\n\n", usageLine(c.name, c), c.help)
	if own := flagsOf(&c); len(own) > 0 {
		s += "Flags:\n" + printDefaults(own)
	}
	return s + "\nFlags for every command:\n" + printDefaults(flagsOf(nil))
}

// overview is `taskgraph help`: every command with its arguments, its
// summary and its flags' names, the flags of every command and the exit
// statuses.
func overview() string {
	var b strings.Builder
	b.WriteString("taskgraph is a durable task graph shared by agents and people.\n\nUsage:\n\n\ttaskgraph <command> [arguments] [flags]\n\nThe commands are:\n\n")
	const col = 25
	for _, c := range commandTable {
		head := strings.TrimSpace(c.name + " " + c.args)
		if len(head) >= col-1 {
			fmt.Fprintf(&b, "\t%s\n\t%-*s%s\n", head, col, "", c.summary)
		} else {
			fmt.Fprintf(&b, "\t%-*s%s\n", col, head, c.summary)
		}
		var names []string
		for _, f := range flagsOf(&c) {
			names = append(names, "--"+f.Name)
		}
		for _, line := range wrapWords(names, 72-col) {
			fmt.Fprintf(&b, "\t%-*s%s\n", col, "", line)
		}
	}
	b.WriteString("\nFlags for every command:\n\n")
	for _, f := range flagsOf(nil) {
		name, usage := flag.UnquoteUsage(f)
		if isBool(f) {
			name = ""
		}
		lines := wrapWords(strings.Fields(usage), 72-15)
		fmt.Fprintf(&b, "\t%-15s%s\n", strings.TrimSpace("--"+f.Name+" "+name), lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "\t%-15s%s\n", "", l)
		}
	}
	b.WriteString("\ndone, fail, cancel, release and delete refuse a task someone else holds\nunless --force is given. Use \"taskgraph help <command>\" for more about a command.\n\nExit status:\n\n")
	for _, s := range exitStatuses {
		lines := wrapWords(strings.Fields(s.meaning), 72-3)
		fmt.Fprintf(&b, "\t%d  %s\n", s.code, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "\t   %s\n", l)
		}
	}
	return b.String()
}

// wrapWords joins words with spaces into lines of at most width bytes.
func wrapWords(words []string, width int) []string {
	var lines []string
	line := ""
	for _, w := range words {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		line = strings.TrimSpace(line + " " + w)
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// Markers of the part of docs/cli.md made by markdownReference.
const (
	referenceBegin = "<!-- BEGIN taskgraph reference: made from the command table (cmd/taskgraph/reference.go); go test ./cmd/taskgraph -run TestReferenceMatchesTheTable -update rewrites it -->\n"
	referenceEnd   = "<!-- END taskgraph reference -->\n"
)

// markdownReference is the reference of docs/cli.md: each command's
// usage, help and flags, the flags of every command and the exit
// statuses.
func markdownReference() string {
	var b strings.Builder
	b.WriteString("## Reference\n\n")
	for _, c := range commandTable {
		fmt.Fprintf(&b, "### %s\n\n```\n%s\n```\n\n%s\n\n", c.name, usageLine(c.name, c), c.help)
		if own := flagsOf(&c); len(own) > 0 {
			fmt.Fprintf(&b, "```\n%s```\n\n", printDefaults(own))
		}
	}
	fmt.Fprintf(&b, "### Flags for every command\n\n```\n%s```\n\n### Exit status\n\n| status | meaning |\n|---|---|\n", printDefaults(flagsOf(nil)))
	for _, s := range exitStatuses {
		fmt.Fprintf(&b, "| %d | %s |\n", s.code, s.meaning)
	}
	return b.String()
}

// roffEscape makes s text for a man page: backslashes and a leading dot
// or quote escaped, dashes as the minus sign they are in flags, and
// other characters than ASCII by their code points.
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
			lines[i] = `\&` + l
		}
	}
	s = strings.Join(lines, "\n")
	var b strings.Builder
	for _, r := range s {
		if r > 127 { // groff reads ASCII: a dash, an ellipsis by its code point
			fmt.Fprintf(&b, `\[u%04X]`, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// roffFlags lists flags as a man page's tagged paragraphs.
func roffFlags(b *strings.Builder, flags []*flag.Flag) {
	for _, f := range flags {
		name, usage := flag.UnquoteUsage(f)
		head := `\fB\-\-` + roffEscape(f.Name) + `\fR`
		if !isBool(f) {
			head += ` \fI` + roffEscape(name) + `\fR`
		}
		fmt.Fprintf(b, ".TP\n%s\n%s\n", head, roffEscape(usage))
	}
}

// manPages returns the man pages, by file name: taskgraph(1), the
// overview, and taskgraph-COMMAND(1) for each command.
func manPages(date time.Time) map[string]string {
	header := func(b *strings.Builder, title, what string) {
		fmt.Fprintf(b, ".TH %s 1 %q taskgraph %q\n.SH NAME\n%s \\- %s\n", strings.ToUpper(roffEscape(title)), date.Format("2006-01-02"), version(), roffEscape(title), roffEscape(what))
	}
	pages := map[string]string{}
	var top strings.Builder
	header(&top, "taskgraph", "a durable task graph shared by agents and people")
	top.WriteString(".SH SYNOPSIS\n\\fBtaskgraph\\fR \\fIcommand\\fR [\\fIarguments\\fR] [\\fIflags\\fR]\n.SH COMMANDS\n")
	for _, c := range commandTable {
		fmt.Fprintf(&top, ".TP\n\\fBtaskgraph\\-%s\\fR(1)\n%s\n", roffEscape(c.name), roffEscape(c.summary))
	}
	top.WriteString(".SH OPTIONS\nThese flags are taken by every command, before or after it.\n")
	roffFlags(&top, flagsOf(nil))
	top.WriteString(".SH EXIT STATUS\n")
	for _, s := range exitStatuses {
		fmt.Fprintf(&top, ".TP\n%d\n%s\n", s.code, roffEscape(s.meaning))
	}
	pages["taskgraph.1"] = top.String()
	for _, c := range commandTable {
		var b strings.Builder
		header(&b, "taskgraph-"+c.name, c.summary)
		fmt.Fprintf(&b, ".SH SYNOPSIS\n\\fBtaskgraph %s\\fR %s\n.SH DESCRIPTION\n%s\n", roffEscape(c.name), roffEscape(c.args), roffEscape(c.help))
		if own := flagsOf(&c); len(own) > 0 {
			b.WriteString(".SH OPTIONS\n")
			roffFlags(&b, own)
		}
		b.WriteString(".SH SEE ALSO\n\\fBtaskgraph\\fR(1), for the flags of every command and the exit statuses.\n")
		pages["taskgraph-"+c.name+".1"] = b.String()
	}
	return pages
}

// cmdMan writes the man pages into the directory its argument names.
func cmdMan(e *env) error {
	if err := e.wantArgs(1); err != nil {
		return usagef("want the DIRectory to write the man pages in (e.g. /usr/local/share/man/man1)")
	}
	pages := manPages(time.Now())
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range pages {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(e.args[0], n), []byte(pages[n]), 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "Wrote %d man pages in %s\n", len(names), e.args[0])
	return nil
}

// shellWord matches what a shell script may hold unquoted.
var shellWord = regexp.MustCompile(`^[a-z0-9-]+$`)

// completion writes the completion script for shell: the commands, and
// each command's flags and those of every command.
func completion(w io.Writer, shell string) error {
	global := flagsOf(nil)
	var names []string
	own := map[string][]*flag.Flag{}
	for _, c := range commandTable {
		names = append(names, c.name)
		own[c.name] = flagsOf(&c)
	}
	dashed := func(flags []*flag.Flag) string {
		var s []string
		for _, f := range flags {
			s = append(s, "--"+f.Name)
		}
		return strings.Join(s, " ")
	}
	for _, n := range names {
		if !shellWord.MatchString(n) {
			return fmt.Errorf("command %q cannot be written unquoted in a shell script", n)
		}
	}
	var b strings.Builder
	switch shell {
	case "bash":
		b.WriteString("# bash completion for taskgraph: source it, or put it in /etc/bash_completion.d/taskgraph\n# (made by `taskgraph completion bash` from its command table).\n_taskgraph() {\n\tlocal cur=${COMP_WORDS[COMP_CWORD]} cmd= i\n")
		fmt.Fprintf(&b, "\tlocal value_flags=' %s '\n", strings.Join(slices.Sorted(func(yield func(string) bool) {
			for n := range valueFlags() {
				if !yield("--" + n) {
					return
				}
			}
		}), " "))
		b.WriteString("\tfor ((i = 1; i < COMP_CWORD; i++)); do\n\t\tcase ${COMP_WORDS[i]} in\n\t\t-*) [[ $value_flags == *\" ${COMP_WORDS[i]} \"* ]] && ((i++)) ;;\n\t\t*) cmd=${COMP_WORDS[i]}; break ;;\n\t\tesac\n\tdone\n")
		fmt.Fprintf(&b, "\tlocal flags='%s'\n\tcase $cmd in\n", dashed(global))
		for _, n := range names {
			if len(own[n]) > 0 {
				fmt.Fprintf(&b, "\t%s) flags+=' %s' ;;\n", n, dashed(own[n]))
			}
		}
		fmt.Fprintf(&b, "\tesac\n\tif [[ -z $cmd && $cur != -* ]]; then\n\t\tCOMPREPLY=($(compgen -W '%s' -- \"$cur\"))\n\telif [[ $cur == -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n\telse\n\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n\tfi\n}\ncomplete -F _taskgraph taskgraph\n", strings.Join(names, " "))
	case "zsh":
		b.WriteString("#compdef taskgraph\n# zsh completion for taskgraph: put it on $fpath as _taskgraph\n# (made by `taskgraph completion zsh` from its command table).\n_taskgraph() {\n\tlocal -a commands flags\n\tcommands=(\n")
		for _, c := range commandTable {
			fmt.Fprintf(&b, "\t\t%s\n", zshQuote(c.name+":"+c.summary))
		}
		b.WriteString("\t)\n\tif (( CURRENT == 2 )); then\n\t\t_describe command commands\n\t\treturn\n\tfi\n\tflags=(\n")
		for _, f := range global {
			fmt.Fprintf(&b, "\t\t%s\n", zshSpec(f))
		}
		b.WriteString("\t)\n\tcase $words[2] in\n")
		for _, n := range names {
			if len(own[n]) == 0 {
				continue
			}
			fmt.Fprintf(&b, "\t%s) flags+=(", n)
			for _, f := range own[n] {
				fmt.Fprintf(&b, " %s", zshSpec(f))
			}
			b.WriteString(" ) ;;\n")
		}
		b.WriteString("\tesac\n\t_arguments $flags '*:argument:_files'\n}\nif [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n\t_taskgraph \"$@\"\nelse\n\tcompdef _taskgraph taskgraph\nfi\n")
	case "fish":
		b.WriteString("# fish completion for taskgraph: put it in ~/.config/fish/completions/taskgraph.fish\n# (made by `taskgraph completion fish` from its command table).\ncomplete -c taskgraph -f\n")
		fmt.Fprintf(&b, "set -l commands %s\n", strings.Join(names, " "))
		for _, c := range commandTable {
			fmt.Fprintf(&b, "complete -c taskgraph -n \"not __fish_seen_subcommand_from $commands\" -a %s -d %s\n", c.name, fishQuote(c.summary))
		}
		for _, f := range global {
			fmt.Fprintf(&b, "complete -c taskgraph -l %s -d %s%s\n", f.Name, fishQuote(flagSummary(f)), fishValue(f))
		}
		for _, n := range names {
			for _, f := range own[n] {
				fmt.Fprintf(&b, "complete -c taskgraph -n \"__fish_seen_subcommand_from %s\" -l %s -d %s%s\n", n, f.Name, fishQuote(flagSummary(f)), fishValue(f))
			}
		}
	default:
		return usagef("want the shell: bash, zsh or fish")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// flagSummary is a flag's help up to its first parenthesis, colon or
// semicolon, if that leaves a few words: for a completion menu.
func flagSummary(f *flag.Flag) string {
	_, usage := flag.UnquoteUsage(f)
	if i := strings.IndexAny(usage, "(;:"); i > 0 && strings.Count(usage[:i], " ") >= 2 {
		usage = usage[:i]
	}
	return strings.TrimSpace(usage)
}

// zshQuote quotes s for zsh in single quotes; the text of a _describe
// entry after its first ":" has its own ":" escaped.
func zshQuote(s string) string {
	if name, text, ok := strings.Cut(s, ":"); ok {
		s = name + ":" + strings.ReplaceAll(text, ":", `\:`)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// zshSpec is flag f as _arguments takes it: --name[what it does], and
// :VALUE: for one that takes a value (files for those that name one).
func zshSpec(f *flag.Flag) string {
	text := strings.NewReplacer("[", `\[`, "]", `\]`, ":", `\:`).Replace(flagSummary(f))
	spec := "--" + f.Name + "[" + text + "]"
	if !isBool(f) {
		name, _ := flag.UnquoteUsage(f)
		action := " "
		if fishValue(f) == " -r -F" {
			action = "_files"
		}
		spec += ":" + name + ":" + action
	}
	return "'" + strings.ReplaceAll(spec, "'", `'\''`) + "'"
}

// fishQuote quotes s for fish in single quotes.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// fishValue is what fish needs to know of a flag that takes a value: that
// it takes one, and files for the flags that name one.
func fishValue(f *flag.Flag) string {
	if isBool(f) {
		return ""
	}
	switch f.Name {
	case "dir", "from", "claude-code":
		return " -r -F"
	}
	return " -x"
}

// cmdCompletion prints the completion script of a shell.
func cmdCompletion(e *env) error {
	if len(e.args) != 1 {
		return usagef("want the shell: bash, zsh or fish")
	}
	return completion(e.stdout, e.args[0])
}

package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite docs/cli.md's reference from the command table")

// docsCLI is docs/cli.md, which holds the reference made from the table.
const docsCLI = "../../docs/cli.md"

// docs/cli.md's reference is the one the command table makes: a command,
// a flag or a help text changed in the table and not in the docs fails
// here (go test ./cmd/taskgraph -run TestReferenceMatchesTheTable -update
// rewrites it).
func TestReferenceMatchesTheTable(t *testing.T) {
	data, err := os.ReadFile(docsCLI)
	require.NoError(t, err)
	doc := string(data)
	begin, end := strings.Index(doc, referenceBegin), strings.Index(doc, referenceEnd)
	require.True(t, begin >= 0 && end > begin, "docs/cli.md has no reference between %q and %q", referenceBegin, referenceEnd)
	want := markdownReference()
	if *update {
		doc = doc[:begin+len(referenceBegin)] + want + doc[end:]
		require.NoError(t, os.WriteFile(docsCLI, []byte(doc), 0o644))
		return
	}
	assert.Equal(t, want, doc[begin+len(referenceBegin):end],
		"docs/cli.md's reference is not the command table's: run go test ./cmd/taskgraph -run TestReferenceMatchesTheTable -update")
	for _, s := range exitStatuses {
		assert.Contains(t, doc, fmt.Sprintf("| %d | ", s.code), "exit status %d is in the reference", s.code)
	}
}

// taskgraph --help lists every command and every flag of each, and
// `help COMMAND` every flag of the command: nothing is left out of them.
func TestHelpListsEveryCommandAndFlag(t *testing.T) {
	dir := t.TempDir()
	overview := ok(t, dir, "--help")
	for _, c := range commandTable {
		assert.Regexp(t, `(?m)^\t`+regexp.QuoteMeta(strings.TrimPrefix(usageLine(c.name, c), "taskgraph "))+`( |\n)`, overview, "--help lists %s", c.name)
		help := ok(t, dir, "help", c.name)
		for _, f := range flagsOf(&c) {
			assert.Contains(t, overview, "--"+f.Name, "--help names %s's --%s", c.name, f.Name)
			assert.Regexp(t, `\n  --`+f.Name+`( |\n)`, help, "help %s lists --%s", c.name, f.Name)
		}
	}
	for _, name := range []string{"note", "history", "limit", "completion", "man"} {
		assert.Contains(t, overview, "\n\t"+name+" ")
	}
	for _, f := range []string{"--parent", "--max-attempts", "--backoff", "--not-before", "--due"} {
		assert.Contains(t, ok(t, dir, "help", "add"), "\n  "+f+" ")
	}
	for code := range 7 {
		assert.Regexp(t, fmt.Sprintf(`\n\t%d  \S`, code), overview, "--help says what exit status %d means", code)
	}
}

// The bash completion, run by bash, completes the commands, and each
// command's flags with those of every command, past global flags given
// before the command and their values.
func TestBashCompletion(t *testing.T) {
	script := ok(t, t.TempDir(), "completion", "bash")
	file := filepath.Join(t.TempDir(), "taskgraph.bash")
	require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
	complete := func(words ...string) []string {
		t.Helper()
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		out, err := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=(taskgraph `+strings.Join(quoted, " ")+`); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _taskgraph; printf '%s\n' "${COMPREPLY[@]}"`, "bash", file).CombinedOutput()
		require.NoError(t, err, "%s", out)
		return strings.Fields(string(out))
	}
	assert.Equal(t, []string{"next"}, complete("nex"))
	assert.ElementsMatch(t, []string{"note"}, complete("no"))
	assert.ElementsMatch(t, []string{"--max-attempts", "--max-runtime"}, complete("add", "x", "--max"))
	assert.ElementsMatch(t, []string{"--parent"}, complete("--dir", "d", "add", "--pa"))
	assert.ElementsMatch(t, []string{"--owner", "--owned-by"}, complete("list", "--ow"))
	assert.Empty(t, complete("claim", "--max"), "claim has no --max-attempts")
	for _, c := range commandTable {
		got := complete(c.name, "--")
		for _, f := range append(flagsOf(&c), flagsOf(nil)...) {
			assert.Contains(t, got, "--"+f.Name, "%s --<TAB>", c.name)
		}
	}
	r := tg(t, t.TempDir(), "completion", "tcsh")
	assert.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "want the shell: bash, zsh or fish")
}

// The zsh and fish completions parse in their shells and name every
// command and flag.
func TestZshAndFishCompletions(t *testing.T) {
	for _, shell := range []string{"zsh", "fish"} {
		t.Run(shell, func(t *testing.T) {
			script := ok(t, t.TempDir(), "completion", shell)
			for _, c := range commandTable {
				assert.Contains(t, script, c.name)
				for _, f := range flagsOf(&c) {
					assert.Contains(t, script, map[string]string{"zsh": "--", "fish": "-l "}[shell]+f.Name)
				}
			}
			path, err := exec.LookPath(shell)
			if err != nil {
				t.Skipf("%s is not installed: its completion script was checked for every command and flag, but not parsed by %s", shell, shell)
			}
			file := filepath.Join(t.TempDir(), "_taskgraph")
			require.NoError(t, os.WriteFile(file, []byte(script), 0o644))
			out, err := exec.Command(path, "-n", file).CombinedOutput()
			assert.NoError(t, err, "%s -n: %s", shell, out)
			if shell == "zsh" {
				// compinit loads it as the completion of taskgraph.
				out, err = exec.Command(path, "-f", "-c", "autoload -U compinit && compinit -u -D && source "+file+" && print -r -- $_comps[taskgraph]").CombinedOutput()
				require.NoError(t, err, "%s", out)
				assert.Equal(t, "_taskgraph\n", string(out))
			}
			if shell == "fish" {
				// fish answers what it would complete.
				out, err = exec.Command(path, "--no-config", "-c", "source "+file+"; complete -C 'taskgraph add --max'").CombinedOutput()
				require.NoError(t, err, "%s", out)
				assert.Contains(t, string(out), "--max-attempts")
				out, err = exec.Command(path, "--no-config", "-c", "source "+file+"; complete -C 'taskgraph no'").CombinedOutput()
				require.NoError(t, err, "%s", out)
				assert.Contains(t, string(out), "note\t")
			}
		})
	}
}

// taskgraph man writes a page for the command line and one for each
// command, with every flag, and groff formats each without a warning.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	out := ok(t, t.TempDir(), "man", dir)
	assert.Equal(t, fmt.Sprintf("Wrote %d man pages in %s\n", len(commandTable)+1, dir), out)
	groff, groffErr := exec.LookPath("groff")
	for _, c := range append([]command{{name: ""}}, commandTable...) {
		name := "taskgraph.1"
		var flags []*flag.Flag
		if c.name != "" {
			name = "taskgraph-" + c.name + ".1"
			flags = flagsOf(&c)
		} else {
			flags = flagsOf(nil)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		for _, f := range flags {
			assert.Contains(t, string(data), `\fB\-\-`+strings.ReplaceAll(f.Name, "-", `\-`)+`\fR`, "%s documents --%s", name, f.Name)
		}
		if groffErr != nil {
			continue
		}
		cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z", filepath.Join(dir, name))
		msg, err := cmd.CombinedOutput()
		assert.NoError(t, err, "%s", msg)
		assert.Empty(t, string(msg), "groff warns about %s", name)
	}
	if groffErr != nil {
		t.Logf("groff is not installed: the man pages were not formatted (%v)", groffErr)
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// initialize starts taskgraph mcp with args and returns the result of its
// initialize.
func initialize(t *testing.T, dir string, args ...string) map[string]any {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"mcp"}, args...)...)
	cmd.Dir = dir
	cmd.Env = cleanEnv()
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer func() { stdin.Close(); cmd.Wait() }()
	_, err = io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	require.NoError(t, err)
	out := bufio.NewScanner(stdout)
	out.Buffer(make([]byte, 1<<20), 1<<20)
	require.True(t, out.Scan(), "the server stopped: %v", out.Err())
	var m struct{ Result map[string]any }
	require.NoError(t, json.Unmarshal(out.Bytes(), &m), out.Text())
	return m.Result
}

// The MCP server tells the model how to work the graph in its
// instructions: those of the task tools; Claude Code's own tools, which
// it knows, come without them.
func TestMCPInstructions(t *testing.T) {
	dir := project(t)
	assert.Equal(t, agenttools.Instructions, initialize(t, dir)["instructions"])
	assert.Equal(t, agenttools.Instructions, initialize(t, dir, "--tools", "taskgraph,claude-code")["instructions"])
	assert.NotContains(t, initialize(t, dir, "--tools", "claude-code"), "instructions")
}

// taskgraph prime prints the guide, and every command and flag the guide
// names is one the command line has: the guide cannot send an agent to a
// command that is gone.
func TestPrime(t *testing.T) {
	dir := project(t)
	guide := ok(t, dir, "prime")
	assert.Equal(t, primeGuide, guide)
	for _, code := range []string{"0 claimed", "3 nothing ready", "5 finished", "6 finished, but"} {
		assert.Contains(t, strings.Join(strings.Fields(guide), " "), code)
	}
	uses := regexp.MustCompile(`taskgraph ([a-z-]+)((?: [^ \n.;:(]+)*)`).FindAllStringSubmatch(strings.Join(strings.Fields(guide), " "), -1)
	require.NotEmpty(t, uses)
	named := 0
	for _, u := range uses {
		c, ok := commands[u[1]]
		if !ok {
			continue // "taskgraph from anywhere": prose
		}
		named++
		flags := map[string]bool{}
		for _, f := range append(flagsOf(&c), flagsOf(nil)...) {
			flags[f.Name] = true
		}
		for _, word := range strings.Fields(u[2]) {
			if name, isFlag := strings.CutPrefix(word, "--"); isFlag {
				assert.True(t, flags[name], "the guide gives taskgraph %s --%s, which it does not take", u[1], name)
			}
		}
	}
	assert.GreaterOrEqual(t, named, 9, "the guide names the commands of the loop")
}

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// otherNamespace makes a network namespace of its own, joined to this one
// by a veth pair and to nothing else, and returns this side's address on
// the pair and a func that runs a shell script inside it with env. Both
// go when the test ends.
//
// It needs root and iproute2's ip. Not root: the test is skipped, loudly.
// As root (as CI runs), a namespace that cannot be made fails the test:
// a machine that could run it must.
func otherNamespace(t *testing.T) (net.IP, func(env []string, script string) result) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("NETWORK NAMESPACE TEST NOT RUN: it must run as root (it makes a network namespace and a veth pair); run: sudo go test ./cmd/taskgraph -run TestHubOverTLSFromAnotherNetworkNamespace -v")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatalf("running as root, but there is no ip command to make a network namespace (%v): install iproute2", err)
	}
	pid := os.Getpid()
	ns, host, peer := fmt.Sprintf("tg-hub-%d", pid), fmt.Sprintf("tgh%da", pid), fmt.Sprintf("tgh%db", pid)
	subnet := fmt.Sprintf("10.231.%d", pid%250+1)
	ip := func(args ...string) {
		t.Helper()
		out, err := exec.Command("ip", args...).CombinedOutput()
		require.NoError(t, err, "ip %s: %s", strings.Join(args, " "), out)
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() }) // the pair goes with it
	ip("link", "add", host, "type", "veth", "peer", "name", peer)
	t.Cleanup(func() { exec.Command("ip", "link", "del", host).Run() })
	ip("link", "set", peer, "netns", ns)
	ip("addr", "add", subnet+".1/24", "dev", host)
	ip("link", "set", host, "up")
	ip("netns", "exec", ns, "ip", "addr", "add", subnet+".2/24", "dev", peer)
	ip("netns", "exec", ns, "ip", "link", "set", peer, "up")
	ip("netns", "exec", ns, "ip", "link", "set", "lo", "up")
	run := func(env []string, script string) result {
		t.Helper()
		cmd := exec.Command("ip", "netns", "exec", ns, "sh", "-c", script)
		cmd.Env = cleanEnv(env...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
	}
	return net.ParseIP(subnet + ".1"), run
}

// smokeScript is what an agent in a sandbox does with a hub: the command
// line over TLS, trusting the hub's self-signed certificate
// ($SSL_CERT_FILE), and MCP at /mcp with curl. Each step prints "== step"
// and its output; a step that must succeed stops the script if it fails.
const smokeScript = `set -u
step() { echo "== $1"; }
hdr='Content-Type: application/json'
acc='Accept: application/json, text/event-stream'

step "the namespace reaches the hub only through the pair"
ip -brief addr | grep -v '^lo' | tr -s ' '

step add
"$TG" add "smoke over TLS" || exit 11
step next
"$TG" next --json || exit 12
step note
"$TG" note 1 "from another network namespace" || exit 13
step done
"$TG" done 1 --result "smoked" || exit 14
step list
"$TG" list || exit 15

step "a viewer cannot write"
TASKGRAPH_TOKEN="$VIEWER" "$TG" add "not mine" 2>&1; echo "exit $?"

step "without trusting the certificate"
SSL_CERT_FILE=/dev/null SSL_CERT_DIR=/nonexistent "$TG" list 2>&1; echo "exit $?"

step "plain HTTP on the TLS port"
curl -sS --max-time 10 -o /dev/null -w '%{http_code}\n' "http://$HUB/v1/tasks" -H "Authorization: Bearer $TASKGRAPH_TOKEN" 2>&1; echo "exit $?"

step "no token"
curl -sS --max-time 10 --cacert "$CA" -w '\n%{http_code}\n' "https://$HUB/v1/tasks"

step "the board"
curl -sS --max-time 10 --cacert "$CA" -o /dev/null -w '%{http_code}\n' "https://$HUB/" || exit 16

step "mcp initialize"
curl -sS --max-time 10 --cacert "$CA" -D headers -H "$hdr" -H "$acc" -H "Authorization: Bearer $TASKGRAPH_TOKEN" "https://$HUB/mcp" \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}' || exit 17
echo
session=$(grep -i '^mcp-session-id:' headers | tr -d '\r' | cut -d' ' -f2)
[ -n "$session" ] || exit 18
curl -sS --max-time 10 --cacert "$CA" -o /dev/null -H "$hdr" -H "$acc" -H "Authorization: Bearer $TASKGRAPH_TOKEN" \
  -H "Mcp-Session-Id: $session" -H "Mcp-Protocol-Version: 2025-06-18" "https://$HUB/mcp" \
  -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' || exit 19
step "mcp task_list"
curl -sS --max-time 10 --cacert "$CA" -H "$hdr" -H "$acc" -H "Authorization: Bearer $TASKGRAPH_TOKEN" \
  -H "Mcp-Session-Id: $session" -H "Mcp-Protocol-Version: 2025-06-18" "https://$HUB/mcp" \
  -d '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"task_list","arguments":{}}}' || exit 20
echo
step end
`

// steps splits the script's output into its steps, by name.
func steps(out string) map[string]string {
	m := map[string]string{}
	name := ""
	for _, line := range strings.SplitAfter(out, "\n") {
		if n, ok := strings.CutPrefix(line, "== "); ok {
			name = strings.TrimSpace(n)
			continue
		}
		m[name] += line
	}
	return m
}

// A scripted smoke test of a hub over TLS with a self-signed certificate,
// from another network namespace — another host, as far as the network
// goes: the hub listens on its side of a veth pair (not loopback, so with
// --allow-remote and TLS), and a shell in the namespace, trusting the
// certificate, adds, claims, notes and completes a task with the command
// line, as the token's name, and lists the tasks over MCP at /mcp; a
// viewer's token cannot write; without trusting the certificate, over
// plain HTTP, or without a token, nothing is served. The graph beside the
// files holds what the namespace did.
func TestHubOverTLSFromAnotherNetworkNamespace(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("the smoke script needs curl (%v): install it", err)
	}
	hostIP, inNamespace := otherNamespace(t)
	dir := project(t)
	agent := strings.TrimSpace(ok(t, dir, "token", "add", "builder"))
	viewer := strings.TrimSpace(ok(t, dir, "token", "add", "watcher", "--role", "viewer"))
	certFile, keyFile, _ := selfSignedFor(t, hostIP)
	_, port, err := net.SplitHostPort(freeAddr(t))
	require.NoError(t, err)
	hub := net.JoinHostPort(hostIP.String(), port)
	startHub(t, dir, hub, "--allow-remote", "--tls-cert", certFile, "--tls-key", keyFile)

	r := inNamespace([]string{
		"TG=" + binary, "HUB=" + hub, "CA=" + certFile, "VIEWER=" + viewer, "SSL_CERT_FILE=" + certFile,
		"TASKGRAPH_STORE=https://" + hub, "TASKGRAPH_TOKEN=" + agent, "HOME=" + t.TempDir(),
	}, "cd "+t.TempDir()+" && "+smokeScript)
	t.Logf("the smoke script, in the namespace:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Equal(t, 0, r.code, "the script stopped: %s", r.stderr)
	s := steps(r.stdout)
	require.Contains(t, s, "end", "every step ran")

	assert.NotContains(t, s["the namespace reaches the hub only through the pair"], hostIP.String(), "the namespace has an address of its own, not the hub's")
	assert.Contains(t, s["next"], `"owner": "builder"`, "the token's name claims")
	assert.Contains(t, s["list"], "[x] #1: smoke over TLS")
	assert.Contains(t, s["a viewer cannot write"], "may not")
	assert.NotContains(t, s["a viewer cannot write"], "exit 0")
	assert.Contains(t, s["without trusting the certificate"], "certificate")
	assert.NotContains(t, s["without trusting the certificate"], "exit 0")
	assert.Contains(t, s["plain HTTP on the TLS port"], "400", "the TLS port answers plain HTTP with 400 and serves nothing")
	assert.Contains(t, s["no token"], `"kind":"unauthorized"`)
	assert.Contains(t, s["no token"], "\n401\n")
	assert.Contains(t, s["the board"], "200")
	assert.Contains(t, s["mcp initialize"], `"name":"taskgraph"`)
	assert.Contains(t, s["mcp task_list"], "#1: smoke over TLS")
	for _, tok := range []string{agent, viewer} {
		assert.NotContains(t, r.stdout+r.stderr, tok[4:], "a token is never echoed")
	}

	show := ok(t, dir, "show", "1")
	assert.Contains(t, show, "completed")
	assert.Contains(t, show, "builder")
	assert.Contains(t, show, "from another network namespace")
	assert.Contains(t, show, "smoked")
}

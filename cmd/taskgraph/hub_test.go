package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/gitrepo"
	"github.com/taskgraph-dev/taskgraph/hub"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

var ctx = context.Background()

// taskgraph token add prints a token once and keeps only its hash, in the
// directory's tokens file (owner-only); taskgraph serve answers the API to
// its holder as the store does, and a revoked token is refused at the
// next request, without a restart.
func TestHubTokensAndServe(t *testing.T) {
	dir := project(t)
	agent := strings.TrimSpace(ok(t, dir, "token", "add", "builder"))
	admin := strings.TrimSpace(ok(t, dir, "token", "add", "lead", "--role", "admin"))
	require.True(t, strings.HasPrefix(agent, "tgh_"), agent)
	r := tg(t, dir, "token", "add", "builder")
	require.Equal(t, 1, r.code, "a name is taken once")
	assert.Contains(t, r.stderr, "exists")
	r = tg(t, dir, "token", "add", "x", "--role", "root")
	require.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "one of agent, viewer, admin")

	file := filepath.Join(dir, gitrepo.DirName, filenames.Tokens)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.NotContains(t, string(data), agent[4:], "only hashes are kept")
	assert.NotContains(t, string(data), admin[4:])
	fi, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	list := ok(t, dir, "token", "list")
	assert.Contains(t, list, "builder\tagent")
	assert.Contains(t, list, "lead\tadmin")

	url := startServe(t, dir)
	c, err := hub.NewClient(url, agent)
	require.NoError(t, err)
	a, err := c.Create(ctx, taskgraph.NewTask{Subject: "build it"})
	require.NoError(t, err)
	got, err := c.ClaimNext(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, "builder", got.Owner, "an agent's token acts as its name")
	assert.Contains(t, ok(t, dir, "show", "1"), "builder", "the write is in the directory")
	_, err = c.Release(ctx, a.ID, "lead")
	require.ErrorIs(t, err, hub.ErrForbidden)
	require.ErrorIs(t, c.Delete(ctx, a.ID), hub.ErrForbidden)
	_, err = c.Claim(ctx, 99, "")
	var nf *taskgraph.NotFoundError
	require.ErrorAs(t, err, &nf, "the store's typed errors cross the wire")
	assert.Equal(t, taskgraph.ID(99), nf.ID)

	boss, err := hub.NewClient(url, admin)
	require.NoError(t, err)
	_, err = boss.Release(ctx, a.ID, "")
	require.NoError(t, err, "an admin releases others' claims")

	ok(t, dir, "token", "revoke", "builder")
	_, err = c.Get(ctx, a.ID)
	require.ErrorIs(t, err, hub.ErrUnauthorized, "revoked at the next request")
	assert.NotContains(t, ok(t, dir, "token", "list"), "builder")
	r = tg(t, dir, "token", "revoke", "builder")
	require.Equal(t, 1, r.code)
}

// The API is served over TLS with --tls-cert and --tls-key, and a client
// that trusts the certificate uses it as a store.
func TestHubOverTLS(t *testing.T) {
	dir := project(t)
	admin := strings.TrimSpace(ok(t, dir, "token", "add", "lead", "--role", "admin"))
	certFile, keyFile, pool := selfSigned(t)
	url := startServe(t, dir, "--tls-cert", certFile, "--tls-key", keyFile)
	require.True(t, strings.HasPrefix(url, "https://"), url)
	c, err := hub.NewClient(url, admin, hub.WithHTTPClient(&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}))
	require.NoError(t, err)
	_, err = c.Create(ctx, taskgraph.NewTask{Subject: "secure"})
	require.NoError(t, err)
	ts, err := c.List(ctx)
	require.NoError(t, err)
	require.Len(t, ts, 1)

	plain, err := hub.NewClient(strings.Replace(url, "https://", "http://", 1), admin)
	require.NoError(t, err)
	_, err = plain.List(ctx)
	require.Error(t, err, "no plain HTTP on the TLS port")
}

// Writes from the board beyond loopback need TLS, as the API does.
func TestServeRemoteWritesNeedTLS(t *testing.T) {
	dir := project(t)
	r := tg(t, dir, "serve", "--addr", "0.0.0.0:0", "--allow-remote", "--allow-writes")
	require.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "needs TLS")
}

// A hub's URL is https://, or http:// to loopback only.
func TestHubClientRefusesPlainHTTPBeyondLoopback(t *testing.T) {
	_, err := hub.NewClient("http://tasks.example.com:7777", "tgh_x")
	require.ErrorIs(t, err, taskgraph.ErrInvalid)
	_, err = hub.NewClient("http://127.0.0.1:7777", "tgh_x")
	require.NoError(t, err)
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key,
// and returns their files and a pool that trusts it.
func selfSigned(t *testing.T) (string, string, *x509.CertPool) {
	t.Helper()
	return selfSignedFor(t, net.IPv4(127, 0, 0, 1))
}

// selfSignedFor writes a self-signed certificate for the address ip and
// its key, and returns their files and a pool that trusts it.
func selfSignedFor(t *testing.T, ip net.IP) (string, string, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "taskgraph test hub"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{ip}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// The hub process is killed (SIGKILL) and started again while 8 clients
// write through it: every write a client was told happened is in the
// graph exactly once, none is applied twice, and a write a client was
// told failed is not there. A retry across the restart is answered from
// the write keys the store recorded with the write (tg.KeyRecorder): the
// first attempt's answer, or the write applied if it never was; never
// an unknown outcome. In front of a directory, and of PostgreSQL.
func TestHubKilledDuringWrites(t *testing.T) {
	dir := project(t)
	hubKilledDuringWrites(t, dir, nil)
}

func TestHubKilledDuringWritesPostgres(t *testing.T) {
	url := os.Getenv("TASKGRAPH_POSTGRES_URL")
	if url == "" {
		t.Skip("set TASKGRAPH_POSTGRES_URL to run the PostgreSQL tests; .ci/run sets it")
	}
	graph := fmt.Sprintf("hub-kill-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { dropGraph(url, graph) })
	dir := repo(t)
	store := []string{"--store", url, "--graph", graph} // the tokens in the database
	ok(t, dir, "init", "--store", url, "--graph", graph)
	hubKilledDuringWrites(t, dir, store)
}

// With --store postgres://…, taskgraph token keeps the tokens in the
// database beside the graph (hashes only), and taskgraph serve reads them
// there: an agent's token is its owner, and a token revoked by another
// process is refused at its next request, without a restart. A graph that
// does not exist has no tokens.
func TestHubTokensInPostgres(t *testing.T) {
	url := os.Getenv("TASKGRAPH_POSTGRES_URL")
	if url == "" {
		t.Skip("set TASKGRAPH_POSTGRES_URL to run the PostgreSQL tests; .ci/run sets it")
	}
	graph := fmt.Sprintf("hub-tokens-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { dropGraph(url, graph) })
	dir := repo(t)
	store := []string{"--store", url, "--graph", graph}
	r := tg(t, dir, append([]string{"token", "add", "early"}, store...)...)
	require.Equal(t, 4, r.code, "no graph, no tokens: %s", r.stderr)
	assert.Contains(t, r.stderr, "taskgraph init")
	ok(t, dir, "init", "--store", url, "--graph", graph)
	agent := strings.TrimSpace(ok(t, dir, append([]string{"token", "add", "builder"}, store...)...))
	ok(t, dir, append([]string{"token", "add", "lead", "--role", "admin"}, store...)...)
	assert.Contains(t, ok(t, dir, append([]string{"token", "list"}, store...)...), "builder\tagent")
	assert.NoFileExists(t, filepath.Join(dir, gitrepo.DirName, filenames.Tokens), "nothing beside the files")

	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	defer pool.Close()
	var rows string
	require.NoError(t, pool.QueryRow(ctx, `SELECT string_agg(t::text, ' ') FROM taskgraph_hub_tokens t WHERE graph = $1`, graph).Scan(&rows))
	assert.Contains(t, rows, "builder")
	assert.NotContains(t, rows, agent[4:], "only hashes are kept")

	addr := freeAddr(t)
	startHub(t, dir, addr, store...)
	c, err := hub.NewClient("http://"+addr, agent)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Create(ctx, taskgraph.NewTask{Subject: "a"})
	require.NoError(t, err)
	got, err := c.ClaimNext(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, "builder", got.Owner)
	ok(t, dir, append([]string{"token", "revoke", "builder"}, store...)...)
	_, err = c.Get(ctx, got.ID)
	require.ErrorIs(t, err, hub.ErrUnauthorized, "revoked at the next request")
}

// hubKilledDuringWrites runs the test on the graph of dir, or of the
// --store, --graph and --tokens flags in store.
func hubKilledDuringWrites(t *testing.T, dir string, store []string) {
	admin := strings.TrimSpace(ok(t, dir, append([]string{"token", "add", "lead", "--role", "admin"}, store...)...))
	addr := freeAddr(t)
	start := func() *exec.Cmd { return startHub(t, dir, addr, store...) }
	hubProc := start()
	type log struct{ acked, unknown, failed, retried []string }
	const writers = 8
	logs := make([]log, writers)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var met atomic.Int64 // writes a kill met: retries, unknown outcomes and failures
	for w := range writers {
		rt := &retryCounter{rt: http.DefaultTransport}
		c, err := hub.NewClient("http://"+addr, admin, hub.WithHTTPClient(&http.Client{Transport: rt}))
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				subject := fmt.Sprintf("w%d-%d", w, i)
				retries := rt.n.Load()
				_, err := c.Create(ctx, taskgraph.NewTask{Subject: subject})
				if rt.n.Load() > retries {
					logs[w].retried = append(logs[w].retried, subject)
					met.Add(1)
				}
				switch {
				case err == nil:
					logs[w].acked = append(logs[w].acked, subject)
				case errors.Is(err, taskgraph.ErrUnknownOutcome):
					logs[w].unknown = append(logs[w].unknown, subject)
					met.Add(1)
				default:
					logs[w].failed = append(logs[w].failed, subject)
					met.Add(1)
				}
			}
		}()
	}
	// A kill may fall between two requests of every writer (a loaded
	// machine stalls them): kill and start again, up to five times, until
	// one meets writes in flight.
	for range 5 {
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, hubProc.Process.Kill()) // SIGKILL
		hubProc.Wait()
		time.Sleep(100 * time.Millisecond)
		hubProc = start() // killed when the test ends
		time.Sleep(500 * time.Millisecond)
		if met.Load() > 0 {
			break
		}
	}
	close(stop)
	wg.Wait()
	var all []struct{ Subject string }
	require.NoError(t, json.Unmarshal([]byte(ok(t, dir, append([]string{"export"}, storeFlags(store)...)...)), &all))
	count := map[string]int{}
	for _, task := range all {
		count[task.Subject]++
	}
	var acked, unknown, failed, retried, answered int
	for _, l := range logs {
		for _, sub := range l.retried {
			if slices.Contains(l.acked, sub) {
				answered++
			}
		}
		retried += len(l.retried)
		for _, sub := range l.acked {
			assert.Equal(t, 1, count[sub], "acknowledged %s is there once", sub)
		}
		for _, sub := range l.unknown {
			assert.LessOrEqual(t, count[sub], 1, "unsettled %s is there at most once", sub)
		}
		for _, sub := range l.failed {
			assert.Equal(t, 0, count[sub], "%s failed, so it is not there", sub)
		}
		acked, unknown, failed = acked+len(l.acked), unknown+len(l.unknown), failed+len(l.failed)
	}
	for sub, n := range count {
		assert.Equal(t, 1, n, "%s applied %d times", sub, n)
	}
	t.Logf("acknowledged %d, unknown outcome %d, failed %d; retried after a lost answer %d, of which answered %d; %d tasks in the graph",
		acked, unknown, failed, retried, answered, len(all))
	assert.Positive(t, acked)
	assert.Positive(t, retried+unknown+failed, "the kill met writes in flight or refused")
	assert.Zero(t, unknown, "every retry across the restart is answered from the store's keys")
}

// retryCounter counts the requests that retry a write whose answer was
// lost (hub.RetryHeader).
type retryCounter struct {
	rt http.RoundTripper
	n  atomic.Int64
}

func (r *retryCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(hub.RetryHeader) != "" {
		r.n.Add(1)
	}
	return r.rt.RoundTrip(req)
}

// freeAddr returns a loopback address with a port that was free.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// startHub starts taskgraph serve in dir on addr, with the flags store,
// and returns once it listens. The caller kills it.
func startHub(t *testing.T, dir, addr string, store ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", addr}, store...)...)
	cmd.Dir, cmd.Env = dir, cleanEnv()
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	_, err = bufio.NewReader(stdout).ReadString('\n') // the URL: it listens
	require.NoError(t, err)
	go io.Copy(io.Discard, stdout)
	return cmd
}

// The hub process is killed and started again while clients watch; the
// graph changes while it is down and after. Each client, keeping its view
// of the graph from its Watch alone, ends with the store's view: the
// stream resumed on the new hub with a resync, which the client re-read
// by itself.
func TestHubRestartWithWatchers(t *testing.T) {
	dir := project(t)
	admin := strings.TrimSpace(ok(t, dir, "token", "add", "lead", "--role", "admin"))
	addr := freeAddr(t)
	hubProc := startHub(t, dir, addr)
	writer, err := hub.NewClient("http://"+addr, admin)
	require.NoError(t, err)

	type view struct {
		sync.Mutex
		revs map[taskgraph.ID]int64
	}
	const watchers = 3
	views := make([]*view, watchers)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i := range views {
		v := &view{revs: map[taskgraph.ID]int64{}}
		views[i] = v
		c, err := hub.NewClient("http://"+addr, admin)
		require.NoError(t, err)
		events, err := c.Watch(wctx)
		require.NoError(t, err)
		go func() {
			for e := range events {
				v.Lock()
				switch e.Kind {
				case taskgraph.Deleted:
					delete(v.revs, e.Task.ID)
				case taskgraph.Ended:
				default:
					if e.Task.Rev >= v.revs[e.Task.ID] {
						v.revs[e.Task.ID] = e.Task.Rev
					}
				}
				v.Unlock()
			}
		}()
	}
	for i := range 10 {
		_, err := writer.Create(ctx, taskgraph.NewTask{Subject: fmt.Sprint("before ", i)})
		require.NoError(t, err)
	}
	_, err = writer.Claim(ctx, 1, "x")
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond) // the watchers have seen it

	require.NoError(t, hubProc.Process.Kill())
	hubProc.Wait()
	ok(t, dir, "delete", "2")       // while the hub is down
	ok(t, dir, "add", "while down") // by another process, beside the files
	ok(t, dir, "done", "1", "--force")
	startHub(t, dir, addr)
	_, err = writer.Create(ctx, taskgraph.NewTask{Subject: "after"})
	require.NoError(t, err)

	all, err := writer.List(ctx)
	require.NoError(t, err)
	want := map[taskgraph.ID]int64{}
	for _, task := range all {
		want[task.ID] = task.Rev
	}
	for i, v := range views {
		require.Eventually(t, func() bool {
			v.Lock()
			defer v.Unlock()
			return assert.ObjectsAreEqual(want, v.revs)
		}, 15*time.Second, 50*time.Millisecond, "watcher %d's view is the store's", i)
	}
}

// storeFlags is store without its --tokens flag, for the commands that
// do not take it.
func storeFlags(store []string) []string {
	var out []string
	for i := 0; i < len(store); i++ {
		if store[i] == "--tokens" {
			i++
			continue
		}
		out = append(out, store[i])
	}
	return out
}

// The commands work on a hub's graph with --store https://… (here
// $TASKGRAPH_STORE, on loopback http://) and $TASKGRAPH_TOKEN, from a
// directory without a graph, as they do beside it: an agent's token is
// its owner; what its role may not do, and the commands that work
// beside the files, are refused plainly.
func TestHubCLI(t *testing.T) {
	dir := project(t)
	agent := strings.TrimSpace(ok(t, dir, "token", "add", "builder"))
	url := startServe(t, dir)
	elsewhere := repo(t)
	env := cleanEnv("TASKGRAPH_STORE="+url, "TASKGRAPH_TOKEN="+agent)
	run := func(args ...string) result {
		t.Helper()
		return runIn(t, elsewhere, env, args...)
	}
	okRun := func(args ...string) string {
		t.Helper()
		r := run(args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		return r.stdout
	}
	okRun("add", "schema")
	okRun("add", "api", "--after", "1")
	assert.Contains(t, okRun("ready"), "schema")
	next := okRun("next", "--json")
	assert.Contains(t, next, `"owner": "builder"`, "the token's name is the owner")
	okRun("note", "1", "tables drafted")
	done := okRun("done", "1", "--result", "schema in")
	assert.Contains(t, done, "api", "done says what it unblocked")
	assert.Contains(t, okRun("show", "1"), "tables drafted")
	assert.Contains(t, okRun("history", "1"), "completed")
	assert.Contains(t, okRun("list"), "api")
	assert.Contains(t, ok(t, dir, "show", "1"), "builder", "the writes are in the hub's directory")

	r := run("limit", "db", "2")
	require.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "only an admin's token")
	r = run("claim", "2", "--owner", "someone-else")
	require.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "acts only as its own owner")
	for _, cmd := range []string{"init", "check", "serve"} {
		r = run(cmd)
		require.Equal(t, exitUsage, r.code, cmd)
		assert.Contains(t, r.stderr, "is a hub", cmd)
	}
	r = runIn(t, elsewhere, cleanEnv("TASKGRAPH_STORE="+url), "list")
	require.Equal(t, exitUsage, r.code)
	assert.Contains(t, r.stderr, "TASKGRAPH_TOKEN")
	r = runIn(t, elsewhere, cleanEnv("TASKGRAPH_STORE="+url, "TASKGRAPH_TOKEN=tgh_wrong"), "list")
	require.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "token")
	assert.NotContains(t, r.stderr, "tgh_wrong", "a token is never echoed")
}

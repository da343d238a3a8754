// taskgraph serve: the web board, and the hub's API, over HTTP.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
	"github.com/taskgraph-dev/taskgraph/board"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// serveHelp is the help of taskgraph serve.
const serveHelp = `Serve a live board of the graph to a web browser: columns of ready,
blocked, in-progress and completed tasks, the dependency graph, and each task
in full. The page follows every change, by any process, as it happens.

It listens on 127.0.0.1:7777 unless --addr says otherwise, and refuses an
address other than loopback without --allow-remote. It is read-only unless
--allow-writes is given; then the page can release a claim, reopen a task,
add an edge and create a task, each with a token of taskgraph token add
(the hub's, below) and doing only what the token may: make one with
taskgraph token add NAME (an agent's; --role admin to reopen tasks and
release others' claims) and open the printed URL followed by
#token=TOKEN. At most --max-streams pages (default 256) follow
the board at once; one more is refused until another closes. GET /metrics
serves the tasks by state, the lapsed leases and the pages following the
board in the Prometheus text format. Interrupt to stop.

Beside the board it serves the hub's API under /v1/: the whole Store as
JSON over HTTP, for agents elsewhere (Go: package hub; docs/hub.md), and at
/mcp the tools of taskgraph mcp over MCP's Streamable HTTP, each session
acting as its token's name, its claims leased for --lease and renewed while
its client is there (docs/mcp.md). Every
request needs a token of taskgraph token add, kept in the directory's
.taskgraph.tokens (with --store, in the database beside the graph, or in
the file --tokens names). Beyond
loopback the API, MCP, and the page's writes, are served only over TLS
(--tls-cert and --tls-key), or behind a proxy that terminates TLS
(--behind-tls-proxy). Each token may
make --rate requests a second (default 200), in bursts of twice that.`

func flagsServe(fs *flag.FlagSet) func(e *env) error {
	addr := fs.String("addr", "127.0.0.1:7777", "listen on `HOST:PORT` (port 0 picks a free one)")
	writes := fs.Bool("allow-writes", false, "let the page release claims, reopen tasks, add edges and create tasks")
	remote := fs.Bool("allow-remote", false, "allow an --addr that is not loopback: anyone who reaches it can read the board")
	streams := fs.Int("max-streams", board.DefaultMaxStreams, "follow at most `N` pages live at once; one more is refused with 503 until another closes")
	tokensFile := fs.String("tokens", "", "the API's tokens `FILE` (default the task directory's .taskgraph.tokens, or with --store the database's)")
	cert := fs.String("tls-cert", "", "serve HTTPS with the certificate in `FILE` (with --tls-key)")
	key := fs.String("tls-key", "", "the private key of --tls-cert, in `FILE`")
	proxy := fs.Bool("behind-tls-proxy", false, "serve the API beyond loopback over plain HTTP: a proxy in front terminates TLS")
	rate := fs.Float64("rate", hub.DefaultRate, "bound each token at `N` API requests a second, in bursts of twice that (0: no bound)")
	lease := leaseFlag(fs, "lease every claim made through /mcp for this `DURATION` (default 5m); the hub renews them while the client that made them is there")
	return func(e *env) error {
		if err := e.wantArgs(0); err != nil {
			return err
		}
		ttl, err := mcpLease(lease)
		if err != nil {
			return err
		}
		if err := e.besideFiles("serve"); err != nil {
			return err
		}
		if *streams < 1 {
			return usagef("--max-streams %d: at least one page must be able to follow the board", *streams)
		}
		host, _, err := net.SplitHostPort(*addr)
		if err != nil {
			return usagef("--addr %q: %v", *addr, err)
		}
		if !isLoopback(host) && !*remote {
			return usagef("--addr %s is not a loopback address: anyone who can reach it could read the board; add --allow-remote if that is meant", *addr)
		}
		if (*cert == "") != (*key == "") {
			return usagef("--tls-cert and --tls-key go together")
		}
		tls := *cert != ""
		if *writes && !isLoopback(host) && !tls && !*proxy {
			return usagef("--allow-writes beyond loopback needs TLS (--tls-cert, --tls-key) or --behind-tls-proxy: a token must not cross a network in the clear")
		}
		return e.withStore(func(s store) error {
			opts := []board.Option{board.WithTitle(e.graphName()), board.WithMaxStreams(*streams), board.WithLogger(logger)}
			// One token system: the board's writes and the API's.
			var tokens hub.TokenStore
			var tokensErr error
			if *writes || isLoopback(host) || tls || *proxy {
				var done func()
				tokens, done, tokensErr = e.tokenStore(*tokensFile)
				if tokensErr != nil && *writes {
					return tokensErr
				}
				defer done()
			}
			if *writes {
				opts = append(opts, board.AllowWrites(), board.WithTokens(tokens))
			}
			if *remote {
				opts = append(opts, board.AllowHosts(host))
				if name, err := os.Hostname(); err == nil {
					opts = append(opts, board.AllowHosts(name))
				}
			}
			b := board.New(s, opts...)
			defer b.Close()
			mux := http.NewServeMux()
			mux.Handle("/", b)
			ctx, stop := context.WithCancel(e.ctx)
			defer stop() // ends the renewals of the MCP sessions' claims
			api, why := e.hubAPI(s, tokens, tokensErr, isLoopback(host) || tls || *proxy, hub.WithRate(*rate, int(2**rate)), hub.WithMCP(hubMCP(ctx, ttl)))
			if api != nil {
				defer api.Close()
				mux.Handle("/v1/", api)
				mux.Handle(hub.MCPPath, api)
			}
			ln, err := net.Listen("tcp", *addr)
			if err != nil {
				return err
			}
			scheme := "http"
			if tls {
				scheme = "https"
			}
			url := scheme + "://" + ln.Addr().String() + "/"
			fmt.Fprintln(e.stdout, url)
			mode := "read-only"
			if *writes {
				mode = "writes allowed to the holders of an agent's or an admin's token: open " + url + "#token=TOKEN, TOKEN printed by `taskgraph token add NAME` (--role admin to reopen tasks)"
			}
			fmt.Fprintf(e.stderr, "Serving the board of %s (%s); interrupt to stop\n", e.where(), mode)
			fmt.Fprintln(e.stderr, why)
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
				ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
			done := make(chan error, 1)
			go func() {
				if tls {
					done <- srv.ServeTLS(ln, *cert, *key)
					return
				}
				done <- srv.Serve(ln)
			}()
			select {
			case err := <-done:
				return err
			case <-e.ctx.Done():
			}
			b.Close() // ends the event streams, so that Shutdown need not wait for them
			if api != nil {
				api.Close()
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		})
	}
}

// hubAPI returns the API of s for the holders of tokens (the graph's,
// e.tokenStore, which failed with tokensErr), or nil if it must not be
// served, with a line that says which, and why.
func (e *env) hubAPI(s store, tokens hub.TokenStore, tokensErr error, safe bool, opts ...hub.Option) (*hub.Server, string) {
	if !safe {
		return nil, "Not serving the API (/v1/) nor MCP (/mcp): beyond loopback it needs TLS (--tls-cert, --tls-key) or --behind-tls-proxy, so that tokens never cross a network in the clear"
	}
	if tokensErr != nil {
		return nil, "Not serving the API (/v1/) nor MCP (/mcp): " + tokensErr.Error()
	}
	msg := "Serving the API under /v1/ and MCP at /mcp; every request needs a token (taskgraph token add NAME)"
	if infos, err := tokens.List(e.ctx); err == nil && len(infos) == 0 {
		msg += ": there is none yet, so every request is refused"
	}
	return hub.NewServer(s, tokens, opts...), msg
}

// isLoopback reports whether host (of --addr) names only this machine. An
// empty host listens on every interface.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// graphName is what the board's header calls the graph: its name in a
// database, else the name of the directory that holds its .tasks (the
// repository's, as a rule), not a path on this machine.
func (e *env) graphName() string {
	if e.storeURL != "" {
		return e.graph
	}
	dir, err := filepath.Abs(e.where())
	if err != nil {
		return e.where()
	}
	if filepath.Base(dir) == ".tasks" {
		dir = filepath.Dir(dir)
	}
	return filepath.Base(dir)
}

// hubMCP returns the MCP servers of a hub's /mcp: the tools of taskgraph
// mcp, each identity's acting as its token's name, its claims leased for
// ttl and renewed, until ctx ends, while its client is there.
func hubMCP(ctx context.Context, ttl time.Duration) hub.MCPServer {
	return func(st hub.Store, who hub.Identity, lastSeen func() time.Time) *mcp.Server {
		if who.Role != hub.Viewer {
			go keepClaims(ctx, st, who.Name, ttl, lastSeen, nil, 0, io.Discard)
		}
		return newMCPServer(st, agenttools.WithOwner(who.Name), agenttools.WithLease(ttl), agenttools.WithCreatedVia(taskgraph.ViaMCP))
	}
}

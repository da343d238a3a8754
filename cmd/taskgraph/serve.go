// taskgraph serve: the web board over HTTP.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/taskgraph-dev/taskgraph/board"
)

// serveHelp is the help of taskgraph serve.
const serveHelp = `Serve a live board of the graph to a web browser: columns of ready,
blocked, in-progress and completed tasks, the dependency graph, and each task
in full. The page follows every change, by any process, as it happens.

It listens on 127.0.0.1:7777 unless --addr says otherwise, and refuses an
address other than loopback without --allow-remote. It is read-only unless
--allow-writes is given; then the page can release a claim, reopen a task,
add an edge and create a task, and the URL printed on stdout carries the
token those writes need. At most --max-streams pages (default 256) follow
the board at once; one more is refused until another closes. GET /metrics
serves the tasks by state, the lapsed leases and the pages following the
board in the Prometheus text format. Interrupt to stop.`

func flagsServe(fs *flag.FlagSet) func(e *env) error {
	addr := fs.String("addr", "127.0.0.1:7777", "listen on `HOST:PORT` (port 0 picks a free one)")
	writes := fs.Bool("allow-writes", false, "let the page release claims, reopen tasks, add edges and create tasks")
	remote := fs.Bool("allow-remote", false, "allow an --addr that is not loopback: anyone who reaches it can read the board")
	streams := fs.Int("max-streams", board.DefaultMaxStreams, "follow at most `N` pages live at once; one more is refused with 503 until another closes")
	return func(e *env) error {
		if err := e.wantArgs(0); err != nil {
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
		return e.withStore(func(s store) error {
			opts := []board.Option{board.WithTitle(e.graphName()), board.WithMaxStreams(*streams), board.WithLogger(logger)}
			if *writes {
				opts = append(opts, board.AllowWrites())
			}
			if *remote {
				opts = append(opts, board.AllowHosts(host))
				if name, err := os.Hostname(); err == nil {
					opts = append(opts, board.AllowHosts(name))
				}
			}
			b := board.New(s, opts...)
			defer b.Close()
			ln, err := net.Listen("tcp", *addr)
			if err != nil {
				return err
			}
			url := "http://" + ln.Addr().String() + "/"
			if tok := b.Token(); tok != "" {
				url += "#token=" + tok
			}
			fmt.Fprintln(e.stdout, url)
			mode := "read-only"
			if *writes {
				mode = "writes allowed to holders of the token in the URL"
			}
			fmt.Fprintf(e.stderr, "Serving the board of %s (%s); interrupt to stop\n", e.where(), mode)
			srv := &http.Server{Handler: b, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
				ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
			done := make(chan error, 1)
			go func() { done <- srv.Serve(ln) }()
			select {
			case err := <-done:
				return err
			case <-e.ctx.Done():
			}
			b.Close() // ends the event streams, so that Shutdown need not wait for them
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return err
			}
			return nil
		})
	}
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

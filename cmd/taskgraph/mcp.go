// taskgraph mcp: the agenttools task tools served over MCP on stdio.

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/agenttools"
)

// newMCPServer serves the agenttools task tools — the same names, schemas,
// texts and error flags — as MCP tools, with their titles and annotations,
// and the output schema and structured content of those that have them.
func newMCPServer(store taskgraph.Store, opts ...agenttools.Option) *mcp.Server {
	return mcpServerOf(agenttools.New(store, opts...).List(), nil, nil)
}

// mcpServerOf serves tools as MCP tools. Once ended is closed — the input
// ended, and the server exits as soon as every call read is answered — the
// calls of read-only tools still running are cancelled: task_wait may
// otherwise hold the exit back for most of a minute, and a read cut short
// loses nothing. A nil ended is never closed. Every call, of any tool,
// is recorded in calls (if not nil): the session's sign of life, which
// --progress-window reads.
func mcpServerOf(tools []agenttools.Tool, ended <-chan struct{}, calls *lastCall) *mcp.Server {
	opts := &mcp.ServerOptions{Logger: logger}
	if slices.ContainsFunc(tools, func(t agenttools.Tool) bool { return t.Name == "task_claim_next" }) {
		opts.Instructions = agenttools.Instructions // they name the task tools
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "taskgraph", Title: "taskgraph task graph", Version: version()}, opts)
	closed := false
	for _, tool := range tools {
		def := &mcp.Tool{
			Name: tool.Name, Title: tool.Title, Description: tool.Description, InputSchema: tool.InputSchema,
			Annotations: &mcp.ToolAnnotations{
				Title:           tool.Title,
				ReadOnlyHint:    tool.Hints.ReadOnly,
				DestructiveHint: &tool.Hints.Destructive,
				IdempotentHint:  tool.Hints.Idempotent,
				OpenWorldHint:   &closed,
			},
		}
		if tool.OutputSchema != nil {
			def.OutputSchema = tool.OutputSchema
		}
		server.AddTool(def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			calls.touch()
			if tool.Hints.ReadOnly && ended != nil {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				defer cancel()
				go func() {
					select {
					case <-ended:
						cancel()
					case <-ctx.Done():
					}
				}()
			}
			res, err := tool.Call(ctx, json.RawMessage(req.Params.Arguments))
			if err != nil {
				return nil, unfinished(tool.Name, err, ended)
			}
			out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}, IsError: res.IsError}
			if res.Structured != nil {
				out.StructuredContent = res.Structured
			}
			return out, nil
		})
	}
	return server
}

// unfinished is the JSON-RPC error for a call that tool name could not
// finish, err saying why. tool.Call returns an error only when its context
// ended or the store was closed: the server is stopping — its input ended
// (ended is closed) or it was told to stop — unless the client cancelled
// the call. The SDK would send err as an error of code 0, which JSON-RPC
// does not define: the code is -32603, internal error.
func unfinished(name string, err error, ended <-chan struct{}) *jsonrpc.Error {
	stopping := errors.Is(err, taskgraph.ErrClosed)
	select {
	case <-ended: // a nil ended is never closed
		stopping = true
	default:
	}
	msg := fmt.Sprintf("%s was cancelled before it finished (%v)", name, err)
	if stopping {
		msg = fmt.Sprintf("the server is stopping, so %s did not finish (%v): call it again once the server is back", name, err)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// toolSets are the tool sets taskgraph mcp --tools can serve.
var toolSets = map[string]func(taskgraph.Store, ...agenttools.Option) *agenttools.Tools{
	"taskgraph":   agenttools.New,
	"claude-code": agenttools.ClaudeCode,
}

// mcpTools returns the tools of the sets named in spec, comma-separated,
// in that order.
func mcpTools(spec string, store taskgraph.Store, opts ...agenttools.Option) ([]agenttools.Tool, error) {
	var tools []agenttools.Tool
	seen := map[string]bool{}
	for _, name := range strings.Split(spec, ",") {
		name = strings.TrimSpace(name)
		set, ok := toolSets[name]
		if !ok {
			return nil, usagef("--tools %q: want taskgraph, claude-code, or both comma-separated", spec)
		}
		if !seen[name] {
			seen[name] = true
			tools = append(tools, set(store, opts...).List()...)
		}
	}
	return tools, nil
}

// sessionOwner is the identity of an MCP server that was given no --owner:
// distinct for every server process, so that two sessions of an MCP client
// never share claims.
func sessionOwner() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "localhost"
	}
	var b [3]byte
	_, _ = rand.Read(b[:]) // never fails
	return fmt.Sprintf("mcp-%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

func flagsMCP(fs *flag.FlagSet) func(e *env) error {
	lease := leaseFlag(fs, "lease every claim for this `DURATION` (default 5m); the server renews its claims' leases while it runs, so a session that dies lets go of its tasks within one lease")
	sets := fs.String("tools", "taskgraph", "the tool `SET`s to serve: taskgraph (task_create, task_list, ...), claude-code (Claude Code's TaskCreate, TaskGet, TaskUpdate, TaskList), or taskgraph,claude-code")
	window := fs.Duration("progress-window", defaultProgressWindow, "stop renewing the server's claims once its session has made no tool call for `DURATION` (any tool counts), so that a hung session's tasks lapse with their lease and come back; 0 renews for as long as the server runs")
	runChecks := fs.Bool("run-checks", false, "run the check a task names (checks.json beside the task files) when a tool completes it, and complete it only if the check passes; without it the server runs no command, and a task with a check is refused (a person or `taskgraph done` completes it)")
	return func(e *env) error {
		ttl, err := mcpLease(lease)
		if err != nil {
			return err
		}
		if *window < 0 {
			return usagef("--progress-window %v: want a positive duration such as 60m (the default), or 0 to renew for as long as the server runs", *window)
		}
		if _, err := mcpTools(*sets, taskgraph.NewMemStore()); err != nil {
			return err
		}
		if err := e.wantArgs(0); err != nil {
			return err
		}
		owner := e.owner
		if !e.ownerFlag {
			owner = sessionOwner()
		}
		g, err := newMCPGraph(e)
		if err != nil {
			return err
		}
		defer g.Close()
		if e.isHub() && !e.ownerFlag {
			// An agent's token acts only as its own name: on a hub, that
			// is the session's identity.
			if owner, err = hubOwner(e, g); err != nil {
				return err
			}
		}
		opts := []agenttools.Option{agenttools.WithOwner(owner), agenttools.WithLease(ttl), agenttools.WithCreatedVia(taskgraph.ViaMCP)}
		if *runChecks {
			checks, err := e.loadChecks()
			if err != nil {
				return err
			}
			opts = append(opts, agenttools.WithChecks(checks))
		}
		tools, err := mcpTools(*sets, g, opts...)
		if err != nil {
			return err
		}
		if _, err := g.read(e.ctx); err != nil {
			fmt.Fprintf(e.stderr, "taskgraph mcp: serving as %q; %v\n", owner, err)
		} else {
			fmt.Fprintf(e.stderr, "taskgraph mcp: serving %s as %q, claims leased for %s\n", e.where(), owner, ttl)
		}
		ctx, stop := context.WithCancel(e.ctx)
		defer stop()
		calls := newLastCall()
		go keepClaims(ctx, g, owner, ttl, nil, calls, *window, e.stderr)
		ended := make(chan struct{})
		return serveMCP(ctx, mcpServerOf(tools, ended, calls), e.stdin, e.stdout, ended)
	}
}

// mcpLease returns the lease of the server's claims: --lease, or
// defaultMCPLease. Claims that never lapse would outlive a session that
// dies, so a lease of 0 is refused, as a negative one is.
func mcpLease(lease *durationFlag) (time.Duration, error) {
	if err := lease.check(); err != nil {
		return 0, err
	}
	switch {
	case lease.text == "":
		return defaultMCPLease, nil
	case lease.d <= 0:
		return 0, usagef("--lease %s: every claim made through taskgraph mcp is a lease, which the server renews while it runs, so that a session that dies lets go of its tasks; give a positive duration such as 5m (the default) or 30m", lease)
	}
	return lease.d, nil
}

// maxFrame is the longest line serveMCP accepts, as the SDK's stdio
// transport does.
const maxFrame = mcp.DefaultMaxLineLength

// serveMCP runs server on newline-delimited JSON-RPC over in and out, as
// the SDK's stdio transport does, except that a line that is not a
// JSON-RPC message — not JSON, too long, a batch, not a request or
// response — is answered with a JSON-RPC error and the server keeps
// serving; the SDK's transport ends the session instead. ended is closed
// when the input ends.
func serveMCP(ctx context.Context, server *mcp.Server, in io.Reader, out io.Writer, ended chan<- struct{}) error {
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	go func() {
		err := filterFrames(in, pw, w)
		close(ended)
		pw.CloseWithError(err)
	}()
	err := server.Run(ctx, &answeringTransport{&mcp.IOTransport{Reader: pr, Writer: w}})
	pr.Close()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// answeringTransport is a Transport whose connection answers every
// request it has read before it reports the end of its input.
//
// The SDK's connection, told of the end of its input, cancels the requests
// in flight and refuses to write their replies: a tool call read just
// before stdin closed could be applied — a task claimed — and never
// reported. answeringConn holds the end of the input back until every
// request read has been answered (or the session is closed).
type answeringTransport struct{ mcp.Transport }

func (t *answeringTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &answeringConn{Connection: c, pending: map[jsonrpc.ID]bool{}, changed: make(chan struct{}), closed: make(chan struct{})}, nil
}

// answeringConn tracks the requests read and not yet answered.
type answeringConn struct {
	mcp.Connection
	mu        sync.Mutex
	pending   map[jsonrpc.ID]bool
	changed   chan struct{} // closed, and replaced, when pending shrinks
	closed    chan struct{}
	closeOnce sync.Once
}

// sessionLong are the methods whose requests last as long as the session:
// they are not waited for.
var sessionLong = map[string]bool{"subscriptions/listen": true}

func (c *answeringConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.drain(ctx)
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.mu.Lock()
		switch {
		case req.IsCall() && !sessionLong[req.Method]:
			// A second request with an id in flight is refused by the
			// SDK with a reply to no id: it is not waited for.
			if !c.pending[req.ID] {
				c.pending[req.ID] = true
			}
		case req.Method == "notifications/cancelled":
			// A cancelled request may go unanswered.
			var p struct {
				RequestID any `json:"requestId"`
			}
			if json.Unmarshal(req.Params, &p) == nil {
				if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
					c.answered(id)
				}
			}
		}
		c.mu.Unlock()
	}
	return msg, nil
}

func (c *answeringConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		c.answered(resp.ID)
		c.mu.Unlock()
	}
	return err
}

// answered forgets the request id; c.mu is held.
func (c *answeringConn) answered(id jsonrpc.ID) {
	if c.pending[id] {
		delete(c.pending, id)
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// drain waits until every request read has been answered, the connection
// is closed, or ctx is done.
func (c *answeringConn) drain(ctx context.Context) {
	for {
		c.mu.Lock()
		n, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (c *answeringConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// lockedWriter serialises the server's messages and the filter's error
// replies, one whole line each.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close does nothing: stdout stays open for the process.
func (l *lockedWriter) Close() error { return nil }

// filterFrames copies the lines of in that are JSON-RPC messages to pass,
// and answers each other line on reply. It returns at the end of in, or
// when pass is closed.
func filterFrames(in io.Reader, pass io.Writer, reply io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, tooLong, rerr := readFrame(r)
		if tooLong || len(bytes.TrimSpace(line)) > 0 {
			if answer := checkFrame(line, tooLong); answer != nil {
				if _, err := reply.Write(answer); err != nil {
					return err
				}
			} else if _, err := pass.Write(append(line, '\n')); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// readFrame reads one line without its newline. A line longer than
// maxFrame is read to its end and dropped: tooLong reports it.
func readFrame(r *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxFrame+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// checkFrame returns the JSON-RPC error reply to a line that is not a
// message the server can take, or nil if it is one.
func checkFrame(line []byte, tooLong bool) []byte {
	switch {
	case tooLong:
		return rpcError(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: the message is longer than %d bytes", maxFrame))
	case !json.Valid(line):
		return rpcError(nil, jsonrpc.CodeParseError, "parse error: the line is not JSON; send one JSON-RPC message a line")
	case bytes.HasPrefix(bytes.TrimSpace(line), []byte("[")):
		return rpcError(nil, jsonrpc.CodeInvalidRequest, "invalid request: batches are not supported; send one JSON-RPC message a line")
	}
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		var probe struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(line, &probe)
		id, ok := probe.ID.(string)
		var rid any
		if ok {
			rid = id
		} else if n, ok := probe.ID.(float64); ok {
			rid = n
		}
		return rpcError(rid, jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
	}
	return nil
}

// rpcError encodes a JSON-RPC error response to the request id (nil when
// it could not be read), with its newline.
func rpcError(id any, code int64, message string) []byte {
	data, _ := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      any    `json:"id"`
		Error   struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	return append(data, '\n')
}

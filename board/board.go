// Package board serves a live web page of a task graph, for the people who
// watch the agents work on it: a board of columns (ready, blocked,
// stranded, in progress, completed, failed, cancelled), the dependency
// graph laid out left to right with its critical path marked, and each
// task in full on a click — who holds it, for how long, its priority,
// labels, reason or result, and why it is not ready (taskgraph.Explain).
// The Ready column is in claim order (priority, then creation, then id), and a failed or
// cancelled task names every task it strands.
//
// A board of a thousand tasks stays usable: a search (every word, in a
// task's id, subject, description, owner, key, labels, reason or result),
// filters by label, owner and state, and a "Hide completed" toggle, on by
// default past 300 tasks, narrow the board and the graph alike. For the
// people watching, a "needs attention" strip lists the failed tasks, the
// lapsed leases, the stranded and the overdue; a lane per agent shows what
// it holds; an activity feed follows the tasks' history live; an epic shows
// its rollup as a progress bar. The graph's Fit shows every node in the
// window, collapsing epics into one node each when the labels would be too
// small to read, and can focus on one task's neighbourhood or on the
// critical path. An empty board says how to add a task.
//
// The page follows the store as it changes, by this process or any other:
// the server watches the store ([taskgraph.Watcher]) and, at most once
// every 100 ms however fast the store changes, brings the board up to date
// once for every page — from the watch's events, at a cost proportional to
// the change, or from the store when a change reaches further — and pushes over Server-Sent
// Events only the tasks whose view changed (derived state included: a
// completion that readies ten tasks sends those ten). A page is sent a
// whole snapshot only when it opens, or falls too far behind. The page
// never polls and never reloads.
//
// The page, its script, its stylesheet and the graph-layout library (dagre,
// MIT, under static/vendor/dagre) are embedded in the package: it works
// offline and loads nothing from the network, which its
// Content-Security-Policy enforces.
//
// A board is read-only unless [AllowWrites] is given. Then the page offers a
// few actions, each behind an explicit click: release a claim, reopen a
// completed, failed or cancelled task, approve or reject a task awaiting
// approval, add an edge, create a task. Every
// write must carry a token of the hub's token system ([WithTokens]: the
// tokens of `taskgraph token add`) in the X-Taskgraph-Token header and
// come from the board's own origin; it is made through hubapi.As, the store
// as that token's identity may use it — the rules of the hub's API and
// MCP, an agent's token acting only as its own owner, a viewer's reading
// only — so it is validated exactly as the store validates it, and a
// refusal comes back with the store's error text.
//
// The command `taskgraph serve` runs a board on a task directory or a
// PostgreSQL graph.
//
// # HTTP API
//
// The page uses only relative URLs, so a board may be mounted under a
// prefix with http.StripPrefix.
//
//	GET  /                          the page
//	GET  /static/...                its script, stylesheet, layout worker and dagre
//	GET  /api/board                 the current Snapshot, as JSON (shared by every request and page, made once per change)
//	GET  /api/events                Server-Sent Events: a "snapshot" event carrying a Snapshot at once, then a "change"
//	                                event carrying a Change after each change, each with the id EPOCH.VERSION; a
//	                                reconnect with a Last-Event-ID this server still has the changes since is sent
//	                                those, any other a "snapshot"; 503 with Retry-After past WithMaxStreams open streams
//	GET  /metrics                   the tasks by state, lapsed leases and open streams, in the Prometheus text format
//	POST /api/tasks                 create a task (CreateRequest); 201 and the task
//	POST /api/tasks/{id}/release    release a claim (ReleaseRequest)
//	POST /api/tasks/{id}/reopen     move a completed, failed or cancelled task back to pending (ReopenRequest)
//	POST /api/tasks/{id}/blockers   add an edge (BlockerRequest)
//	POST /api/tasks/{id}/approve    approve a task awaiting approval (ApproveRequest), by the name the page asks for
//	POST /api/tasks/{id}/reject     reject one, which cancels it (ApproveRequest with a reason)
//
// A refused write answers with an ErrorResponse: 403 when writes are off or
// the token or origin is wrong, 400 for an invalid input (ErrInvalid), 404
// for a task that does not exist, 409 for a cycle, a claim held by someone
// else, a stale rev or a task in the wrong state, 413 for a body over
// MaxTaskSize.
package board

import (
	"crypto/rand"
	"embed"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	hubapi "github.com/taskgraph-dev/taskgraph/hub"
)

//go:embed static
var staticFiles embed.FS

// TokenHeader is the request header that carries the token of a write:
// a token of the hub's (WithTokens).
const TokenHeader = "X-Taskgraph-Token"

// DefaultInterval is the least time between two snapshots the board sends
// to a page: changes that come faster are coalesced into one snapshot.
const DefaultInterval = 100 * time.Millisecond

// DefaultMaxStreams is how many event streams (open pages) a board serves
// at once unless WithMaxStreams says otherwise.
const DefaultMaxStreams = 256

// contentSecurityPolicy lets the page load only what the board serves.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; worker-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Option configures a Server.
type Option func(*config)

type config struct {
	writes   bool
	tokens   hubapi.Tokens
	hosts    []string
	title    string
	interval time.Duration
	streams  int
	log      *slog.Logger
}

// WithLogger gives the board a logger for what no request returns: a
// store that cannot be read for the pages, or watched for other
// processes' changes. Without it the board logs nothing.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.log = l } }

// AllowWrites turns on the page's actions: release a claim, reopen a task,
// add an edge, create a task. Each request must carry a token that the
// tokens of WithTokens know, of an agent or an admin, and does what that
// token may do through the hub's API (hubapi.As): an agent releases only
// its own claims, only an admin reopens. Without this option the board
// is read-only and every write is refused with 403; without WithTokens
// every write is refused with 401.
func AllowWrites() Option { return func(c *config) { c.writes = true } }

// WithTokens sets the tokens a write may carry: the hub's (a
// hubapi.TokenFile beside the task directory, hub/pgtokens, or
// hubapi.MemTokens). The board never logs nor echoes a token.
func WithTokens(tokens hubapi.Tokens) Option { return func(c *config) { c.tokens = tokens } }

// AllowHosts adds host names (without port) under which the board may be
// reached. IP addresses and "localhost" are always accepted; any other name
// in a request's Host header is refused, which defeats DNS rebinding: a
// page on another site whose name resolves to this machine cannot read the
// board.
func AllowHosts(hosts ...string) Option {
	return func(c *config) { c.hosts = append(c.hosts, hosts...) }
}

// WithTitle names the graph on the page, e.g. its directory.
func WithTitle(title string) Option { return func(c *config) { c.title = title } }

// WithInterval sets the least time between two snapshots sent to a page
// (default DefaultInterval).
func WithInterval(d time.Duration) Option { return func(c *config) { c.interval = d } }

// WithMaxStreams sets how many event streams — pages following the board
// live — the board serves at once (default DefaultMaxStreams; n < 1 means
// the default). Each holds a connection, a goroutine and its buffers while
// it is open; one past the limit is refused with 503 Service Unavailable
// and Retry-After until another closes.
func WithMaxStreams(n int) Option { return func(c *config) { c.streams = n } }

// Server is the board of one store: an http.Handler serving the page, its
// assets, the snapshot API and the event stream. Create it with New and
// Close it when done.
type Server struct {
	store taskgraph.Store
	cfg   config
	mux   *http.ServeMux
	hub   *hub

	epoch        string                 // names this server in event ids: a restarted one counts anew
	watchProblem atomic.Pointer[string] // why the store cannot be watched, if it cannot
}

// New returns the board of store. If store is a [taskgraph.Watcher] (every
// store of this module is), changes made by other processes reach the page
// as they happen; otherwise only the board's own writes do.
func New(store taskgraph.Store, opts ...Option) *Server {
	c := config{interval: DefaultInterval}
	for _, o := range opts {
		o(&c)
	}
	if c.interval <= 0 {
		c.interval = DefaultInterval
	}
	if c.streams < 1 {
		c.streams = DefaultMaxStreams
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	s := &Server{store: store, cfg: c, mux: http.NewServeMux(), epoch: rand.Text()[:10]}
	s.hub = newHub(s)
	s.routes()
	return s
}

// Close ends every open event stream and stops watching the store. The
// store itself stays open. Requests after Close are still served, but the
// event stream refuses them.
func (s *Server) Close() error {
	s.hub.close()
	return nil
}

// ServeHTTP serves the board. Requests naming a host that is not allowed
// (see AllowHosts) are refused with 403.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		httpError(w, http.StatusForbidden, "host "+r.Host+" is not allowed: reach the board by IP address or localhost, or start it with that host allowed")
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	s.mux.ServeHTTP(w, r)
}

func (s *Server) routes() {
	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		panic(err) // the embedded tree always has it
	}
	files := http.FileServerFS(static)
	s.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", contentSecurityPolicy)
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, static, "index.html")
	})
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})))
	s.mux.HandleFunc("GET /api/board", s.handleBoard)
	s.mux.HandleFunc("GET /api/events", s.handleEvents)
	s.mux.HandleFunc("GET /metrics", s.handleMetrics)
	s.mux.HandleFunc("POST /api/tasks", s.write(s.handleCreate))
	s.mux.HandleFunc("POST /api/tasks/{id}/release", s.write(onTask(s.handleRelease)))
	s.mux.HandleFunc("POST /api/tasks/{id}/reopen", s.write(onTask(s.handleReopen)))
	s.mux.HandleFunc("POST /api/tasks/{id}/blockers", s.write(onTask(s.handleAddBlocker)))
	s.mux.HandleFunc("POST /api/tasks/{id}/approve", s.write(onTask(s.handleApprove)))
	s.mux.HandleFunc("POST /api/tasks/{id}/reject", s.write(onTask(s.handleReject)))
}

// hostAllowed reports whether a request's Host names this board: an IP
// address, localhost, or a name given to AllowHosts.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if net.ParseIP(host) != nil || strings.EqualFold(host, "localhost") {
		return true
	}
	for _, h := range s.cfg.hosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	return false
}

// writeAllowed checks what every write must have: writes turned on, the
// board's own origin, and a token of an agent or an admin. It returns
// the store as the token's identity may use it, or the status and reason
// of a refusal.
func (s *Server) writeAllowed(r *http.Request) (hubapi.Store, int, string) {
	code, msg := s.sameOrigin(r)
	if code != 0 {
		return nil, code, msg
	}
	hs, ok := s.store.(hubapi.Store)
	if !ok || s.cfg.tokens == nil {
		return nil, http.StatusUnauthorized, "this board knows no tokens (board.WithTokens), so it takes no write"
	}
	who, err := s.cfg.tokens.Identify(r.Context(), strings.TrimSpace(r.Header.Get(TokenHeader)))
	if err != nil {
		return nil, http.StatusUnauthorized, "missing, unknown or revoked token: open the board at its URL followed by #token=TOKEN, with a token of `taskgraph token add NAME` (an agent's; --role admin to reopen tasks)"
	}
	return hubapi.As(hs, who), 0, "" // a viewer's write: hubapi.ErrForbidden, 403
}

// sameOrigin checks writes turned on and the board's own origin. It
// returns the status and reason of a refusal, or 0.
func (s *Server) sameOrigin(r *http.Request) (int, string) {
	if !s.cfg.writes {
		return http.StatusForbidden, "this board is read-only: start it with --allow-writes (board.AllowWrites) to change tasks from the page"
	}
	origin := r.Header.Get("Origin")
	u, err := url.Parse(origin)
	if origin == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
		return http.StatusForbidden, "cross-origin write refused: a write must come from the board's own page (Origin " + quoteOrNone(origin) + ", Host " + r.Host + ")"
	}
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return http.StatusForbidden, "cross-site write refused (Sec-Fetch-Site: " + site + ")"
	}
	return 0, ""
}

func quoteOrNone(s string) string {
	if s == "" {
		return "none"
	}
	return `"` + s + `"`
}

// hub runs one watch of the store while any page is connected, keeps the
// board's state — computed once per change, whatever the number of pages
// — and tells every connected page what changed, at most once per
// interval.
type hub struct {
	s    *Server
	poke chan struct{} // a write through this board: bring the state up to date
	done chan struct{} // closed by close

	compute  sync.Mutex            // held while a state is computed: one at a time
	cur      atomic.Pointer[state] // the latest state
	stale    atomic.Bool           // the store may have changed since cur was made
	watching atomic.Bool           // the loop watches the store: stale is told of every change
	anew     atomic.Bool           // the next state is made from the store, not by the events
	builds   atomic.Int64          // states made from the store, for the tests
	nexts    atomic.Int64          // states made from the one before by the events, for the tests

	evmu   sync.Mutex
	events []taskgraph.Event // the watch's events since the last refresh

	mu       sync.Mutex
	subs     map[*subscriber]struct{}
	recent   []change // the latest changes, oldest first, for pages a few versions behind
	failure  []byte   // the last failure event, if the last attempt failed
	failures int64    // failures so far
	stop     func()   // ends the running loop; nil when none runs
	closed   bool
}

// change is one version's Change event, framed.
type change struct {
	version int64
	data    []byte
}

type subscriber struct {
	wake chan struct{} // a new state or failure; a page only ever needs the latest
}

func newHub(s *Server) *hub {
	h := &hub{s: s, poke: make(chan struct{}, 1), done: make(chan struct{}), subs: map[*subscriber]struct{}{}}
	h.stale.Store(true)
	return h
}

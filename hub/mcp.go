// MCP over Streamable HTTP at /mcp: the same tools as `taskgraph mcp`
// on stdio, each session acting as the identity of its token.

package hub

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	tg "github.com/taskgraph-dev/taskgraph"
)

// MCPPath is where a hub serves MCP, when WithMCP says how.
const MCPPath = "/mcp"

// MCPSessionTimeout is how long an MCP session may go without a request
// (a POST: a client's open event stream does not count, as in the SDK)
// before the hub ends it; the client then starts a new one, as the
// protocol says. It bounds what clients that vanish leave behind.
const MCPSessionTimeout = time.Hour

// MCPServer returns the MCP server of one identity's sessions: its tools
// act on store, which is the hub's store as who may use it (As), as
// who.Name. lastSeen reports when who last had a request to /mcp open:
// now while one is (a client's event stream counts), so that the leases
// of who's claims can be renewed for as long as its client is there, as
// `taskgraph mcp` on stdio renews them for as long as it runs.
//
// A hub calls it once per identity, the first time the identity opens
// a session, and serves every session of that identity with the server
// it returned.
type MCPServer func(store Store, who Identity, lastSeen func() time.Time) *mcp.Server

// WithMCP serves MCP over Streamable HTTP at MCPPath, with the servers
// newServer makes. Every request needs a token, as the API's do, within
// the same rate; a session is bound to the identity that opened it: a
// request of another token (another name, or another role) on it is
// refused with 403, so that no one acts in another's session. At most
// MaxSessions sessions are kept at once (more: ErrBusy, 503), each ended
// after MCPSessionTimeout without a request.
func WithMCP(newServer MCPServer) Option {
	return func(s *Server) { s.mcp = &mcpHub{newServer: newServer, of: map[Identity]*mcpIdentity{}} }
}

// mcpHub serves /mcp.
type mcpHub struct {
	newServer MCPServer
	handler   http.Handler

	mu     sync.Mutex
	of     map[Identity]*mcpIdentity
	closed bool
}

// mcpIdentity is the MCP server of one identity, and when it was last
// seen.
type mcpIdentity struct {
	server *mcp.Server
	mu     sync.Mutex
	open   int       // requests open now
	last   time.Time // when the last one ended
}

func (m *mcpIdentity) lastSeen() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.open > 0 {
		return time.Now()
	}
	return m.last
}

func (m *mcpIdentity) begin() {
	m.mu.Lock()
	m.open++
	m.mu.Unlock()
}

func (m *mcpIdentity) end() {
	m.mu.Lock()
	m.open--
	m.last = time.Now()
	m.mu.Unlock()
}

// whoKey carries the Identity of an MCP request to getServer and the
// token verifier.
type whoKey struct{}

// routeMCP registers MCPPath, if WithMCP was given.
func (s *Server) routeMCP() {
	if s.mcp == nil {
		return
	}
	m := s.mcp
	streamable := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		who, ok := r.Context().Value(whoKey{}).(Identity)
		if !ok {
			return nil
		}
		id, err := m.identity(s.store, who)
		if err != nil {
			return nil
		}
		return id.server
	}, &mcp.StreamableHTTPOptions{SessionTimeout: MCPSessionTimeout, MaxRequestBodyBytes: s.maxBody})
	// The SDK binds a session to the UserID of the request that opened
	// it, and refuses a request of another UserID on it: the identity.
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		who, ok := ctx.Value(whoKey{}).(Identity)
		if !ok {
			return nil, fmt.Errorf("%w: no identity", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: string(who.Role) + ":" + who.Name}, nil
	}
	m.handler = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	s.mux.HandleFunc(MCPPath, s.handleMCP)
}

// handleMCP identifies an MCP request's token and serves it.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request) {
	who, err := s.identify(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	id, err := s.mcp.identity(s.store, who)
	if err == nil && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
		err = s.mcp.room() // a new session
	}
	if err != nil {
		writeError(w, err)
		return
	}
	id.begin()
	defer id.end()
	s.mcp.handler.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), whoKey{}, who)))
}

// identity returns the MCP server of who, making it the first time.
func (m *mcpHub) identity(store Store, who Identity) (*mcpIdentity, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, fmt.Errorf("hub: shutting down: %w", tg.ErrClosed)
	}
	id := m.of[who]
	if id == nil {
		id = &mcpIdentity{}
		id.server = m.newServer(As(store, who), who, id.lastSeen)
		m.of[who] = id
	}
	return id, nil
}

// room returns an error matching ErrBusy if the hub keeps MaxSessions
// MCP sessions already. Sessions opened at the same instant may pass it
// together: it bounds them by that many more.
func (m *mcpHub) room() error {
	m.mu.Lock()
	ids := make([]*mcpIdentity, 0, len(m.of))
	for _, id := range m.of {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	n := 0
	for _, id := range ids {
		for range id.server.Sessions() {
			n++
		}
	}
	if n >= MaxSessions {
		return fmt.Errorf("%w: this hub keeps at most %d MCP sessions; end one (the client's DELETE), or try again later", ErrBusy, MaxSessions)
	}
	return nil
}

// close ends every MCP session, and refuses new ones.
func (m *mcpHub) close() {
	m.mu.Lock()
	m.closed = true
	ids := make([]*mcpIdentity, 0, len(m.of))
	for _, id := range m.of {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	for _, id := range ids {
		for ss := range id.server.Sessions() {
			ss.Close()
		}
	}
}

// Package hub is the hub of a task graph: a Store served over HTTP to
// agents on other machines and in sandboxes (Server, which `taskgraph
// serve` runs), and the Store that talks to it (Client). Both halves live
// here because they share one thing that must be written once: the wire
// format, errors included.
//
// A harness switches stores by changing one line:
//
//	store, err := hub.NewClient("https://tasks.example.com:7777", os.Getenv("TASKGRAPH_TOKEN"))
//
// The client passes the taskgraph conformance suite and answers as
// MemStore does (taskgraphtest.Agree) with the hub in front of a
// MemStore, a FileStore and pgstore; it implements tg.Loader, tg.Noter,
// tg.Limiter and tg.Watcher.
//
// # The API
//
// Version 1 lives under /v1/. Bodies are JSON; a task, new task, patch,
// board or completion is the encoding/json form of its taskgraph type
// (Go field names, durations in nanoseconds, priorities as their level 0
// to 4, times in RFC 3339). Every request carries a token, as
// "Authorization: Bearer TOKEN".
//
//	GET    /v1/tasks/{id}            Get                     any role
//	GET    /v1/tasks?FILTERS         List                    any role
//	GET    /v1/board?FILTERS         Board                   any role
//	GET    /v1/limits                Limits                  any role
//	GET    /v1/whoami                the token's Identity    any role
//	GET    /v1/events                Watch (server-sent events) any role
//	POST   /v1/tasks                 Create (NewTask)        agent, admin
//	POST   /v1/plans                 CreatePlan ([]NewTask)  agent, admin
//	PATCH  /v1/tasks/{id}            Update (Patch)          agent (not Status, Owner), admin
//	POST   /v1/tasks/{id}/claim      Claim (ClaimRequest)    agent, admin
//	POST   /v1/claim-next            ClaimNext (ClaimRequest) agent, admin
//	POST   /v1/tasks/{id}/renew      Renew (RenewRequest)    agent, admin
//	POST   /v1/tasks/{id}/complete   Complete (CompleteRequest) agent, admin
//	POST   /v1/tasks/{id}/fail       Fail (FailRequest)      agent, admin
//	POST   /v1/tasks/{id}/release    Release (ReleaseRequest) agent, admin
//	POST   /v1/tasks/{id}/notes      Note (NoteRequest)      agent, admin
//	POST   /v1/tasks/{id}/cancel     Cancel (CancelRequest)  admin
//	POST   /v1/tasks/{id}/reopen     Reopen                  admin
//	DELETE /v1/tasks/{id}[?detach=true] Delete               admin
//	PUT    /v1/limits                SetLimit (LimitRequest) admin
//	POST   /v1/load                  Load ([]Task)           admin
//
// FILTERS are status and label (repeated), owner (present and empty: the
// tasks without an owner), ready=true, limit, under, asof (RFC 3339) and
// limits (a JSON object of label to limit), as the taskgraph Filters.
//
// A write answers 200 with the task (or tasks, or completion), or 204
// with nothing (Delete, SetLimit, Load). A refusal answers with an
// ErrorBody: the store's error text, its kind (not_found, invalid,
// blocked, claimed, conflict, cycle, deferred, limited, gave_up,
// no_ready, corrupt, unknown_outcome, closed, unauthorized, forbidden,
// canceled, deadline_exceeded, or internal) and, for a taskgraph typed
// error, its type and fields. The Client rebuilds the same error.
//
// # Tokens
//
// Roles are Viewer, Agent and Admin (see Role). An agent's token acts
// only as its own owner: an owner (or note author) in a request that
// differs is refused with ErrForbidden and nothing changes, and an empty
// one is the token's name. Tokens live in a TokenFile beside a task
// directory, in a PostgreSQL graph's database (package hub/pgtokens), or
// in MemTokens; only their SHA-256 is kept, compared in constant time.
//
// # Idempotency
//
// Every write of the Client carries a key (KeyHeader). A write whose
// answer was lost is sent again with the same key and RetryHeader; the
// hub answers it as it answered the first attempt, or waits for the
// first attempt if it still runs, and never applies it twice. The hub
// remembers keys in memory for KeyWindow, and a store that records keys
// with the writes they guard (tg.KeyRecorder: FileStore in the task
// files, pgstore in the write's transaction) remembers them across a
// restart of the hub: a retry the hub does not remember is answered from
// the store (recall.go) — the first attempt's answer, or the write run if
// the store is sure it never happened. In front of a store that does
// not (MemStore), such a retry is applied only if it names this very hub
// (HubHeader), so that the first attempt never reached it; otherwise it
// is refused with an error matching tg.ErrUnknownOutcome.
//
// # Watch
//
// GET /v1/events is a server-sent event stream of the store's events
// from the moment it is opened (see Server.handleEvents in events.go).
// Each stream is a session that outlives its connection for a minute
// and keeps its last EventWindow events, so that a client that
// reconnects with Last-Event-ID gets the events it missed, once each;
// where the hub cannot resume (it restarted, or the client missed more),
// it sends "resync" and the Client re-reads by itself.
//
// # MCP
//
// WithMCP serves MCP over Streamable HTTP at MCPPath ("/mcp") on the
// same server: each session is bound to its token's identity and its
// tools act on As(store, who), the store as that identity may use it,
// so the API and MCP enforce the same rules.
//
// See docs/hub.md for what is not built yet.
package hub

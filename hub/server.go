// The server: the Store contract as versioned JSON over HTTP.

package hub

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// Store is what a hub serves: a Store with every optional capability the
// local stores have. *tg.FileStore, *tg.MemStore and *pgstore.Store are
// each one.
type Store interface {
	tg.Store
	tg.Loader
	tg.Noter
	tg.Limiter
	tg.LivenessDefaulter
	tg.Approver
	tg.ApprovalPolicer
	tg.Watcher
}

// MaxBody bounds a request's body, in bytes: a plan or a load of many
// tasks is large, but nothing legitimate comes near it. A larger body is
// refused with ErrInvalid.
const MaxBody = 64 << 20

// Server serves a Store under /v1/ (see the package documentation for
// the endpoints). Every request needs a token that tokens knows, and may
// do only what its role allows.
type Server struct {
	store    Store
	tokens   Tokens
	maxBody  int64
	keys     *keys
	sessions *sessions
	id       string // this instance, in HubHeader
	rate     *rate
	mux      *http.ServeMux
	routes   []string     // every pattern handled, for the access-matrix test
	recalled atomic.Int64 // retries answered from the store's keys (recall)
	mcp      *mcpHub      // nil without WithMCP
}

// NewServer returns a server of store for the holders of tokens. It does
// not close store; Close stops what it runs.
func NewServer(store Store, tokens Tokens, opts ...Option) *Server {
	s := &Server{store: store, tokens: tokens, maxBody: MaxBody, keys: newKeys(), sessions: newSessions(store), id: randomID(),
		rate: newRate(DefaultRate, DefaultBurst), mux: http.NewServeMux()}
	for _, o := range opts {
		o(s)
	}
	s.route()
	s.routeMCP()
	return s
}

// Close ends the event streams and the store's watch that feeds them,
// and the MCP sessions, so that an http.Server's Shutdown need not wait
// for them. Later streams and sessions are refused.
func (s *Server) Close() error {
	s.sessions.close()
	if s.mcp != nil {
		s.mcp.close()
	}
	return nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set(HubHeader, s.id)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	s.mux.ServeHTTP(w, r)
}

// request is what a handler gets: the request, who sent it, and the
// task id of its path, if any.
type request struct {
	*http.Request
	who    Identity
	st     Store // the store as who may use it (As)
	id     tg.ID
	data   []byte // the body
	marked bool   // the body holds a floatMarker
}

// unmark returns metadata m of the body with its floatMarker objects
// read back.
func (r *request) unmark(m map[string]any) map[string]any {
	if !r.marked {
		return m
	}
	return unmarkMeta(m)
}

func (s *Server) route() {
	s.handle("GET /v1/tasks/{id}", read, func(r *request) (any, error) { return r.st.Get(r.Context(), r.id) })
	s.handle("GET /v1/tasks", read, func(r *request) (any, error) {
		fs, err := queryFilters(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return r.st.List(r.Context(), fs...)
	})
	s.handle("GET /v1/board", read, func(r *request) (any, error) {
		fs, err := queryFilters(r.URL.Query())
		if err != nil {
			return nil, err
		}
		return r.st.Board(r.Context(), fs...)
	})
	s.handle("GET /v1/whoami", read, func(r *request) (any, error) { return r.who, nil })
	s.handle("GET /v1/limits", read, func(r *request) (any, error) { return r.st.Limits(r.Context()) })
	s.handle("GET /v1/liveness", read, func(r *request) (any, error) { return r.st.LivenessDefaults(r.Context()) })
	s.handle("POST /v1/tasks", write, withBody(func(r *request, nt tg.NewTask) (any, error) {
		nt.Metadata = r.unmark(nt.Metadata)
		return r.st.Create(r.Context(), nt)
	}))
	s.handle("POST /v1/plans", write, withBody(func(r *request, nts []tg.NewTask) (any, error) {
		for i, nt := range nts {
			nts[i].Metadata = r.unmark(nt.Metadata)
		}
		return r.st.CreatePlan(r.Context(), nts)
	}))
	s.handle("POST /v1/load", admin, withBody(func(r *request, ts []tg.Task) (any, error) {
		for i := range ts {
			ts[i].Metadata = r.unmark(ts[i].Metadata)
		}
		return nil, r.st.Load(r.Context(), ts)
	}))
	s.handle("PATCH /v1/tasks/{id}", write, withBody(func(r *request, p tg.Patch) (any, error) {
		p.Metadata = r.unmark(p.Metadata)
		return r.st.Update(r.Context(), r.id, p)
	}))
	s.handle("POST /v1/tasks/{id}/claim", write, withBody(func(r *request, c ClaimRequest) (any, error) {
		return r.st.Claim(r.Context(), r.id, c.Owner, claimOptions(c)...)
	}))
	s.handle("POST /v1/claim-next", write, withBody(func(r *request, c ClaimRequest) (any, error) {
		return r.st.ClaimNext(r.Context(), c.Owner, claimOptions(c)...)
	}))
	s.handle("POST /v1/tasks/{id}/renew", write, withBody(func(r *request, c RenewRequest) (any, error) {
		return r.st.Renew(r.Context(), r.id, c.Owner, c.TTL)
	}))
	s.handle("POST /v1/tasks/{id}/complete", write, withBody(func(r *request, c CompleteRequest) (any, error) {
		var opts []tg.CompleteOption
		if c.Result != "" {
			opts = append(opts, tg.WithResult(c.Result))
		}
		if c.Evidence != nil {
			opts = append(opts, tg.WithEvidence(*c.Evidence))
		}
		if c.SkipCheck {
			opts = append(opts, tg.SkipCheck())
		}
		return r.st.Complete(r.Context(), r.id, c.Owner, opts...)
	}))
	s.handle("POST /v1/tasks/{id}/fail", write, withBody(func(r *request, c FailRequest) (any, error) {
		return r.st.Fail(r.Context(), r.id, c.Owner, c.Reason)
	}))
	s.handle("POST /v1/tasks/{id}/release", write, withBody(func(r *request, c ReleaseRequest) (any, error) {
		return r.st.Release(r.Context(), r.id, c.Owner)
	}))
	s.handle("POST /v1/tasks/{id}/notes", write, withBody(func(r *request, c NoteRequest) (any, error) {
		return r.st.Note(r.Context(), r.id, c.Author, c.Text)
	}))
	s.handle("POST /v1/tasks/{id}/cancel", admin, withBody(func(r *request, c CancelRequest) (any, error) {
		return r.st.Cancel(r.Context(), r.id, c.Reason)
	}))
	s.handle("POST /v1/tasks/{id}/reopen", admin, withBody(func(r *request, _ struct{}) (any, error) { return r.st.Reopen(r.Context(), r.id) }))
	s.handle("DELETE /v1/tasks/{id}", admin, func(r *request) (any, error) {
		var opts []tg.DeleteOption
		if v := r.URL.Query().Get("detach"); v != "" {
			detach, err := strconv.ParseBool(v)
			if err != nil {
				return nil, queryError("detach", v, err)
			}
			if detach {
				opts = append(opts, tg.Detach())
			}
		}
		return nil, r.st.Delete(r.Context(), r.id, opts...)
	})
	s.handle("PUT /v1/limits", admin, withBody(func(r *request, c LimitRequest) (any, error) {
		return nil, r.st.SetLimit(r.Context(), c.Label, c.N)
	}))
	s.handle("PUT /v1/liveness", admin, withBody(func(r *request, c LivenessRequest) (any, error) {
		return nil, r.st.SetLivenessDefault(r.Context(), c.Label, tg.LivenessDefault{MaxRuntime: c.MaxRuntime, ProgressWindow: c.ProgressWindow})
	}))
	s.routeApproval()
	s.routes = append(s.routes, "GET /v1/events")
	s.mux.HandleFunc("GET /v1/events", s.handleEvents)
	s.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, fmt.Errorf("%w: no endpoint %s %s in the API (see docs/hub.md)", tg.ErrNotFound, r.Method, r.URL.Path))
	})
}

// claimOptions returns the options a claim request asks for.
func claimOptions(c ClaimRequest) []tg.ClaimOption {
	var opts []tg.ClaimOption
	if c.Lease != 0 {
		opts = append(opts, tg.WithLease(c.Lease))
	}
	if len(c.Labels) > 0 {
		opts = append(opts, tg.WithLabels(c.Labels...))
	}
	if c.Under != 0 {
		opts = append(opts, tg.WithUnder(c.Under))
	}
	return opts
}

// handle serves pattern with h for the tokens whose role meets need: it
// identifies the token, bounds the body, reads the path's id, and writes
// h's answer (204 for nil) or its error.
func (s *Server) handle(pattern string, n need, h func(r *request) (any, error)) {
	s.routes = append(s.routes, pattern)
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, hr *http.Request) {
		who, err := s.identify(w, hr)
		if err == nil {
			err = who.may(n)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		r := &request{Request: hr, who: who, st: As(s.store, who)}
		if r.data, err = io.ReadAll(http.MaxBytesReader(w, hr.Body, s.maxBody)); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				err = &tg.InvalidError{Field: "body", Reason: fmt.Sprintf("too large: the hub takes at most %d bytes", tooBig.Limit)}
			}
			writeError(w, err)
			return
		}
		if v := hr.PathValue("id"); v != "" {
			id, perr := strconv.ParseInt(v, 10, 64)
			if perr != nil {
				writeError(w, &tg.InvalidError{Field: "id", Reason: fmt.Sprintf("%q in the path is not a task id", v)})
				return
			}
			r.id = tg.ID(id)
		}
		key := hr.Header.Get(KeyHeader)
		if n == read || key == "" {
			a, _ := run(r, h)
			a.write(w)
			return
		}
		s.runOnce(w, r, key, shapes[pattern], h)
	})
}

// runOnce runs the write h of r keyed key at most once: a retry of it
// waits for the first attempt and gets its answer. The store records
// the key with the write if it can (tg.WithWriteKey); a retry the hub
// does not remember is then answered from the store (recall).
func (s *Server) runOnce(w http.ResponseWriter, r *request, key string, sh shape, h func(r *request) (any, error)) {
	fp := fingerprint(r.who, r.Request, r.data)
	retryOf := r.Header.Get(RetryHeader)
	retry, sameHub := retryOf != "", retryOf == s.id
	kr := s.recaller(sh)
	if kr != nil {
		r.Request = r.WithContext(tg.WithWriteKey(r.Context(), storeKey(key, fp)))
	}
	for {
		e, runs, err := s.keys.begin(r.who, key, fp, retry, sameHub, kr != nil)
		if err != nil {
			writeError(w, err)
			return
		}
		if runs && e.ask {
			if a := s.recall(r.Context(), kr, sh, storeKey(key, fp)); a != nil {
				s.keys.finish(e, a) // remembered: the next retry is answered alike
				a.write(w)
				return
			}
			// The store is sure the first attempt never happened: this
			// one is the first.
		}
		if runs {
			a, happened := run(r, h)
			if e.ask && sh == noBody && r.Method == http.MethodDelete {
				a = goneOnRetry(a)
			}
			if !happened {
				s.keys.finish(e, nil)
			} else {
				s.keys.finish(e, a)
			}
			a.write(w)
			return
		}
		select {
		case <-e.done:
		case <-r.Context().Done():
			writeError(w, r.Context().Err())
			return
		}
		if e.answer != nil {
			e.answer.write(w)
			return
		}
		retry = true // it did not happen: run it (begin finds the key)
	}
}

// run runs h and returns its answer, and whether the write may have
// happened: every answer but a context's end before the store decided.
func run(r *request, h func(r *request) (any, error)) (*answer, bool) {
	out, err := h(r)
	if err != nil {
		notDone := (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) && !errors.Is(err, tg.ErrUnknownOutcome)
		return errorAnswer(err), !notDone
	}
	if out == nil {
		return &answer{status: http.StatusNoContent}, true
	}
	return jsonAnswer(http.StatusOK, out), true
}

// identify returns who the request's bearer token speaks for, if the
// token is within its rate.
func (s *Server) identify(w http.ResponseWriter, r *http.Request) (Identity, error) {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok && auth != "" {
		return Identity{}, fmt.Errorf("%w: the Authorization header must be \"Bearer TOKEN\"", ErrUnauthorized)
	}
	who, err := s.tokens.Identify(r.Context(), strings.TrimSpace(tok))
	if err != nil {
		return who, err
	}
	if ok, wait := s.rate.allow(who.Name, time.Now()); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		return who, fmt.Errorf("%w: %q is past %g requests a second; wait %v", ErrRateLimited, who.Name, s.rate.perSecond, wait.Round(time.Millisecond))
	}
	return who, nil
}

// decode reads the body into v: one JSON value, unknown fields refused.
// An empty body is an empty object.
func (r *request) decode(v any) error {
	data := r.data
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	r.marked = bytes.Contains(data, []byte(`"`+floatMarker+`"`))
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &tg.InvalidError{Field: "body", Reason: "not the JSON this endpoint takes: " + err.Error()}
	}
	if dec.More() {
		return &tg.InvalidError{Field: "body", Reason: "more than one JSON value"}
	}
	return nil
}

// withBody is h for an endpoint whose body is a Req: the body is decoded
// (decode) before h runs, and one that is not a Req is refused.
func withBody[Req any](h func(r *request, body Req) (any, error)) func(r *request) (any, error) {
	return func(r *request) (any, error) {
		var body Req
		if err := r.decode(&body); err != nil {
			return nil, err
		}
		return h(r, body)
	}
}

// writeError answers with err as ErrorBody.
func writeError(w http.ResponseWriter, err error) { errorAnswer(err).write(w) }

// errorAnswer is the answer that refuses with err.
func errorAnswer(err error) *answer {
	status, body := errorBody(err)
	a := jsonAnswer(status, body)
	if status == http.StatusUnauthorized {
		a.header = http.Header{"Www-Authenticate": {`Bearer realm="taskgraph"`}}
	}
	return a
}

// jsonAnswer is the answer v as JSON.
func jsonAnswer(status int, v any) *answer {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return errorAnswer(fmt.Errorf("hub: encoding the answer: %w", err))
	}
	return &answer{status: status, body: buf.Bytes()}
}

// write sends a.
func (a *answer) write(w http.ResponseWriter) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	if a.body != nil {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(a.status)
	w.Write(a.body)
}

// randomID returns 96 random bits, as text.
func randomID() string {
	var b [12]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// The client: a taskgraph.Store that talks to a hub.

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
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// Client is a Store served by a hub: every method is one HTTP request,
// and answers — results and errors alike — as the store behind the hub
// does (errors.Is and errors.As match the same taskgraph sentinels and
// typed errors, with the same text). It is safe for concurrent use.
//
// Every write carries an idempotency key (KeyHeader). A write whose
// answer is lost (the connection broke after the request went out) is
// sent again with the same key for about two seconds, and the hub
// answers the retry as it answered the first attempt, applying nothing
// twice. If no answer comes, or the hub no longer remembers the key (it
// restarted), the write returns an error matching tg.ErrUnknownOutcome,
// as the Store contract says, wrapping the failure; so does a write
// whose ctx ended after the request went out.
type Client struct {
	base   *url.URL
	token  string
	http   *http.Client
	own    bool // http is the client's own, closed with it
	closed atomic.Bool
	done   chan struct{} // closed by Close: ends the watches
	hub    atomic.Value  // string: the HubHeader of the last answer
}

var (
	_ tg.Store             = (*Client)(nil)
	_ tg.Loader            = (*Client)(nil)
	_ tg.Noter             = (*Client)(nil)
	_ tg.Limiter           = (*Client)(nil)
	_ tg.LivenessDefaulter = (*Client)(nil)
	_ tg.Watcher           = (*Client)(nil)
	_ Store                = (*Client)(nil)
)

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithHTTPClient makes the client send its requests with hc (for a
// custom TLS configuration or transport); Close leaves it open.
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *Client) { c.http, c.own = hc, false }
}

// NewClient returns a Store that talks to the hub at hubURL (such as
// https://tasks.example.com:7777) with token. The URL must be https, or
// http to a loopback address only: a token must not cross a network in
// the clear. Nothing is sent until the first call.
func NewClient(hubURL, token string, opts ...ClientOption) (*Client, error) {
	u, err := url.Parse(hubURL)
	if err != nil {
		return nil, &tg.InvalidError{Field: "url", Reason: err.Error()}
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopback(u.Hostname()):
	case u.Scheme == "http":
		return nil, &tg.InvalidError{Field: "url", Reason: fmt.Sprintf("%s: http:// only to a loopback address; use https:// for a hub on another machine", hubURL)}
	default:
		return nil, &tg.InvalidError{Field: "url", Reason: fmt.Sprintf("%s: a hub's URL is https://HOST[:PORT] (or http:// on loopback)", hubURL)}
	}
	if token == "" {
		return nil, &tg.InvalidError{Field: "token", Reason: "must not be empty: taskgraph token add NAME prints one"}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // many goroutines of one agent share the client
	c := &Client{base: &url.URL{Scheme: u.Scheme, Host: u.Host, Path: strings.TrimSuffix(u.Path, "/")}, token: token,
		http: &http.Client{Transport: tr}, own: true, done: make(chan struct{})}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// loopback reports whether host names this machine only.
func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Close closes the client (not the store behind the hub): later calls
// return tg.ErrClosed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.done)
	if c.own {
		c.http.CloseIdleConnections()
	}
	return nil
}

// Create implements tg.Store.
func (c *Client) Create(ctx context.Context, nt tg.NewTask) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, "/v1/tasks", nil, nt, &t, func() error { return tg.Rules.CreateArgs(nt) })
	return t, err
}

// CreatePlan implements tg.Store.
func (c *Client) CreatePlan(ctx context.Context, nts []tg.NewTask) ([]tg.Task, error) {
	var ts []tg.Task
	err := c.call(ctx, http.MethodPost, "/v1/plans", nil, nts, &ts, func() error { return tg.Rules.PlanArgs(nts) })
	return ts, err
}

// Get implements tg.Store.
func (c *Client) Get(ctx context.Context, id tg.ID) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodGet, taskPath(id), nil, nil, &t, nil)
	return t, err
}

// List implements tg.Store.
func (c *Client) List(ctx context.Context, filters ...tg.Filter) ([]tg.Task, error) {
	sel, err := tg.Rules.Filters(filters)
	if err != nil {
		return nil, err
	}
	var ts []tg.Task
	err = c.call(ctx, http.MethodGet, "/v1/tasks", selectionQuery(sel), nil, &ts, nil)
	return ts, err
}

// Board implements tg.Store.
func (c *Client) Board(ctx context.Context, filters ...tg.Filter) (tg.Board, error) {
	sel, err := tg.Rules.Filters(filters)
	if err != nil {
		return tg.Board{}, err
	}
	var b tg.Board
	err = c.call(ctx, http.MethodGet, "/v1/board", selectionQuery(sel), nil, &b, nil)
	return b, err
}

// Update implements tg.Store.
func (c *Client) Update(ctx context.Context, id tg.ID, p tg.Patch) (tg.Task, error) {
	if p.Labels != nil && *p.Labels == nil {
		p.Labels = &[]string{} // JSON has no pointer to a nil slice: both remove every label
	}
	var t tg.Task
	err := c.call(ctx, http.MethodPatch, taskPath(id), nil, p, &t, func() error { return tg.Rules.PatchArgs(p) })
	return t, err
}

// Claim implements tg.Store.
func (c *Client) Claim(ctx context.Context, id tg.ID, owner string, opts ...tg.ClaimOption) (tg.Task, error) {
	if c.closed.Load() {
		return tg.Task{}, tg.ErrClosed
	}
	set, err := tg.Rules.ClaimOptions(opts)
	if err != nil {
		return tg.Task{}, err
	}
	var t tg.Task
	err = c.call(ctx, http.MethodPost, taskPath(id)+"/claim", nil, ClaimRequest{Owner: owner, Lease: set.Lease}, &t,
		func() error { return tg.Rules.ClaimArgs(owner, set.Lease) })
	return t, err
}

// ClaimNext implements tg.Store.
func (c *Client) ClaimNext(ctx context.Context, owner string, opts ...tg.ClaimOption) (tg.Task, error) {
	if c.closed.Load() {
		return tg.Task{}, tg.ErrClosed
	}
	set, err := tg.Rules.ClaimOptions(opts)
	if err != nil {
		return tg.Task{}, err
	}
	var t tg.Task
	err = c.call(ctx, http.MethodPost, "/v1/claim-next", nil, ClaimRequest{Owner: owner, Lease: set.Lease, Labels: set.Labels, Under: set.Under}, &t,
		func() error { _, err := tg.Rules.ClaimNextArgs(owner, set.Lease, set.Labels); return err })
	return t, err
}

// Renew implements tg.Store.
func (c *Client) Renew(ctx context.Context, id tg.ID, owner string, ttl time.Duration) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, taskPath(id)+"/renew", nil, RenewRequest{Owner: owner, TTL: ttl}, &t,
		func() error { return tg.Rules.Text("owner", owner) })
	return t, err
}

// Complete implements tg.Store.
func (c *Client) Complete(ctx context.Context, id tg.ID, owner string, opts ...tg.CompleteOption) (tg.Completion, error) {
	if c.closed.Load() {
		return tg.Completion{}, tg.ErrClosed
	}
	set, err := tg.Rules.CompleteOptions(opts)
	if err != nil {
		return tg.Completion{}, err
	}
	var out tg.Completion
	err = c.call(ctx, http.MethodPost, taskPath(id)+"/complete", nil, CompleteRequest{Owner: owner, Result: set.Result, Evidence: set.Evidence, SkipCheck: set.SkipCheck}, &out,
		func() error {
			if err := tg.Rules.CompleteArgs(set.Result); err != nil {
				return err
			}
			return tg.Rules.Text("owner", owner)
		})
	return out, err
}

// Fail implements tg.Store.
func (c *Client) Fail(ctx context.Context, id tg.ID, owner, reason string) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, taskPath(id)+"/fail", nil, FailRequest{Owner: owner, Reason: reason}, &t,
		func() error {
			if err := tg.Rules.FailArgs(reason); err != nil {
				return err
			}
			return tg.Rules.Text("owner", owner)
		})
	return t, err
}

// Cancel implements tg.Store.
func (c *Client) Cancel(ctx context.Context, id tg.ID, reason string) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, taskPath(id)+"/cancel", nil, CancelRequest{Reason: reason}, &t,
		func() error { return tg.Rules.CancelArgs(reason) })
	return t, err
}

// Reopen implements tg.Store.
func (c *Client) Reopen(ctx context.Context, id tg.ID) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, taskPath(id)+"/reopen", nil, struct{}{}, &t, nil)
	return t, err
}

// Release implements tg.Store.
func (c *Client) Release(ctx context.Context, id tg.ID, owner string) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, taskPath(id)+"/release", nil, ReleaseRequest{Owner: owner}, &t,
		func() error { return tg.Rules.Text("owner", owner) })
	return t, err
}

// Delete implements tg.Store.
func (c *Client) Delete(ctx context.Context, id tg.ID, opts ...tg.DeleteOption) error {
	if c.closed.Load() {
		return tg.ErrClosed
	}
	set, err := tg.Rules.DeleteOptions(opts)
	if err != nil {
		return err
	}
	var q url.Values
	if set.Detach {
		q = url.Values{"detach": {"true"}}
	}
	return c.call(ctx, http.MethodDelete, taskPath(id), q, nil, nil, nil)
}

// Load implements tg.Loader.
func (c *Client) Load(ctx context.Context, tasks []tg.Task) error {
	return c.call(ctx, http.MethodPost, "/v1/load", nil, tasks, nil, func() error { return tg.Rules.LoadArgs(tasks) })
}

// Note implements tg.Noter.
func (c *Client) Note(ctx context.Context, id tg.ID, author, text string) (tg.Task, error) {
	var t tg.Task
	err := c.call(ctx, http.MethodPost, taskPath(id)+"/notes", nil, NoteRequest{Author: author, Text: text}, &t,
		func() error { return tg.Rules.NoteArgs(author, text) })
	return t, err
}

// SetLimit implements tg.Limiter.
func (c *Client) SetLimit(ctx context.Context, label string, n int) error {
	return c.call(ctx, http.MethodPut, "/v1/limits", nil, LimitRequest{Label: label, N: n}, nil,
		func() error { return tg.Rules.LimitArgs(label, n) })
}

// SetLivenessDefault implements tg.LivenessDefaulter.
func (c *Client) SetLivenessDefault(ctx context.Context, label string, d tg.LivenessDefault) error {
	return c.call(ctx, http.MethodPut, "/v1/liveness", nil, LivenessRequest{Label: label, MaxRuntime: d.MaxRuntime, ProgressWindow: d.ProgressWindow}, nil,
		func() error { return tg.Rules.LivenessDefaultArgs(label, d) })
}

// LivenessDefaults implements tg.LivenessDefaulter.
func (c *Client) LivenessDefaults(ctx context.Context) (map[string]tg.LivenessDefault, error) {
	var m map[string]tg.LivenessDefault
	err := c.call(ctx, http.MethodGet, "/v1/liveness", nil, nil, &m, nil)
	return m, err
}

// Limits implements tg.Limiter.
func (c *Client) Limits(ctx context.Context) (map[string]int, error) {
	var m map[string]int
	err := c.call(ctx, http.MethodGet, "/v1/limits", nil, nil, &m, nil)
	return m, err
}

// Whoami returns who the client's token speaks for: as an agent, its
// name is the only owner it may act as.
func (c *Client) Whoami(ctx context.Context) (Identity, error) {
	var who Identity
	err := c.call(ctx, http.MethodGet, "/v1/whoami", nil, nil, &who, nil)
	return who, err
}

func taskPath(id tg.ID) string { return "/v1/tasks/" + strconv.FormatInt(int64(id), 10) }

// call sends one request and decodes its answer into out (unless nil) or
// returns its error. A body that JSON cannot carry (text that is not
// valid UTF-8, a NaN) is not sent: args, the rule the store runs on the
// arguments first, says what is wrong with it, as the store would.
func (c *Client) call(ctx context.Context, method, path string, q url.Values, body, out any, args func() error) error {
	if c.closed.Load() {
		return tg.ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var data []byte
	if body != nil {
		var err error
		data, err = json.Marshal(body)
		if err != nil {
			data, err = json.Marshal(markFloats(body))
		}
		if err != nil || invalidUTF8(data) {
			// JSON cannot carry it: the store's own rule says what is
			// wrong, before anything is sent.
			if args != nil {
				if aerr := args(); aerr != nil {
					return aerr
				}
			}
			if err != nil {
				return &tg.InvalidError{Field: "request", Reason: "not representable as JSON: " + err.Error()}
			}
			return &tg.InvalidError{Field: "text", Reason: "is not valid UTF-8: send text as UTF-8"}
		}
	}
	u := *c.base
	u.Path += path
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	key, retryOf := "", ""
	if method != http.MethodGet {
		key = newKey()
		if retryOf, _ = c.hub.Load().(string); retryOf == "" {
			retryOf = "1" // no hub answered yet: one that does not know the key cannot tell
		}
	}
	lost, paused := 0, 0 // attempts whose answer was lost; pauses the hub asked for
	for {
		retry := ""
		if lost > 0 {
			retry = retryOf
		}
		status, answer, after, err := c.send(ctx, method, u.String(), data, key, retry)
		if err == nil && status == http.StatusTooManyRequests && paused < maxPauses {
			// Past the token's rate: nothing was done; wait as told.
			paused++
			select {
			case <-ctx.Done():
				return decodeAnswer(method, path, status, answer, out)
			case <-time.After(after):
			}
			continue
		}
		if err == nil {
			return decodeAnswer(method, path, status, answer, out)
		}
		if err = c.failed(method, err); lost > 0 && !errors.Is(err, tg.ErrUnknownOutcome) {
			err = &unknownOutcomeError{err} // an earlier attempt may have been applied
		}
		if !errors.Is(err, tg.ErrUnknownOutcome) || lost >= len(retryWaits) {
			return err
		}
		// The write may have happened: send it again with its key, and
		// the hub answers as it answered the first (or says it cannot
		// know), never applying it twice.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retryWaits[lost]):
		}
		lost++
	}
}

// maxPauses bounds how often one call waits out the token's rate.
const maxPauses = 20

// retryWaits are the pauses before each retry of a write whose answer
// was lost: about two seconds in all, enough for a hub to restart.
var retryWaits = []time.Duration{20 * time.Millisecond, 100 * time.Millisecond, 300 * time.Millisecond, 600 * time.Millisecond, time.Second}

// newKey returns a new idempotency key: 128 random bits.
func newKey() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// send makes one attempt of a request and returns its status and body,
// or the failure that left it without an answer.
func (c *Client) send(ctx context.Context, method, u string, data []byte, key, retry string) (int, []byte, time.Duration, error) {
	var rd io.Reader
	if data != nil {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set(KeyHeader, key)
	}
	if retry != "" {
		req.Header.Set(RetryHeader, retry)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, 0, err
	}
	defer resp.Body.Close()
	if h := resp.Header.Get(HubHeader); h != "" {
		c.hub.Store(h)
	}
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, 0, err
	}
	after := 100 * time.Millisecond
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n > 0 {
		after = time.Duration(n) * time.Second
	}
	if resp.StatusCode >= 300 {
		var eb ErrorBody
		if jerr := json.Unmarshal(answer, &eb); jerr != nil || eb.Error == "" {
			// Not the hub's answer (a proxy's, say): the request may
			// have reached it.
			return 0, nil, 0, fmt.Errorf("hub: %s %s: %s", method, req.URL.Path, resp.Status)
		}
	}
	return resp.StatusCode, answer, after, nil
}

// decodeAnswer decodes the hub's answer into out (unless nil), or
// returns the error it carries.
func decodeAnswer(method, path string, status int, answer []byte, out any) error {
	if status >= 300 {
		var eb ErrorBody
		json.Unmarshal(answer, &eb) // send checked it
		return decodeError(eb)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("hub: %s %s: the answer is not the JSON expected: %w", method, path, err)
	}
	return nil
}

// failed is the error of a request that got no answer the client can
// read: for a write that may have reached the store, one matching
// tg.ErrUnknownOutcome; for a read, or a write that surely never left
// (the connection was refused), the failure as it is.
func (c *Client) failed(method string, err error) error {
	var op *net.OpError
	if method == http.MethodGet || errors.As(err, &op) && op.Op == "dial" {
		return fmt.Errorf("hub: %w", err)
	}
	return &unknownOutcomeError{err}
}

// invalidUTF8 reports whether JSON that encoding/json wrote holds a
// string that was not valid UTF-8: it writes each invalid byte as the
// escape \ufffd, and a valid U+FFFD as itself.
func invalidUTF8(data []byte) bool {
	for i := 0; i+1 < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		i++
		if data[i] == 'u' && i+5 <= len(data) && string(data[i+1:i+5]) == "fffd" {
			return true
		}
	}
	return false
}

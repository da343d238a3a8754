// The wire format of the API: the bodies of requests and responses, and
// errors as they cross the network — written once, for the server and the
// client.

package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// The bodies of the requests that are not a taskgraph type as it is.
// Tasks, new tasks, patches, boards and completions travel as the
// encoding/json form of their taskgraph types: Go field names,
// durations in nanoseconds, priorities as their level (0 to 4), times in
// RFC 3339.
type (
	// ClaimRequest is the body of POST /v1/tasks/{id}/claim and POST
	// /v1/claim-next. Labels and Under count for claim-next only.
	ClaimRequest struct {
		Owner  string
		Lease  time.Duration `json:",omitempty"`
		Labels []string      `json:",omitempty"`
		Under  tg.ID         `json:",omitempty"`
	}
	// RenewRequest is the body of POST /v1/tasks/{id}/renew.
	RenewRequest struct {
		Owner string
		TTL   time.Duration
	}
	// CompleteRequest is the body of POST /v1/tasks/{id}/complete.
	CompleteRequest struct {
		Owner  string
		Result string `json:",omitempty"`
		// Evidence is the run of the task's check that the caller made
		// (tg.WithEvidence); SkipCheck completes without it
		// (tg.SkipCheck), which an agent's token may not.
		Evidence  *tg.Evidence `json:",omitempty"`
		SkipCheck bool         `json:",omitempty"`
	}
	// FailRequest is the body of POST /v1/tasks/{id}/fail.
	FailRequest struct {
		Owner  string
		Reason string
	}
	// CancelRequest is the body of POST /v1/tasks/{id}/cancel.
	CancelRequest struct {
		Reason string
	}
	// ReleaseRequest is the body of POST /v1/tasks/{id}/release.
	ReleaseRequest struct {
		Owner string
	}
	// NoteRequest is the body of POST /v1/tasks/{id}/notes. An agent's
	// token may leave Author empty: it is the token's name.
	NoteRequest struct {
		Author string
		Text   string
	}
	// LimitRequest is the body of PUT /v1/limits.
	LimitRequest struct {
		Label string
		N     int
	}
	// LivenessRequest is the body of PUT /v1/liveness: a label's default
	// liveness (tg.LivenessDefault); zero durations remove it.
	LivenessRequest struct {
		Label          string
		MaxRuntime     time.Duration `json:",omitempty"`
		ProgressWindow time.Duration `json:",omitempty"`
	}
)

// ErrorBody is the body of every refusal: the error's text as the store
// wrote it, its kind (which sentinel it matches, see Kind), and, for a
// typed error, its type name and fields, from which the client rebuilds
// the same error.
type ErrorBody struct {
	Error  string          `json:"error"`
	Kind   string          `json:"kind"`
	Type   string          `json:"type,omitempty"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

// The hub's own refusals, beside the store's errors.
var (
	// ErrUnauthorized is matched by the error of a request without a
	// token, or with one the hub does not know (never issued, or
	// revoked).
	ErrUnauthorized = errors.New("hub: missing, unknown or revoked token")
	// ErrForbidden is matched by the error of a request its token may not
	// make: a viewer writing, an agent acting as another owner or doing
	// what only an admin may. Nothing was changed.
	ErrForbidden = errors.New("hub: the token may not do this")
)

// kinds maps each kind on the wire to the sentinel it stands for, and
// the status the server answers with. The first that an error matches
// names it (a store error matches at most one of the taskgraph
// sentinels).
var kinds = []struct {
	name   string
	err    error
	status int
}{
	{"not_found", tg.ErrNotFound, http.StatusNotFound},
	{"invalid", tg.ErrInvalid, http.StatusBadRequest},
	{"blocked", tg.ErrBlocked, http.StatusConflict},
	{"claimed", tg.ErrClaimed, http.StatusConflict},
	{"conflict", tg.ErrConflict, http.StatusConflict},
	{"cycle", tg.ErrCycle, http.StatusConflict},
	{"deferred", tg.ErrDeferred, http.StatusConflict},
	{"limited", tg.ErrLimited, http.StatusConflict},
	{"gave_up", tg.ErrGaveUp, http.StatusConflict},
	{"lapsed", tg.ErrLapsed, http.StatusConflict},
	{"awaiting_approval", tg.ErrAwaitingApproval, http.StatusConflict},
	{"unverified", tg.ErrUnverified, http.StatusConflict},
	{"no_ready", tg.ErrNoReady, http.StatusConflict},
	{"corrupt", tg.ErrCorrupt, http.StatusInternalServerError},
	{"unknown_outcome", tg.ErrUnknownOutcome, http.StatusInternalServerError},
	{"closed", tg.ErrClosed, http.StatusServiceUnavailable},
	{"unauthorized", ErrUnauthorized, http.StatusUnauthorized},
	{"forbidden", ErrForbidden, http.StatusForbidden},
	{"rate_limited", ErrRateLimited, http.StatusTooManyRequests},
	{"busy", ErrBusy, http.StatusServiceUnavailable},
	{"canceled", context.Canceled, 499}, // the client went away: nginx's code
	{"deadline_exceeded", context.DeadlineExceeded, http.StatusGatewayTimeout},
}

// StatusOf is the HTTP status the hub answers err with: 404 for a task
// not found, 400 for invalid input, 409 for what the graph's state
// refuses (blocked, claimed, conflict, cycle, deferred, limited, lapsed,
// awaiting approval, unverified, …), 401 and 403 for tokens, 503 for a
// closed store, 500 for the rest. Other servers of the same store (the
// board) answer alike with it.
func StatusOf(err error) int {
	status, _ := errorBody(err)
	return status
}

// errorBody is err as the server sends it, with its status.
func errorBody(err error) (int, ErrorBody) {
	b := ErrorBody{Error: err.Error(), Kind: "internal"}
	status := http.StatusInternalServerError
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			b.Kind, status = k.name, k.status
			break
		}
	}
	if typ, detail := typedOf(err); typ != "" {
		if data, jerr := json.Marshal(detail); jerr == nil {
			b.Type, b.Detail = typ, data
		}
	}
	return status, b
}

// corruptDetail is a *tg.CorruptError on the wire: its cause as text.
type corruptDetail struct {
	Path  string
	Cause string
}

// typedOf returns the name and fields of the taskgraph typed error err
// is or wraps, or "" if it wraps none.
func typedOf(err error) (string, any) {
	var (
		nf  *tg.NotFoundError
		bl  *tg.BlockedError
		cl  *tg.ClaimedError
		co  *tg.ConflictError
		cy  *tg.CycleError
		in  *tg.InvalidError
		de  *tg.DeferredError
		gu  *tg.GaveUpError
		li  *tg.LimitError
		la  *tg.LapsedError
		aw  *tg.AwaitingApprovalError
		un  *tg.UnverifiedError
		cor *tg.CorruptError
	)
	switch {
	case errors.As(err, &nf):
		return "NotFoundError", nf
	case errors.As(err, &bl):
		return "BlockedError", bl
	case errors.As(err, &cl):
		return "ClaimedError", cl
	case errors.As(err, &co):
		return "ConflictError", co
	case errors.As(err, &cy):
		return "CycleError", cy
	case errors.As(err, &in):
		return "InvalidError", in
	case errors.As(err, &de):
		return "DeferredError", de
	case errors.As(err, &gu):
		return "GaveUpError", gu
	case errors.As(err, &li):
		return "LimitError", li
	case errors.As(err, &la):
		return "LapsedError", la
	case errors.As(err, &aw):
		return "AwaitingApprovalError", aw
	case errors.As(err, &un):
		return "UnverifiedError", un
	case errors.As(err, &cor):
		cause := ""
		if cor.Err != nil {
			cause = cor.Err.Error()
		}
		return "CorruptError", corruptDetail{Path: cor.Path, Cause: cause}
	}
	return "", nil
}

// remoteError is an error that came over the wire: its text exactly as
// the store wrote it, and underneath, the typed error or sentinel it
// matches, so that errors.Is and errors.As answer as for a local store.
type remoteError struct {
	msg string
	err error
}

func (e *remoteError) Error() string { return e.msg }

// Unwrap returns the typed error or sentinel.
func (e *remoteError) Unwrap() error { return e.err }

// decodeError rebuilds the error a server sent: the typed error itself
// when its text is the whole message (as a local store returns it), or
// the message wrapping it.
func decodeError(b ErrorBody) error {
	var typed error
	if b.Type != "" {
		typed = decodeTyped(b.Type, b.Detail)
	}
	if typed != nil && typed.Error() == b.Error {
		return typed
	}
	under := typed
	if under == nil {
		for _, k := range kinds {
			if k.name == b.Kind {
				under = k.err
			}
		}
	}
	if b.Kind == "unknown_outcome" && !errors.Is(under, tg.ErrUnknownOutcome) {
		under = &unknownOutcomeError{under}
	}
	if under != nil && under.Error() == b.Error {
		return under
	}
	return &remoteError{msg: b.Error, err: under}
}

// decodeTyped rebuilds the typed error named typ from its fields, or
// returns nil.
func decodeTyped(typ string, detail json.RawMessage) error {
	var err error
	switch typ {
	case "NotFoundError":
		err = decodeAs[tg.NotFoundError](detail)
	case "BlockedError":
		err = decodeAs[tg.BlockedError](detail)
	case "ClaimedError":
		err = decodeAs[tg.ClaimedError](detail)
	case "ConflictError":
		err = decodeAs[tg.ConflictError](detail)
	case "CycleError":
		err = decodeAs[tg.CycleError](detail)
	case "InvalidError":
		err = decodeAs[tg.InvalidError](detail)
	case "DeferredError":
		err = decodeAs[tg.DeferredError](detail)
	case "GaveUpError":
		err = decodeAs[tg.GaveUpError](detail)
	case "LimitError":
		err = decodeAs[tg.LimitError](detail)
	case "LapsedError":
		err = decodeAs[tg.LapsedError](detail)
	case "AwaitingApprovalError":
		err = decodeAs[tg.AwaitingApprovalError](detail)
	case "UnverifiedError":
		err = decodeAs[tg.UnverifiedError](detail)
	case "CorruptError":
		var d corruptDetail
		if json.Unmarshal(detail, &d) == nil {
			err = &tg.CorruptError{Path: d.Path, Err: errors.New(d.Cause)}
		}
	}
	return err
}

// decodeAs decodes a *T from data, or returns nil.
func decodeAs[T any, P interface {
	*T
	error
}](data json.RawMessage) error {
	v := P(new(T))
	if json.Unmarshal(data, v) != nil {
		return nil
	}
	return v
}

// unknownOutcomeError is a write whose outcome the client cannot know: the
// request may have reached the hub and been applied, but no answer came
// back. It matches tg.ErrUnknownOutcome, and wraps the failure (which may
// match context.Canceled).
type unknownOutcomeError struct{ err error }

func (e *unknownOutcomeError) Error() string {
	if e.err == nil {
		return tg.ErrUnknownOutcome.Error()
	}
	return "hub: the write may or may not have happened (re-read before retrying): " + e.err.Error()
}

// Unwrap returns the failure.
func (e *unknownOutcomeError) Unwrap() error { return e.err }

// Is reports whether target is tg.ErrUnknownOutcome.
func (e *unknownOutcomeError) Is(target error) bool { return target == tg.ErrUnknownOutcome }

// selectionQuery writes a validated selection as the query of GET
// /v1/tasks and GET /v1/board: status and label repeated, owner (present
// even when empty: the tasks without an owner), ready, limit, under,
// asof (RFC 3339) and limits (a JSON object of label to limit).
func selectionQuery(sel tg.Selection) url.Values {
	q := url.Values{}
	for _, s := range sel.Statuses {
		q.Add("status", string(s))
	}
	if sel.Owner != nil {
		q.Set("owner", *sel.Owner)
	}
	for _, l := range sel.Labels {
		q.Add("label", l)
	}
	if sel.ReadyOnly {
		q.Set("ready", "true")
	}
	if sel.Limit > 0 {
		q.Set("limit", strconv.Itoa(sel.Limit))
	}
	if sel.Under != 0 {
		q.Set("under", strconv.FormatInt(int64(sel.Under), 10))
	}
	if !sel.Now.IsZero() {
		q.Set("asof", sel.Now.Format(time.RFC3339Nano))
	}
	if sel.Limits != nil {
		data, _ := json.Marshal(sel.Limits) // a map of string to int always encodes
		q.Set("limits", string(data))
	}
	return q
}

// queryFilters reads the filters of a selection query (see
// selectionQuery). The store validates what they select.
func queryFilters(q url.Values) ([]tg.Filter, error) {
	var fs []tg.Filter
	for _, s := range q["status"] {
		fs = append(fs, tg.WithStatus(tg.Status(s)))
	}
	if o, ok := q["owner"]; ok && len(o) > 0 {
		fs = append(fs, tg.WithOwner(o[0]))
	}
	if ls := q["label"]; len(ls) > 0 {
		fs = append(fs, tg.HasLabels(ls...))
	}
	if v := q.Get("ready"); v != "" {
		ready, err := strconv.ParseBool(v)
		if err != nil {
			return nil, queryError("ready", v, err)
		}
		if ready {
			fs = append(fs, tg.ReadyOnly())
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, queryError("limit", v, err)
		}
		fs = append(fs, tg.Limit(n))
	}
	if v := q.Get("under"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, queryError("under", v, err)
		}
		fs = append(fs, tg.Under(tg.ID(n)))
	}
	if v := q.Get("asof"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return nil, queryError("asof", v, err)
		}
		fs = append(fs, tg.AsOf(t))
	}
	if v, ok := q["limits"]; ok && len(v) > 0 {
		limits := map[string]int{}
		if err := json.Unmarshal([]byte(v[0]), &limits); err != nil {
			return nil, queryError("limits", v[0], err)
		}
		fs = append(fs, tg.WithLimits(limits))
	}
	return fs, nil
}

func queryError(field, v string, err error) error {
	return &tg.InvalidError{Field: field, Reason: fmt.Sprintf("%q in the query: %v", v, err)}
}

// floatMarker is the key of the one-key JSON object that stands, in the
// metadata of a request, for a number JSON cannot write: NaN, +Inf or
// -Inf. A store refuses such metadata; the marker carries it to the hub
// so that the refusal, and which refusal comes first, is the store's.
const floatMarker = "$hub.float"

// markFloats returns body with every non-finite number in its metadata
// written as a floatMarker object, or body itself if it has no
// metadata.
func markFloats(body any) any {
	switch b := body.(type) {
	case tg.NewTask:
		b.Metadata = markValue(b.Metadata).(map[string]any)
		return b
	case []tg.NewTask:
		out := slices.Clone(b)
		for i := range out {
			out[i].Metadata = markValue(out[i].Metadata).(map[string]any)
		}
		return out
	case tg.Patch:
		b.Metadata = markValue(b.Metadata).(map[string]any)
		return b
	case []tg.Task:
		out := slices.Clone(b)
		for i := range out {
			out[i].Metadata = markValue(out[i].Metadata).(map[string]any)
		}
		return out
	}
	return body
}

// markValue returns v with its non-finite numbers marked, sharing
// nothing mutable with it.
func markValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = markValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = markValue(e)
		}
		return out
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return map[string]any{floatMarker: strconv.FormatFloat(x, 'g', -1, 64)}
		}
	case float32:
		return markValue(float64(x))
	}
	return v
}

// unmarkValue returns v with every floatMarker object read back as the
// number it stands for.
func unmarkValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if s, ok := x[floatMarker].(string); ok && len(x) == 1 {
			if f, err := strconv.ParseFloat(s, 64); err == nil {
				return f
			}
		}
		for k, e := range x {
			x[k] = unmarkValue(e)
		}
	case []any:
		for i, e := range x {
			x[i] = unmarkValue(e)
		}
	}
	return v
}

// unmarkMeta is unmarkValue for a metadata map.
func unmarkMeta(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	return unmarkValue(m).(map[string]any)
}

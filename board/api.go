// The board's write API: the JSON requests the page sends and the store
// calls they become.

package board

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/taskgraph-dev/taskgraph"
	hubapi "github.com/taskgraph-dev/taskgraph/hub"
)

// maxBody bounds a write request: a task bigger than MaxTaskSize would be
// refused by the store anyway.
const maxBody = taskgraph.MaxTaskSize + 64<<10

// The bodies of the write requests. Unknown fields are refused.
type (
	// CreateRequest is the body of POST /api/tasks.
	CreateRequest struct {
		Subject     string         `json:"subject"`
		Description string         `json:"description"`
		BlockedBy   []taskgraph.ID `json:"blockedBy"`
		Blocks      []taskgraph.ID `json:"blocks"`
	}
	// ReleaseRequest is the body of POST /api/tasks/{id}/release. If
	// Owner is given, the task is released only if that owner still
	// holds it: a claim that changed hands since the page showed it is
	// refused with 409.
	ReleaseRequest struct {
		Owner string `json:"owner"`
	}
	// ReopenRequest is the body of POST /api/tasks/{id}/reopen, which
	// moves a completed, failed or cancelled task back to pending with
	// the store's Reopen (clearing its owner, reason and result). If Rev
	// is given, the task must still be at that rev (409 otherwise).
	ReopenRequest struct {
		Rev int64 `json:"rev"`
	}
	// ApproveRequest is the body of POST /api/tasks/{id}/approve and
	// /reject: who approves or rejects (the history records it; not
	// empty), and why, for a rejection (not empty).
	ApproveRequest struct {
		By     string `json:"by"`
		Reason string `json:"reason"`
	}
	// BlockerRequest is the body of POST /api/tasks/{id}/blockers, which
	// adds the edge "{id} is blocked by Blocker".
	BlockerRequest struct {
		Blocker taskgraph.ID `json:"blocker"`
	}
)

// write wraps a write handler in the checks every write must pass, and
// tells the pages about a write that succeeded.
func (s *Server) write(h func(r *http.Request, st hubapi.Store) (int, any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st, code, msg := s.writeAllowed(r)
		if code != 0 {
			httpError(w, code, msg)
			return
		}
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
			httpError(w, http.StatusUnsupportedMediaType, "a write takes a JSON body (Content-Type: application/json)")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		code, v, err := h(r, st)
		if err != nil {
			storeError(w, err)
			return
		}
		s.hub.changed()
		writeJSON(w, code, v)
	}
}

func (s *Server) handleCreate(r *http.Request, st hubapi.Store) (int, any, error) {
	var req CreateRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	t, err := st.Create(r.Context(), taskgraph.NewTask{
		Subject: req.Subject, Description: req.Description, BlockedBy: req.BlockedBy, Blocks: req.Blocks,
	})
	return http.StatusCreated, taskJSON(t), err
}

// onTask is a write on the task named in the path, with a body Req:
// op's store call, answered with the task it returns (200).
func onTask[Req any](op func(r *http.Request, st hubapi.Store, id taskgraph.ID, req Req) (taskgraph.Task, error)) func(*http.Request, hubapi.Store) (int, any, error) {
	return func(r *http.Request, st hubapi.Store) (int, any, error) {
		var req Req
		id, err := pathID(r)
		if err == nil {
			err = decode(r, &req)
		}
		if err != nil {
			return 0, nil, err
		}
		t, err := op(r, st, id, req)
		return http.StatusOK, taskJSON(t), err
	}
}

func (s *Server) handleRelease(r *http.Request, st hubapi.Store, id taskgraph.ID, req ReleaseRequest) (taskgraph.Task, error) {
	return st.Release(r.Context(), id, req.Owner)
}

func (s *Server) handleReopen(r *http.Request, st hubapi.Store, id taskgraph.ID, req ReopenRequest) (taskgraph.Task, error) {
	cur, err := st.Get(r.Context(), id)
	if err != nil {
		return taskgraph.Task{}, err
	}
	if !cur.Status.Terminal() {
		return taskgraph.Task{}, notEnded{id, cur.Status}
	}
	// The store's Reopen takes no rev, so the page's rev is checked
	// against what was just read: a task that changed since the page
	// showed it is refused, though a write that lands between this read
	// and the reopen is not noticed.
	if req.Rev != 0 && req.Rev != cur.Rev {
		return taskgraph.Task{}, &taskgraph.ConflictError{ID: id, Want: req.Rev, Got: cur.Rev}
	}
	return st.Reopen(r.Context(), id)
}

func (s *Server) handleAddBlocker(r *http.Request, st hubapi.Store, id taskgraph.ID, req BlockerRequest) (taskgraph.Task, error) {
	return st.Update(r.Context(), id, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{req.Blocker}})
}

// handleApprove, like handleReject, needs no check that the store gates
// tasks: a board takes writes only for a hub.Store (writeAllowed), which
// is an Approver. Through the hub's rules only an admin's token approves.
func (s *Server) handleApprove(r *http.Request, st hubapi.Store, id taskgraph.ID, req ApproveRequest) (taskgraph.Task, error) {
	return st.Approve(r.Context(), id, req.By)
}

func (s *Server) handleReject(r *http.Request, st hubapi.Store, id taskgraph.ID, req ApproveRequest) (taskgraph.Task, error) {
	return st.Reject(r.Context(), id, req.By, req.Reason)
}

// notEnded refuses to reopen a task that has no outcome yet.
type notEnded struct {
	id     taskgraph.ID
	status taskgraph.Status
}

func (e notEnded) Error() string {
	return fmt.Sprintf("task %d is %s: only a completed, failed or cancelled task can be reopened", e.id, e.status)
}

// badRequest is a request the board cannot read; the store never saw it.
type badRequest struct {
	code int
	msg  string
}

func (e badRequest) Error() string { return e.msg }

func pathID(r *http.Request) (taskgraph.ID, error) {
	id, err := taskgraph.ParseID(r.PathValue("id"))
	var inv *taskgraph.InvalidError
	if errors.As(err, &inv) {
		return 0, badRequest{http.StatusBadRequest, inv.Reason}
	}
	return id, err
}

// decode reads one JSON object, refusing unknown fields and trailing data.
func decode(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return badRequest{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body too large: the limit is %d bytes", tooBig.Limit)}
		}
		return badRequest{http.StatusBadRequest, "reading the request: " + err.Error()}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		data = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest{http.StatusBadRequest, "invalid request body: " + err.Error()}
	}
	if dec.More() {
		return badRequest{http.StatusBadRequest, "invalid request body: more than one JSON value"}
	}
	return nil
}

// storeError answers with the store's own error text and a status that
// says what kind of refusal it is.
func storeError(w http.ResponseWriter, err error) {
	var (
		bad     badRequest
		notDone notEnded
	)
	code := hubapi.StatusOf(err) // what the hub answers for the same store error
	switch {
	case errors.As(err, &bad):
		code = bad.code
	case errors.As(err, &notDone):
		code = http.StatusConflict
	}
	httpError(w, code, err.Error())
}

// ErrorResponse is the body of every refusal.
type ErrorResponse struct {
	Error string `json:"error"`
}

func httpError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorResponse{Error: msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // error texts read "3 -> 5", not "3 -\u003e 5"
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"encoding the response failed"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// taskJSON is a task as a write returns it.
func taskJSON(t taskgraph.Task) TaskView {
	return view(t, "", nil, t.UpdatedAt)
}

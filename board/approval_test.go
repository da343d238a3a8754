package board_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/board"
)

// TestApproveButton: approving and rejecting are writes, behind the
// board's write access (read-only: 403; no token: 401; an agent's or a
// viewer's token: 403, only an admin's approves or rejects); with it,
// approve records who approved, reject needs a reason (400) and a task
// (404) and cancels; the snapshot lists a gated task under
// awaiting_approval with its links, and /metrics counts it.
func TestApproveButton(t *testing.T) {
	ctx := context.Background()
	s := taskgraph.NewMemStore()
	gated, err := s.Create(ctx, taskgraph.NewTask{Subject: "deploy", NeedsApproval: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, gated.ID, taskgraph.Patch{AddLinks: []string{"https://example.com/pr/7"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, taskgraph.NewTask{Subject: "drop table", NeedsApproval: true}); err != nil {
		t.Fatal(err)
	}

	ro := serve(t, s, board.WithTokens(tokens))
	if r := post(t, ro, "/api/tasks/1/approve", `{"by":"alice"}`); r.code != http.StatusForbidden {
		t.Fatalf("approve on a read-only board: %d %v", r.code, r.body)
	}
	srv := serve(t, s, board.AllowWrites(), board.WithTokens(tokens))
	if r := post(t, srv, "/api/tasks/1/approve", `{"by":"alice"}`, func(r *http.Request) { r.Header.Del(board.TokenHeader) }); r.code != http.StatusUnauthorized {
		t.Fatalf("approve without a token: %d %v", r.code, r.body)
	}
	for who, tok := range map[string]string{"an agent's": agentToken, "a viewer's": viewerToken} {
		if r := post(t, srv, "/api/tasks/1/approve", `{"by":"alice"}`, func(r *http.Request) { r.Header.Set(board.TokenHeader, tok) }); r.code != http.StatusForbidden {
			t.Fatalf("approve with %s token: %d %v", who, r.code, r.body)
		}
	}
	for who, tok := range map[string]string{"an agent's": agentToken, "a viewer's": viewerToken} {
		if r := post(t, srv, "/api/tasks/2/reject", `{"by":"bob","reason":"too risky"}`, func(r *http.Request) { r.Header.Set(board.TokenHeader, tok) }); r.code != http.StatusForbidden {
			t.Fatalf("reject with %s token: %d %v", who, r.code, r.body)
		}
	}
	for _, id := range []taskgraph.ID{1, 2} {
		if got, _ := s.Get(ctx, id); !got.AwaitingApproval() {
			t.Fatalf("refused approvals changed task %d: %+v", id, got)
		}
	}

	resp, err := srv.Client().Get(srv.URL + "/api/board")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var snap map[string]any
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"awaiting_approval"`) || !strings.Contains(string(data), `"awaitingApproval":true`) ||
		!strings.Contains(string(data), `"ref":"https://example.com/pr/7"`) {
		t.Fatalf("the snapshot does not show the gate and the link: %s", data)
	}
	resp, err = srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	data, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(data), `taskgraph_tasks{state="awaiting_approval"} 2`) {
		t.Fatalf("metrics: %s", data)
	}

	if r := post(t, srv, "/api/tasks/1/approve", `{"by":""}`); r.code != http.StatusBadRequest {
		t.Fatalf("approve without a name: %d %v", r.code, r.body)
	}
	if r := post(t, srv, "/api/tasks/1/approve", `{"by":"alice"}`); r.code != http.StatusOK {
		t.Fatalf("approve: %d %v", r.code, r.body)
	}
	got, _ := s.Get(ctx, 1)
	if got.AwaitingApproval() || got.History[len(got.History)-1].By != "alice" {
		t.Fatalf("after approve: %+v", got)
	}
	for body, code := range map[string]int{`{"by":"bob"}`: http.StatusBadRequest, `{"by":"bob","reason":"x","why":"y"}`: http.StatusBadRequest} {
		if r := post(t, srv, "/api/tasks/2/reject", body); r.code != code {
			t.Fatalf("reject %s: %d %v, want %d", body, r.code, r.body, code)
		}
	}
	if r := post(t, srv, "/api/tasks/42/reject", `{"by":"bob","reason":"too risky"}`); r.code != http.StatusNotFound {
		t.Fatalf("reject of a task that does not exist: %d %v", r.code, r.body)
	}
	if r := post(t, srv, "/api/tasks/2/reject", `{"by":"bob","reason":"too risky"}`); r.code != http.StatusOK {
		t.Fatalf("reject: %d %v", r.code, r.body)
	}
	got, _ = s.Get(ctx, 2)
	if got.Status != taskgraph.Cancelled || got.Reason != "too risky" || got.History[len(got.History)-1].Event != taskgraph.HistoryRejected {
		t.Fatalf("after reject: %+v", got)
	}
	if r := post(t, srv, "/api/tasks/2/approve", `{"by":"alice"}`); r.code != http.StatusBadRequest {
		t.Fatalf("approve of a rejected task: %d %v", r.code, r.body)
	}
}

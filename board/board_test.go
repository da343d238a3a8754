package board_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/board"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// tokens are the hub's tokens the boards of the tests take writes from:
// token is an admin's, agentToken agent-2's, viewerToken a viewer's.
var (
	tokens                         = &hub.MemTokens{}
	token, agentToken, viewerToken = addToken("lead", hub.Admin), addToken("agent-2", hub.Agent), addToken("watcher", hub.Viewer)
)

func addToken(name string, role hub.Role) string {
	tok, err := tokens.Add(context.Background(), name, role)
	if err != nil {
		panic(err)
	}
	return tok
}

// plan makes a store with a task in every state: 1 completed, 2 in
// progress (blocked by 1), 3 blocked by 2, 4 ready.
func plan(t *testing.T, s taskgraph.Store) {
	t.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Create(ctx, taskgraph.NewTask{Subject: "schema"}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "api", BlockedBy: []taskgraph.ID{1}}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "frontend", BlockedBy: []taskgraph.ID{2}}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "docs"}))
	must(s.Claim(ctx, 1, "agent-1"))
	must(s.Complete(ctx, 1, "agent-1"))
	must(s.Claim(ctx, 2, "agent-2", taskgraph.WithLease(time.Hour)))
}

// server starts a board of a new MemStore holding plan.
func server(t *testing.T, opts ...board.Option) (*httptest.Server, *taskgraph.MemStore) {
	t.Helper()
	s := taskgraph.NewMemStore()
	plan(t, s)
	return serve(t, s, opts...), s
}

func serve(t *testing.T, s taskgraph.Store, opts ...board.Option) *httptest.Server {
	t.Helper()
	b := board.New(s, opts...)
	srv := httptest.NewServer(b)
	t.Cleanup(func() {
		b.Close()
		srv.Close()
	})
	return srv
}

type reply struct {
	code int
	body map[string]any
}

// post sends a write as the board's page does: its own Origin and the token.
func post(t *testing.T, srv *httptest.Server, path, body string, edit ...func(*http.Request)) reply {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", srv.URL)
	req.Header.Set(board.TokenHeader, token)
	for _, e := range edit {
		e(req)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := reply{code: resp.StatusCode}
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &r.body); err != nil {
		t.Fatalf("POST %s: %d %q is not JSON", path, resp.StatusCode, data)
	}
	return r
}

func header(k, v string) func(*http.Request) { return func(r *http.Request) { r.Header.Set(k, v) } }

func TestReadOnlyByDefault(t *testing.T) {
	srv, s := server(t, board.WithTokens(tokens))
	for _, path := range []string{"/api/tasks", "/api/tasks/2/release", "/api/tasks/1/reopen", "/api/tasks/3/blockers"} {
		r := post(t, srv, path, `{}`)
		if r.code != http.StatusForbidden || !strings.Contains(r.body["error"].(string), "read-only") {
			t.Errorf("POST %s on a read-only board: %d %v", path, r.code, r.body)
		}
	}
	if ts, _ := s.List(context.Background()); len(ts) != 4 {
		t.Fatalf("a read-only board wrote: %d tasks", len(ts))
	}
}

func TestWritesNeedTokenAndOrigin(t *testing.T) {
	srv, s := server(t, board.AllowWrites(), board.WithTokens(tokens))
	refused := map[string]struct {
		edit func(*http.Request)
		code int
	}{
		"no token":         {func(r *http.Request) { r.Header.Del(board.TokenHeader) }, http.StatusUnauthorized},
		"wrong token":      {header(board.TokenHeader, token[:len(token)-1]+"x"), http.StatusUnauthorized},
		"short token":      {header(board.TokenHeader, "test"), http.StatusUnauthorized},
		"a viewer's token": {header(board.TokenHeader, viewerToken), http.StatusForbidden},
		"no Origin":        {func(r *http.Request) { r.Header.Del("Origin") }, http.StatusForbidden},
		"other Origin":     {header("Origin", "http://evil.example"), http.StatusForbidden},
		"other port":       {header("Origin", "http://127.0.0.1:1"), http.StatusForbidden},
		"null Origin":      {header("Origin", "null"), http.StatusForbidden},
		"cross-site fetch": {header("Sec-Fetch-Site", "cross-site"), http.StatusForbidden},
	}
	for name, c := range refused {
		r := post(t, srv, "/api/tasks", `{"subject":"x"}`, c.edit)
		if r.code != c.code {
			t.Errorf("%s: %d %v, want %d", name, r.code, r.body, c.code)
		}
		if msg, _ := r.body["error"].(string); strings.Contains(msg, token[4:]) || strings.Contains(msg, viewerToken[4:]) {
			t.Errorf("%s: the refusal echoes a token: %q", name, msg)
		}
	}
	if ts, _ := s.List(context.Background()); len(ts) != 4 {
		t.Fatalf("a refused write wrote: %d tasks", len(ts))
	}
	if r := post(t, srv, "/api/tasks", `{"subject":"x"}`, header("Content-Type", "text/plain")); r.code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain body: %d %v, want 415", r.code, r.body)
	}
	if r := post(t, srv, "/api/tasks", `{"subject":"x"}`, header("Sec-Fetch-Site", "same-origin")); r.code != http.StatusCreated {
		t.Fatalf("a write with the token from the board's origin: %d %v", r.code, r.body)
	}
	// Without tokens no write is taken.
	bare := serve(t, s, board.AllowWrites())
	if r := post(t, bare, "/api/tasks", `{"subject":"x"}`); r.code != http.StatusUnauthorized {
		t.Fatalf("a board without tokens: %d %v, want 401", r.code, r.body)
	}
}

// A write from the page does what its token may do through the hub's API
// (hub.As), no more: an agent's token creates tasks and adds edges, and
// releases its own claim only; only an admin's reopens a task or releases
// another's claim. A refusal changes nothing.
func TestWritesAsTheTokenMay(t *testing.T) {
	srv, s := server(t, board.AllowWrites(), board.WithTokens(tokens))
	ctx := context.Background()
	agent := header(board.TokenHeader, agentToken)
	if r := post(t, srv, "/api/tasks", `{"subject":"by an agent"}`, agent); r.code != http.StatusCreated {
		t.Fatalf("an agent creates: %d %v", r.code, r.body)
	}
	if r := post(t, srv, "/api/tasks/5/blockers", `{"blocker":4}`, agent); r.code != http.StatusOK {
		t.Fatalf("an agent adds an edge: %d %v", r.code, r.body)
	}
	if r := post(t, srv, "/api/tasks/1/reopen", `{}`, agent); r.code != http.StatusForbidden || !strings.Contains(r.body["error"].(string), "admin") {
		t.Fatalf("an agent reopens: %d %v, want 403", r.code, r.body)
	}
	if task, _ := s.Get(ctx, 1); task.Status != taskgraph.Completed {
		t.Fatalf("a refused reopen changed task 1: %s", task.Status)
	}
	if _, err := s.Release(ctx, 2, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, 2, "agent-9"); err != nil {
		t.Fatal(err)
	}
	if r := post(t, srv, "/api/tasks/2/release", `{"owner":"agent-9"}`, agent); r.code != http.StatusForbidden {
		t.Fatalf("agent-2 releases agent-9's claim: %d %v, want 403", r.code, r.body)
	}
	if r := post(t, srv, "/api/tasks/2/release", `{"owner":"agent-9"}`); r.code != http.StatusOK {
		t.Fatalf("an admin releases agent-9's claim: %d %v", r.code, r.body)
	}
	if r := post(t, srv, "/api/tasks/1/reopen", `{}`); r.code != http.StatusOK {
		t.Fatalf("an admin reopens: %d %v", r.code, r.body)
	}
}

func TestHostCheck(t *testing.T) {
	srv, _ := server(t, board.AllowHosts("board.internal"))
	for host, want := range map[string]int{
		"":                 http.StatusForbidden,
		"evil.example":     http.StatusForbidden,
		"evil.example:80":  http.StatusForbidden,
		"localhost:7777":   http.StatusOK,
		"127.0.0.1:7777":   http.StatusOK,
		"[::1]:7777":       http.StatusOK,
		"board.internal":   http.StatusOK,
		"BOARD.internal.":  http.StatusOK,
		"10.1.2.3:7777":    http.StatusOK,
		"localhost.evil.x": http.StatusForbidden,
	} {
		req, _ := http.NewRequest("GET", srv.URL+"/api/board", nil)
		req.Host = host
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if host == "" {
			want = http.StatusOK // Go's client fills in the URL's host
		}
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// Every input is judged by the store: the board answers with the store's
// own error text, as 400 (invalid), 404 (not found) or 409 (conflict).
func TestValidation(t *testing.T) {
	srv, s := server(t, board.AllowWrites(), board.WithTokens(tokens))
	ctx := context.Background()
	// twin holds the same plan; the same operation on it gives the text
	// the board must return.
	twin := taskgraph.NewMemStore()
	plan(t, twin)
	storeErr := func(_ any, err error) string {
		if err == nil {
			t.Fatal("the twin store accepted what the board must refuse")
		}
		return err.Error()
	}
	pending := taskgraph.Pending
	cases := []struct {
		name, path, body string
		code             int
		want             string
	}{
		{"empty subject", "/api/tasks", `{"subject":""}`, 400, storeErr(twin.Create(ctx, taskgraph.NewTask{}))},
		{"missing blocker", "/api/tasks", `{"subject":"x","blockedBy":[99]}`, 404, storeErr(twin.Create(ctx, taskgraph.NewTask{Subject: "x", BlockedBy: []taskgraph.ID{99}}))},
		{"negative blocker", "/api/tasks", `{"subject":"x","blockedBy":[-1]}`, 400, storeErr(twin.Create(ctx, taskgraph.NewTask{Subject: "x", BlockedBy: []taskgraph.ID{-1}}))},
		{"cycle", "/api/tasks/1/blockers", `{"blocker":3}`, 409, storeErr(twin.Update(ctx, 1, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{3}}))},
		{"self edge", "/api/tasks/3/blockers", `{"blocker":3}`, 400, storeErr(twin.Update(ctx, 3, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{3}}))},
		{"edge to nothing", "/api/tasks/3/blockers", `{"blocker":42}`, 404, storeErr(twin.Update(ctx, 3, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{42}}))},
		{"edge of nothing", "/api/tasks/42/blockers", `{"blocker":1}`, 404, storeErr(twin.Update(ctx, 42, taskgraph.Patch{AddBlockedBy: []taskgraph.ID{1}}))},
		{"id zero", "/api/tasks/0/release", `{}`, 400, `"0" is not a task id`},
		{"release a pending task", "/api/tasks/4/release", `{}`, 400, storeErr(twin.Release(ctx, 4, ""))},
		{"release a completed task", "/api/tasks/1/release", `{}`, 400, storeErr(twin.Release(ctx, 1, ""))},
		{"release a claim that changed hands", "/api/tasks/2/release", `{"owner":"agent-9"}`, 409, storeErr(twin.Release(ctx, 2, "agent-9"))},
		{"reopen a stale rev", "/api/tasks/1/reopen", `{"rev":1}`, 409, storeErr(twin.Update(ctx, 1, taskgraph.Patch{Status: &pending, IfRev: 1}))},
		{"reopen an unfinished task", "/api/tasks/2/reopen", `{}`, 409, "task 2 is in_progress: only a completed, failed or cancelled task can be reopened"},
		{"reopen a pending task", "/api/tasks/4/reopen", `{}`, 409, "task 4 is pending: only a completed, failed or cancelled task can be reopened"},
		{"reopen a task that does not exist", "/api/tasks/42/reopen", `{}`, 404, storeErr(twin.Reopen(ctx, 42))},
		{"not an id", "/api/tasks/abc/release", `{}`, 400, `"abc" is not a task id`},
		{"id out of range", "/api/tasks/99999999999999999999/release", `{}`, 400, `"99999999999999999999" is not a task id`},
		{"fractional id", "/api/tasks", `{"subject":"x","blockedBy":[1.5]}`, 400, "invalid request body: json: cannot unmarshal number 1.5"},
		{"unknown field", "/api/tasks", `{"subject":"x","status":"completed"}`, 400, `invalid request body: json: unknown field "status"`},
		{"wrong type", "/api/tasks", `{"subject":7}`, 400, "invalid request body: json: cannot unmarshal number"},
		{"two values", "/api/tasks", `{"subject":"x"} {}`, 400, "invalid request body: more than one JSON value"},
		{"not JSON", "/api/tasks", `subject=x`, 400, "invalid request body"},
		{"too big", "/api/tasks", `{"subject":"` + strings.Repeat("x", taskgraph.MaxTaskSize+100<<10) + `"}`, 413, "request body too large"},
		{"too big for the store", "/api/tasks", `{"subject":"x","description":"` + strings.Repeat("x", taskgraph.MaxTaskSize) + `"}`, 400,
			// The size differs with the timestamps by a byte or two.
			strings.SplitAfter(storeErr(twin.Create(ctx, taskgraph.NewTask{Subject: "x", Description: strings.Repeat("x", taskgraph.MaxTaskSize)})), "would be")[0]},
	}
	before, _ := s.List(ctx)
	for _, c := range cases {
		r := post(t, srv, c.path, c.body)
		got, _ := r.body["error"].(string)
		if r.code != c.code || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %d %q, want %d %q", c.name, r.code, got, c.code, c.want)
		}
	}
	after, _ := s.List(ctx)
	if len(after) != len(before) {
		t.Fatalf("refused writes changed the store: %d tasks, then %d", len(before), len(after))
	}
	for i := range after {
		if after[i].Rev != before[i].Rev {
			t.Fatalf("refused writes changed task %d", after[i].ID)
		}
	}
}

func TestActions(t *testing.T) {
	srv, s := server(t, board.AllowWrites(), board.WithTokens(tokens))
	ctx := context.Background()
	get := func(id taskgraph.ID) taskgraph.Task {
		t.Helper()
		task, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return task
	}
	if r := post(t, srv, "/api/tasks/2/release", `{"owner":"agent-2"}`); r.code != 200 || get(2).Status != taskgraph.Pending || get(2).Owner != "" {
		t.Fatalf("release: %d %v; task %+v", r.code, r.body, get(2))
	}
	// A failed and a cancelled task are reopened too, with the store's
	// Reopen: pending again, without owner or reason.
	if _, err := s.Claim(ctx, 2, "agent-2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fail(ctx, 2, "agent-2", "flaky"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(ctx, 4, "later"); err != nil {
		t.Fatal(err)
	}
	if r := post(t, srv, "/api/tasks/2/reopen", fmt.Sprintf(`{"rev":%d}`, get(2).Rev-1)); r.code != http.StatusConflict || get(2).Status != taskgraph.Failed {
		t.Fatalf("reopen a failed task at a stale rev: %d %v; task %+v", r.code, r.body, get(2))
	}
	if r := post(t, srv, "/api/tasks/2/reopen", fmt.Sprintf(`{"rev":%d}`, get(2).Rev)); r.code != 200 || get(2).Status != taskgraph.Pending || get(2).Owner != "" || get(2).Reason != "" || r.body["status"] != "pending" {
		t.Fatalf("reopen a failed task: %d %v; task %+v", r.code, r.body, get(2))
	}
	if r := post(t, srv, "/api/tasks/4/reopen", `{}`); r.code != 200 || get(4).Status != taskgraph.Pending || get(4).Reason != "" {
		t.Fatalf("reopen a cancelled task: %d %v; task %+v", r.code, r.body, get(4))
	}
	if r := post(t, srv, "/api/tasks/1/reopen", `{}`); r.code != 200 || get(1).Status != taskgraph.Pending {
		t.Fatalf("reopen: %d %v; task %+v", r.code, r.body, get(1))
	}
	if r := post(t, srv, "/api/tasks/4/blockers", `{"blocker":3}`); r.code != 200 || len(get(4).BlockedBy) != 1 {
		t.Fatalf("add edge: %d %v; task %+v", r.code, r.body, get(4))
	}
	r := post(t, srv, "/api/tasks", `{"subject":"deploy","description":"to prod","blockedBy":[3,4]}`)
	if r.code != http.StatusCreated || r.body["id"].(float64) != 5 {
		t.Fatalf("create: %d %v", r.code, r.body)
	}
	if nt := get(5); nt.Subject != "deploy" || nt.Description != "to prod" || len(nt.BlockedBy) != 2 {
		t.Fatalf("created %+v", nt)
	}
}

// events reads the snapshots of one event stream.
type events struct {
	t    *testing.T
	resp *http.Response
	sc   *bufio.Scanner
	cur  *board.Snapshot // the board as the events so far make it
	kind string          // of the last event: "snapshot" or "change"
	size int             // of the last event's data
	id   string          // of the last event
}

func openEvents(t *testing.T, srv *httptest.Server, edit ...func(*http.Request)) *events {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events", nil)
	for _, f := range edit {
		f(req)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("event stream of type %q", ct)
	}
	t.Cleanup(func() {
		cancel()
		resp.Body.Close()
	})
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 64<<20)
	return &events{t: t, resp: resp, sc: sc}
}

// next returns the board as the next event leaves it, or fails the test
// after a minute: a "snapshot" is the board, a "change" is applied to the
// board before it, as the page does.
func (e *events) next() board.Snapshot {
	e.t.Helper()
	type result struct {
		kind string
		data []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		event := ""
		for e.sc.Scan() {
			line := e.sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				e.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: ") && (event == "snapshot" || event == "change"):
				ch <- result{kind: event, data: []byte(strings.TrimPrefix(line, "data: "))}
				return
			}
		}
		ch <- result{err: errors.Join(io.ErrUnexpectedEOF, e.sc.Err())}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			e.t.Fatal(r.err)
		}
		e.kind, e.size = r.kind, len(r.data)
		if r.kind == "snapshot" {
			var s board.Snapshot
			if err := json.Unmarshal(r.data, &s); err != nil {
				e.t.Fatal(err)
			}
			e.cur = &s
			return s
		}
		var c board.Change
		if err := json.Unmarshal(r.data, &c); err != nil {
			e.t.Fatal(err)
		}
		if e.cur == nil {
			e.t.Fatal("a change before any snapshot")
		}
		s, err := applyChange(*e.cur, c)
		if err != nil {
			e.t.Fatal(err)
		}
		e.cur = &s
		return s
	case <-time.After(time.Minute):
		e.t.Fatal("no snapshot within a minute")
	}
	panic("unreachable")
}

// applyChange applies c to s as the page does, and checks it against the
// counts c carries.
func applyChange(s board.Snapshot, c board.Change) (board.Snapshot, error) {
	if c.From != s.Version {
		return s, fmt.Errorf("a change from version %d to a board at %d", c.From, s.Version)
	}
	byID := map[taskgraph.ID]board.TaskView{}
	for _, t := range s.Tasks {
		byID[t.ID] = t
	}
	for _, id := range c.Removed {
		delete(byID, id)
	}
	for _, t := range c.Tasks {
		byID[t.ID] = t
	}
	out := s
	out.Version, out.Now, out.Problem = c.Version, c.Now, c.Problem
	if c.CriticalPath != nil {
		out.CriticalPath = c.CriticalPath
	}
	out.Tasks = slices.SortedFunc(maps.Values(byID), func(a, b board.TaskView) int { return cmp.Compare(a.ID, b.ID) })
	out.Columns = nil
	for _, col := range s.Columns {
		col.IDs = []taskgraph.ID{}
		var in []board.TaskView
		for _, t := range out.Tasks {
			if t.State == col.Key {
				in = append(in, t)
			}
		}
		if col.Key == taskgraph.StateReady {
			slices.SortStableFunc(in, func(a, b board.TaskView) int { return cmp.Compare(a.Priority, b.Priority) })
		}
		for _, t := range in {
			col.IDs = append(col.IDs, t.ID)
		}
		if n := c.Counts[col.Key]; n != len(col.IDs) {
			return s, fmt.Errorf("column %s: %d tasks after the change, and the change counts %d", col.Key, len(col.IDs), n)
		}
		out.Columns = append(out.Columns, col)
	}
	return out, nil
}

// until reads snapshots until one satisfies ok.
func (e *events) until(ok func(board.Snapshot) bool) board.Snapshot {
	e.t.Helper()
	for {
		if s := e.next(); ok(s) {
			return s
		}
	}
}

func column(s board.Snapshot, key string) []taskgraph.ID {
	for _, c := range s.Columns {
		if string(c.Key) == key {
			return c.IDs
		}
	}
	return nil
}

func TestSnapshot(t *testing.T) {
	s := taskgraph.NewMemStore()
	plan(t, s)
	ctx := context.Background()
	if _, err := s.Create(ctx, taskgraph.NewTask{Subject: "lapsed", Metadata: map[string]any{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, 5, "gone", taskgraph.WithLease(time.Nanosecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	snap, err := board.New(s, board.WithTitle("plan")).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range snap.Columns {
		keys = append(keys, string(c.Key))
	}
	if strings.Join(keys, " ") != "ready awaiting_approval deferred limited blocked stranded in_progress completed failed cancelled" || snap.Title != "plan" || snap.Writes {
		t.Fatalf("columns %v, title %q, writes %v", keys, snap.Title, snap.Writes)
	}
	if got := column(snap, "in_progress"); len(got) != 2 || len(column(snap, "ready")) != 1 || len(column(snap, "blocked")) != 1 || len(column(snap, "completed")) != 1 {
		t.Fatalf("columns %+v", snap.Columns)
	}
	byID := map[taskgraph.ID]board.TaskView{}
	for _, v := range snap.Tasks {
		byID[v.ID] = v
	}
	if v := byID[3]; v.State != "blocked" || len(v.WaitingOn) != 1 || v.WaitingOn[0] != 2 {
		t.Fatalf("task 3 %+v: want blocked, waiting on 2", v)
	}
	if v := byID[2]; v.LeaseLapsed || v.Owner != "agent-2" || v.LeaseExpiresAt.IsZero() || v.ClaimedAt.IsZero() {
		t.Fatalf("task 2 %+v: want held by agent-2 with a running lease", v)
	}
	if v := byID[5]; !v.LeaseLapsed || v.Metadata["k"] != "v" {
		t.Fatalf("task 5 %+v: want a lapsed lease and metadata", v)
	}
	if v := byID[3]; v.Why != "task 3 is blocked, waiting on 2 (in progress, held by agent-2, lease 1h0m0s left)" && !strings.HasPrefix(v.Why, "task 3 is blocked, waiting on 2 (in progress, held by agent-2, lease 59m") {
		t.Fatalf("task 3 is not ready because %q", v.Why)
	}
	// 2 (in progress) blocks 3: the longest chain of unfinished work.
	if !slices.Equal(snap.CriticalPath, []taskgraph.ID{2, 3}) {
		t.Fatalf("critical path %v, want [2 3]", snap.CriticalPath)
	}
}

// outcomes makes a store with every outcome: 1 completed with a result,
// 2 failed, 3 and 4 stranded by it (3 directly, 4 through 3), 5
// cancelled, 6 stranded by it, 7 ready (P0, labelled), and the chain
// 8 -> 9 -> 10 the longest unfinished one.
func outcomes(t *testing.T, s taskgraph.Store) {
	t.Helper()
	ctx := context.Background()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p0, p4 := taskgraph.P0, taskgraph.P4
	must(s.Create(ctx, taskgraph.NewTask{Subject: "schema"}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "migrate", BlockedBy: []taskgraph.ID{1}, Key: "migrate"}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "backfill", BlockedBy: []taskgraph.ID{2}}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "report", BlockedBy: []taskgraph.ID{3}, Priority: p4}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "old ui"}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "ui tests", BlockedBy: []taskgraph.ID{5}}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "hotfix", Priority: p0, Labels: []string{"ops", "urgent"}}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "a"}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "b", BlockedBy: []taskgraph.ID{8}}))
	must(s.Create(ctx, taskgraph.NewTask{Subject: "c", BlockedBy: []taskgraph.ID{9}}))
	must(s.Claim(ctx, 1, "agent-1"))
	must(s.Complete(ctx, 1, "agent-1", taskgraph.WithResult("3 tables")))
	must(s.Claim(ctx, 2, "agent-2"))
	must(s.Fail(ctx, 2, "agent-2", "disk full"))
	must(s.Cancel(ctx, 5, "replaced by the new ui"))
}

func TestSnapshotOutcomes(t *testing.T) {
	s := taskgraph.NewMemStore()
	outcomes(t, s)
	ctx := context.Background()
	snap, err := board.New(s).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]taskgraph.ID{
		"ready": {7, 8}, "blocked": {9, 10}, "stranded": {3, 4, 6}, "in_progress": {},
		"completed": {1}, "failed": {2}, "cancelled": {5},
	}
	for key, ids := range want {
		if got := column(snap, key); !slices.Equal(got, ids) {
			t.Errorf("column %s: %v, want %v", key, got, ids)
		}
	}
	byID := map[taskgraph.ID]board.TaskView{}
	for _, v := range snap.Tasks {
		byID[v.ID] = v
	}
	if v := byID[1]; v.Result != "3 tables" || v.Priority != taskgraph.P2 {
		t.Errorf("task 1 %+v: want the result and P2", v)
	}
	if v := byID[2]; v.State != "failed" || v.Reason != "disk full" || v.Key != "migrate" || v.Why != "" {
		t.Errorf("task 2 %+v: want failed, with its reason and key", v)
	}
	if v := byID[5]; v.State != "cancelled" || v.Reason != "replaced by the new ui" {
		t.Errorf("task 5 %+v: want cancelled, with its reason", v)
	}
	if v := byID[7]; v.Priority != taskgraph.P0 || !slices.Equal(v.Labels, []string{"ops", "urgent"}) {
		t.Errorf("task 7 %+v: want P0, labels ops and urgent", v)
	}
	if v := byID[4]; v.Priority != taskgraph.P4 {
		t.Errorf("task 4 %+v: want P4", v)
	}
	if v := byID[2]; !slices.Equal(v.Strands, []taskgraph.ID{3, 4}) {
		t.Errorf("failed task 2 strands %v, want [3 4] (3 directly, 4 through 3)", v.Strands)
	}
	if v := byID[5]; !slices.Equal(v.Strands, []taskgraph.ID{6}) {
		t.Errorf("cancelled task 5 strands %v, want [6]", v.Strands)
	}
	for id, cause := range map[taskgraph.ID]taskgraph.ID{3: 2, 4: 2, 6: 5} {
		if v := byID[id]; v.State != "stranded" || v.StrandedBy != cause {
			t.Errorf("task %d: %s, stranded by %d; want stranded by %d", id, v.State, v.StrandedBy, cause)
		}
	}
	tasks, err := s.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []taskgraph.ID{3, 4, 6, 9, 10} {
		e, err := taskgraph.Explain(tasks, id, snap.Now)
		if err != nil {
			t.Fatal(err)
		}
		if byID[id].Why != e.Text {
			t.Errorf("task %d is not ready because %q; Explain says %q", id, byID[id].Why, e.Text)
		}
	}
	if why := byID[4].Why; !strings.Contains(why, "waits on 3") || !strings.Contains(why, "2 failed") || !strings.Contains(why, "disk full") {
		t.Errorf("task 4 is not ready because %q", why)
	}
	path, err := taskgraph.CriticalPath(tasks)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(snap.CriticalPath, path) || !slices.Equal(path, []taskgraph.ID{8, 9, 10}) {
		t.Errorf("critical path %v; CriticalPath says %v, want [8 9 10]", snap.CriticalPath, path)
	}
	// The JSON the page reads.
	data, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{`"criticalPath":[8,9,10]`, `"strandedBy":2`, `"reason":"disk full"`, `"result":"3 tables"`, `"priority":0`, `"labels":["ops","urgent"]`, `"why":"task 4 is stranded`, `"strands":[3,4]`} {
		if !strings.Contains(string(data), w) {
			t.Errorf("the snapshot's JSON lacks %s", w)
		}
	}
}

// A snapshot explains each blocked or stranded task over only its
// neighbourhood, not the whole graph: on random graphs, the text is the
// one taskgraph.Explain gives over the whole graph.
func TestWhyIsExplain(t *testing.T) {
	ctx := context.Background()
	kinds := map[string]int{} // what the texts covered
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 14))
		s := taskgraph.NewMemStore()
		n := 5 + r.IntN(40)
		for i := 1; i <= n; i++ {
			nt := taskgraph.NewTask{Subject: fmt.Sprintf("task %d", i)}
			for range r.IntN(4) {
				if b := taskgraph.ID(1 + r.IntN(i)); b < taskgraph.ID(i) && !slices.Contains(nt.BlockedBy, b) {
					nt.BlockedBy = append(nt.BlockedBy, b)
				}
			}
			if _, err := s.Create(ctx, nt); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 * n { // random work; refused steps are skipped
			id := taskgraph.ID(1 + r.IntN(n))
			owner := fmt.Sprintf("agent-%d", r.IntN(3))
			switch r.IntN(6) {
			case 0, 1:
				s.Claim(ctx, id, owner, taskgraph.WithLease(time.Duration(r.IntN(3))*time.Hour))
			case 2:
				s.Complete(ctx, id, "")
			case 3:
				s.Fail(ctx, id, "", "broke")
			case 4:
				s.Cancel(ctx, id, "not needed")
			case 5:
				s.Reopen(ctx, id)
			}
		}
		snap, err := board.New(s).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		explained := 0
		for _, v := range snap.Tasks {
			e, err := taskgraph.Explain(tasks, v.ID, snap.Now)
			if err != nil {
				t.Fatal(err)
			}
			if e.State != v.State {
				t.Fatalf("seed %d: task %d is %s on the board, %s to Explain", seed, v.ID, v.State, e.State)
			}
			if v.State != "blocked" && v.State != "stranded" {
				continue
			}
			explained++
			switch {
			case strings.Contains(e.Text, "which cannot start"):
				kinds["stranded through a blocker"]++
			case v.State == "stranded":
				kinds["stranded by a blocker"]++
			case strings.Contains(e.Text, "lease"):
				kinds["blocked by a leased claim"]++
			default:
				kinds["blocked"]++
			}
			if v.Why != e.Text || v.StrandedBy != e.StrandedBy {
				t.Fatalf("seed %d: task %d is not ready because %q (stranded by %d); Explain says %q (%d)", seed, v.ID, v.Why, v.StrandedBy, e.Text, e.StrandedBy)
			}
		}
		if explained == 0 && seed == 0 {
			t.Fatalf("seed %d: nothing to explain", seed)
		}
	}
	if len(kinds) != 4 {
		t.Fatalf("the random graphs covered only %v", kinds)
	}
	t.Logf("explained %v", kinds)
}

// A failed task names everything it strands, not just the tasks that wait
// on it directly: a chain of eight behind it, and a task that two failures
// strand, which each counts. On random graphs, what each failed or
// cancelled task strands is every stranded task that reaches it through
// stranded tasks, and every stranded task is stranded by some task.
func TestStrands(t *testing.T) {
	ctx := context.Background()
	s := taskgraph.NewMemStore()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Create(ctx, taskgraph.NewTask{Subject: "import"})) // 1: fails
	for i := 2; i <= 9; i++ {                                 // 2..9: a chain behind 1
		must(s.Create(ctx, taskgraph.NewTask{Subject: "step", BlockedBy: []taskgraph.ID{taskgraph.ID(i - 1)}}))
	}
	must(s.Create(ctx, taskgraph.NewTask{Subject: "export"}))                                    // 10: cancelled
	must(s.Create(ctx, taskgraph.NewTask{Subject: "both", BlockedBy: []taskgraph.ID{5, 10}}))    // 11: behind both
	must(s.Create(ctx, taskgraph.NewTask{Subject: "done"}))                                      // 12: completed
	must(s.Create(ctx, taskgraph.NewTask{Subject: "after done", BlockedBy: []taskgraph.ID{12}})) // 13: ready
	must(s.Claim(ctx, 1, "a"))
	must(s.Fail(ctx, 1, "a", "broke"))
	must(s.Cancel(ctx, 10, "dropped"))
	must(s.Claim(ctx, 12, "a"))
	must(s.Complete(ctx, 12, "a"))
	snap, err := board.New(s).Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[taskgraph.ID]board.TaskView{}
	for _, v := range snap.Tasks {
		byID[v.ID] = v
	}
	if got, want := byID[1].Strands, []taskgraph.ID{2, 3, 4, 5, 6, 7, 8, 9, 11}; !slices.Equal(got, want) {
		t.Errorf("failed task 1 strands %v, want %v", got, want)
	}
	if got, want := byID[10].Strands, []taskgraph.ID{11}; !slices.Equal(got, want) {
		t.Errorf("cancelled task 10 strands %v, want %v", got, want)
	}
	for _, id := range []taskgraph.ID{2, 11, 12, 13} {
		if v := byID[id]; v.Strands != nil {
			t.Errorf("task %d (%s) strands %v: only a failed or cancelled task strands", id, v.State, v.Strands)
		}
	}

	through, twice := 0, 0 // stranded through another stranded task; by two causes
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 20))
		s := taskgraph.NewMemStore()
		n := 5 + r.IntN(40)
		for i := 1; i <= n; i++ {
			nt := taskgraph.NewTask{Subject: fmt.Sprintf("task %d", i)}
			for range r.IntN(3) {
				if b := taskgraph.ID(1 + r.IntN(i)); b < taskgraph.ID(i) && !slices.Contains(nt.BlockedBy, b) {
					nt.BlockedBy = append(nt.BlockedBy, b)
				}
			}
			must(s.Create(ctx, nt))
		}
		for range 2 * n {
			id := taskgraph.ID(1 + r.IntN(n))
			switch r.IntN(4) {
			case 0, 1:
				if _, err := s.Claim(ctx, id, "a"); err == nil {
					s.Complete(ctx, id, "a")
				}
			case 2:
				if _, err := s.Claim(ctx, id, "a"); err == nil {
					s.Fail(ctx, id, "a", "broke")
				}
			case 3:
				s.Cancel(ctx, id, "not needed")
			}
		}
		snap, err := board.New(s).Snapshot(ctx)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[taskgraph.ID]board.TaskView{}
		for _, v := range snap.Tasks {
			byID[v.ID] = v
		}
		// reaches reports whether cause reaches id going back along
		// BlockedBy through stranded tasks only.
		var reaches func(id, cause taskgraph.ID, seen map[taskgraph.ID]bool) bool
		reaches = func(id, cause taskgraph.ID, seen map[taskgraph.ID]bool) bool {
			for _, b := range byID[id].BlockedBy {
				if b == cause || byID[b].State == "stranded" && !seen[b] && func() bool { seen[b] = true; return reaches(b, cause, seen) }() {
					return true
				}
			}
			return false
		}
		covered := map[taskgraph.ID]bool{}
		causes := map[taskgraph.ID]int{}
		for _, v := range snap.Tasks {
			if v.State != "failed" && v.State != "cancelled" {
				continue
			}
			var want []taskgraph.ID
			for _, o := range snap.Tasks {
				if o.State == "stranded" && reaches(o.ID, v.ID, map[taskgraph.ID]bool{}) {
					want = append(want, o.ID)
					covered[o.ID] = true
				}
			}
			if !slices.Equal(v.Strands, want) {
				t.Fatalf("seed %d: task %d (%s) strands %v, want %v", seed, v.ID, v.State, v.Strands, want)
			}
			for _, id := range v.Strands {
				covered[id] = true
				causes[id]++
				if !slices.Contains(byID[id].BlockedBy, v.ID) {
					through++
				}
			}
		}
		for _, c := range causes {
			if c > 1 {
				twice++
			}
		}
		for _, id := range column(snap, "stranded") {
			if !covered[id] || !slices.Contains(byID[byID[id].StrandedBy].Strands, id) {
				t.Fatalf("seed %d: stranded task %d is not among what its cause %d strands", seed, id, byID[id].StrandedBy)
			}
		}
	}
	if through == 0 || twice == 0 {
		t.Fatalf("the random graphs had %d tasks stranded through another, %d stranded twice: too few to test", through, twice)
	}
	t.Logf("%d tasks stranded through another, %d stranded by two or more", through, twice)
}

// A write, through the board or by anyone else, reaches every open page
// as a new snapshot.
func TestEventsAfterWrite(t *testing.T) {
	srv, s := server(t, board.AllowWrites(), board.WithTokens(tokens))
	ev := openEvents(t, srv)
	first := ev.next()
	if len(first.Tasks) != 4 {
		t.Fatalf("first snapshot has %d tasks", len(first.Tasks))
	}
	if r := post(t, srv, "/api/tasks", `{"subject":"via the board"}`); r.code != http.StatusCreated {
		t.Fatalf("create: %d %v", r.code, r.body)
	}
	snap := ev.until(func(s board.Snapshot) bool { return len(s.Tasks) == 5 })
	if snap.Version <= first.Version || snap.Tasks[4].Subject != "via the board" {
		t.Fatalf("after a write: version %d (first %d), %+v", snap.Version, first.Version, snap.Tasks[4])
	}
	if _, err := s.Release(context.Background(), 2, ""); err != nil {
		t.Fatal(err)
	}
	ev.until(func(s board.Snapshot) bool { return len(column(s, "in_progress")) == 0 })
}

// A board on a directory sees the writes of another store on the same
// directory, as it would another process's.
func TestEventsFromAnotherStore(t *testing.T) {
	dir := t.TempDir()
	mine, err := taskgraph.Open(dir, taskgraph.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	defer mine.Close()
	theirs, err := taskgraph.Open(dir, taskgraph.WithoutSync())
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	srv := serve(t, mine)
	ev := openEvents(t, srv)
	if n := len(ev.next().Tasks); n != 0 {
		t.Fatalf("%d tasks in a new directory", n)
	}
	if _, err := theirs.Create(context.Background(), taskgraph.NewTask{Subject: "from elsewhere"}); err != nil {
		t.Fatal(err)
	}
	snap := ev.until(func(s board.Snapshot) bool { return len(s.Tasks) == 1 })
	if snap.Tasks[0].Subject != "from elsewhere" || snap.Tasks[0].State != "ready" {
		t.Fatalf("%+v", snap.Tasks[0])
	}
}

// A burst of writes becomes a few snapshots, never two within the
// interval, and the last one shows every write.
func TestCoalescing(t *testing.T) {
	s := taskgraph.NewMemStore()
	const interval = 100 * time.Millisecond
	srv := serve(t, s, board.WithInterval(interval))
	ev := openEvents(t, srv)
	ev.next()
	const writes = 500
	start := time.Now()
	go func() {
		for i := range writes {
			if _, err := s.Create(context.Background(), taskgraph.NewTask{Subject: "burst"}); err != nil {
				t.Error(err)
				return
			}
			if i%50 == 0 {
				time.Sleep(20 * time.Millisecond) // a burst that lasts a few intervals
			}
		}
	}()
	var times []time.Time // when the server made each snapshot
	ev.until(func(s board.Snapshot) bool {
		times = append(times, s.Now)
		return len(s.Tasks) == writes
	})
	elapsed := time.Since(start)
	for i := 1; i < len(times); i++ {
		// The interval runs from one send to the making of the next.
		if gap := times[i].Sub(times[i-1]); gap < interval {
			t.Errorf("snapshots %d and %d were made %v apart, under the %v interval", i-1, i, gap, interval)
		}
	}
	if max := int(elapsed/interval) + 2; len(times) > max {
		t.Errorf("%d snapshots in %v: want at most %d", len(times), elapsed, max)
	}
	t.Logf("%d writes in %v reached the page as %d snapshots (%.0f writes/s, %.1f snapshots/s)",
		writes, elapsed.Round(time.Millisecond), len(times), writes/elapsed.Seconds(), float64(len(times))/elapsed.Seconds())
}

func TestCloseEndsEventStreams(t *testing.T) {
	s := taskgraph.NewMemStore()
	b := board.New(s)
	srv := httptest.NewServer(b)
	defer srv.Close()
	ev := openEvents(t, srv)
	ev.next()
	done := make(chan struct{})
	go func() {
		io.Copy(io.Discard, ev.resp.Body)
		close(done)
	}()
	b.Close()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the event stream is still open 10s after Close")
	}
	resp, err := srv.Client().Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("event stream after Close: %d", resp.StatusCode)
	}
}

// The page loads only what the board serves: every file it names is
// embedded, and no file names another site.
func TestPageIsSelfContained(t *testing.T) {
	srv, _ := server(t)
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		return resp, string(data)
	}
	resp, page := get("/")
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") {
		t.Fatalf("Content-Security-Policy %q", csp)
	}
	refs := regexp.MustCompile(`(?:src|href)="(static/[^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 2 {
		t.Fatalf("the page names %d static files", len(refs))
	}
	for _, m := range refs {
		get("/" + m[1])
	}
	_, worker := get("/static/layout-worker.js")
	if !strings.Contains(worker, `importScripts("vendor/dagre/dagre.min.js")`) {
		t.Fatal("the layout worker does not load the vendored dagre")
	}
	get("/static/vendor/dagre/dagre.min.js")
	get("/static/vendor/dagre/LICENSE")
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	err := fs.WalkDir(board.StaticFiles(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "LICENSE") || strings.HasSuffix(path, ".md") || strings.HasSuffix(path, ".txt") {
			return err
		}
		data, err := fs.ReadFile(board.StaticFiles(), path)
		if err != nil {
			return err
		}
		for _, m := range url.FindAllString(string(data), -1) {
			if m != "http://www.w3.org" { // the SVG namespace, a name and not a load
				t.Errorf("%s names %s", path, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// getEvents opens an event stream and returns the response, open.
func getEvents(t *testing.T, srv *httptest.Server) *http.Response {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The board serves at most DefaultMaxStreams event streams at once: one
// more is refused with 503, a message that says the limit and what to do,
// and Retry-After; when a stream closes, a new one gets in.
func TestEventStreamLimit(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  []board.Option
		limit int
	}{
		{"default", nil, board.DefaultMaxStreams},
		{"WithMaxStreams", []board.Option{board.WithMaxStreams(3)}, 3},
		{"WithMaxStreams(0) is the default", []board.Option{board.WithMaxStreams(0)}, board.DefaultMaxStreams},
	} {
		t.Run(c.name, func(t *testing.T) {
			if board.DefaultMaxStreams < 16 || board.DefaultMaxStreams > 4096 {
				t.Fatalf("DefaultMaxStreams = %d, not a sane default", board.DefaultMaxStreams)
			}
			srv, _ := server(t, c.opts...)
			srv.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = c.limit + 2
			open := make([]*http.Response, 0, c.limit)
			t.Cleanup(func() {
				for _, r := range open {
					r.Body.Close()
				}
			})
			for i := range c.limit {
				resp := getEvents(t, srv)
				if resp.StatusCode != http.StatusOK {
					resp.Body.Close()
					t.Fatalf("stream %d of %d: %d", i+1, c.limit, resp.StatusCode)
				}
				open = append(open, resp)
			}
			refused := getEvents(t, srv)
			data, _ := io.ReadAll(refused.Body)
			refused.Body.Close()
			if refused.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("stream %d past a limit of %d: %d %s", c.limit+1, c.limit, refused.StatusCode, data)
			}
			if refused.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After on the refusal")
			}
			var body board.ErrorResponse
			if err := json.Unmarshal(data, &body); err != nil {
				t.Fatalf("refusal %q is not JSON: %v", data, err)
			}
			for _, want := range []string{fmt.Sprint(c.limit), "close", "WithMaxStreams"} {
				if !strings.Contains(body.Error, want) {
					t.Errorf("refusal %q does not say %q", body.Error, want)
				}
			}
			// The other endpoints still answer.
			if resp, err := srv.Client().Get(srv.URL + "/api/board"); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /api/board at the stream limit: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}

			// Closing one lets a new one in, once the server has seen it go.
			open[0].Body.Close()
			open = open[1:]
			deadline := time.Now().Add(10 * time.Second)
			for {
				resp := getEvents(t, srv)
				if resp.StatusCode == http.StatusOK {
					open = append(open, resp)
					break
				}
				resp.Body.Close()
				if time.Now().After(deadline) {
					t.Fatalf("a stream closed, and a new one is still refused 10s later: %d", resp.StatusCode)
				}
				time.Sleep(10 * time.Millisecond)
			}
			// And the limit holds again.
			resp := getEvents(t, srv)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("past the limit again: %d", resp.StatusCode)
			}
		})
	}
}

// refusing is a store whose releases the graph's state refuses, with each
// kind of refusal in turn.
type refusing struct {
	*taskgraph.MemStore
	err error
}

func (r refusing) Release(context.Context, taskgraph.ID, string) (taskgraph.Task, error) {
	return taskgraph.Task{}, r.err
}

// TestRefusalsAsTheHubAnswers: a write the store refuses gets the status
// the hub gives the same error (hub.StatusOf) — 409 for what the graph's
// state refuses (it was 500 for a deferred, limited, lapsed, awaiting or
// unverified task), 404, 400, 503 — with the store's own text.
func TestRefusalsAsTheHubAnswers(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{&taskgraph.LapsedError{ID: 2, Owner: "agent-2"}, http.StatusConflict},
		{&taskgraph.DeferredError{ID: 2}, http.StatusConflict},
		{&taskgraph.LimitError{ID: 2, Label: "gpu", Limit: 1}, http.StatusConflict},
		{&taskgraph.AwaitingApprovalError{ID: 2}, http.StatusConflict},
		{&taskgraph.ClaimedError{ID: 2, Owner: "agent-9"}, http.StatusConflict},
		{&taskgraph.NotFoundError{ID: 2}, http.StatusNotFound},
		{&taskgraph.InvalidError{Field: "owner", Reason: "is odd"}, http.StatusBadRequest},
		{taskgraph.ErrClosed, http.StatusServiceUnavailable},
		{errors.New("disk on fire"), http.StatusInternalServerError},
	} {
		s := refusing{MemStore: taskgraph.NewMemStore(), err: c.err}
		plan(t, s.MemStore)
		srv := serve(t, s, board.AllowWrites(), board.WithTokens(tokens))
		r := post(t, srv, "/api/tasks/2/release", `{}`)
		if r.code != c.want || r.body["error"] != c.err.Error() {
			t.Errorf("a release refused with %T: %d %v, want %d and its text", c.err, r.code, r.body, c.want)
		}
	}
}

package board_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph/board"

	"github.com/taskgraph-dev/taskgraph"
)

// promLine matches a line of the Prometheus text format (0.0.4): a HELP or
// TYPE comment, or a sample, a metric name with optional labels and a
// value.
var promLine = regexp.MustCompile(`^(# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .+|# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (gauge|counter)|[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*\})? -?[0-9]+)$`)

// metrics gets /metrics and checks it is the Prometheus text format: every
// line well formed, every sample after its metric's TYPE.
func metrics(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" {
		t.Fatalf("GET /metrics: %s, %q: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	samples := map[string]string{}
	typed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		if !promLine.MatchString(line) {
			t.Fatalf("not the Prometheus text format: %q", line)
		}
		if f := strings.Fields(line); f[0] == "#" {
			if f[1] == "TYPE" {
				typed[f[2]] = true
			}
			continue
		}
		name, value, _ := strings.Cut(line, " ")
		if base, _, _ := strings.Cut(name, "{"); !typed[base] {
			t.Errorf("%s has no TYPE before it", name)
		}
		samples[name] = value
	}
	return samples
}

// GET /metrics counts the tasks by state, the lapsed leases and the pages
// following the board, in the Prometheus text format.
func TestMetrics(t *testing.T) {
	srv, s := server(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, taskgraph.NewTask{Subject: "short lease"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, 5, "agent-3", taskgraph.WithLease(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	m := metrics(t, srv.URL)
	for name, want := range map[string]string{
		`taskgraph_tasks{state="ready"}`: "1", `taskgraph_tasks{state="blocked"}`: "1", `taskgraph_tasks{state="in_progress"}`: "2",
		`taskgraph_tasks{state="completed"}`: "1", `taskgraph_tasks{state="failed"}`: "0", `taskgraph_tasks{state="stranded"}`: "0",
		`taskgraph_tasks{state="deferred"}`: "0", `taskgraph_tasks{state="limited"}`: "0", `taskgraph_tasks{state="cancelled"}`: "0",
		"taskgraph_leases_lapsed": "1", "taskgraph_board_streams": "0", "taskgraph_board_stream_limit": "256",
	} {
		if m[name] != want {
			t.Errorf("%s = %q, want %s", name, m[name], want)
		}
	}
	// A page following the board is counted.
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for metrics(t, srv.URL)["taskgraph_board_streams"] != "1" {
		if time.Now().After(deadline) {
			t.Fatal("the open event stream is not counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// brokenStore is a store whose reads fail.
type brokenStore struct{ *taskgraph.MemStore }

func (brokenStore) Board(context.Context, ...taskgraph.Filter) (taskgraph.Board, error) {
	return taskgraph.Board{}, errors.New("disk on fire")
}

// WithLogger: a store the board cannot read for its pages is logged, as
// a warning naming the error; the page is told too.
func TestWithLogger(t *testing.T) {
	var buf syncBuffer
	srv := serve(t, brokenStore{taskgraph.NewMemStore()}, board.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
	resp, err := http.Get(srv.URL + "/api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), "level=WARN") {
		if time.Now().After(deadline) {
			t.Fatalf("nothing logged: %q", buf.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(buf.String(), `msg="taskgraph board: the store cannot be read for the pages" err="disk on fire"`) {
		t.Errorf("logged %q", buf.String())
	}
}

// syncBuffer is a bytes.Buffer the handler and the test may use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

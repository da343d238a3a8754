// GET /metrics: the board's graph and streams in the Prometheus text
// exposition format (version 0.0.4), written by hand: a dozen lines of
// gauges and counters do not need a client library.

package board

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// metricsContentType is the Prometheus text format's media type.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// handleMetrics serves the metrics: the tasks in each state (one gauge,
// labelled by state), the tasks in progress whose lease has lapsed, the
// pages following the board, and the states computed and the failures
// since the server started.
func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	b, err := s.store.Board(r.Context())
	if err != nil {
		storeError(w, err)
		return
	}
	var m strings.Builder
	metric := func(name, kind, help string) {
		fmt.Fprintf(&m, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
	}
	metric("taskgraph_tasks", "gauge", "Tasks in the graph, by state (taskgraph.State).")
	for _, st := range b.Lists() {
		fmt.Fprintf(&m, "taskgraph_tasks{state=%q} %d\n", string(st.State), len(st.Tasks))
	}
	lapsed := 0
	now := time.Now()
	for _, t := range b.InProgress {
		if t.Lapsed(now) {
			lapsed++
		}
	}
	metric("taskgraph_leases_lapsed", "gauge", "Tasks in progress whose lease has lapsed: the next claim may take them over.")
	fmt.Fprintf(&m, "taskgraph_leases_lapsed %d\n", lapsed)

	h := s.hub
	h.mu.Lock()
	streams, failures := len(h.subs), h.failures
	h.mu.Unlock()
	metric("taskgraph_board_streams", "gauge", "Pages following the board live (GET /api/events).")
	fmt.Fprintf(&m, "taskgraph_board_streams %d\n", streams)
	metric("taskgraph_board_stream_limit", "gauge", "Pages that may follow the board at once (WithMaxStreams).")
	fmt.Fprintf(&m, "taskgraph_board_stream_limit %d\n", s.cfg.streams)
	metric("taskgraph_board_states_total", "counter", "Board states computed for the pages since the server started.")
	fmt.Fprintf(&m, "taskgraph_board_states_total %d\n", h.builds.Load())
	metric("taskgraph_board_failures_total", "counter", "Failed attempts to read the store for the pages since the server started.")
	fmt.Fprintf(&m, "taskgraph_board_failures_total %d\n", failures)

	w.Header().Set("Content-Type", metricsContentType)
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, m.String())
}

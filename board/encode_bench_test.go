package board

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// BenchmarkAppendTask measures the board's JSON of one task, the most of
// a snapshot's cost that is the encoder's: a thousand tasks as
// boardbench makes them (six in ten completed, most of the rest blocked,
// a few in progress; each with a description, a label, a priority and
// its times), and a tenth with a note and two transitions, each appended
// into one buffer.
func BenchmarkAppendTask(b *testing.B) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 123456789, time.UTC)
	areas := []string{"backend", "frontend", "ops", "docs", "data"}
	es := make([]entry, 1000)
	for i := range es {
		t := &taskgraph.Task{ID: taskgraph.ID(i + 1), Subject: fmt.Sprintf("Task number %d of the project", i+1),
			Description: "Some words that say what is to be done, and how, and why it matters to the rest.",
			Status:      taskgraph.Pending, Priority: taskgraph.PriorityLevel(i % 5), Labels: []string{areas[i%5]},
			CreatedAt: now, UpdatedAt: now, Rev: 1}
		if i > 16 {
			t.BlockedBy = []taskgraph.ID{taskgraph.ID(i - 3), taskgraph.ID(i - 7)}
		}
		e := entry{t: t, col: colOf(taskgraph.StateCompleted)}
		switch {
		case i < 600:
			t.Status, t.Owner, t.Result = taskgraph.Completed, "agent-2", "done and merged"
		case i < 610:
			t.Status, t.Owner, t.ClaimedAt, t.LeaseExpiresAt, e.col = taskgraph.InProgress, "agent-3", now, now.Add(time.Hour), colInProgress
		default:
			e.col, e.d = colBlocked, &derived{why: "blocked by 593 (in progress)", waitingOn: t.BlockedBy[:1]}
		}
		if i%10 == 0 {
			t.Notes = []taskgraph.Note{{At: now, Author: "agent-3", Text: "tried the other way first"}}
			t.History = []taskgraph.Transition{{At: now, Event: taskgraph.HistoryClaimed, By: "agent-3"}, {At: now, Event: taskgraph.HistoryCompleted, By: "agent-3"}}
		}
		es[i] = e
	}
	st := &state{now: now}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = buf[:0]
		for i := range es {
			buf = st.appendTask(buf, &es[i])
		}
	}
	b.ReportMetric(float64(len(buf))/float64(len(es)), "bytes/task")
}

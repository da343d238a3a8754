package board

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// BenchmarkAppendTask measures the board's JSON of one task, the most of
// a snapshot's cost that is the encoder's: a thousand tasks as a project
// has them (most pending and blocked, some in progress, a few done with
// a result, notes and history), each appended into one buffer.
func BenchmarkAppendTask(b *testing.B) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 123456789, time.UTC)
	es := make([]entry, 1000)
	for i := range es {
		t := &taskgraph.Task{ID: taskgraph.ID(i + 1), Subject: fmt.Sprintf("Write the part %d of the parser, with its tests", i),
			Description: "A description of what the task is, a line or two of text that an agent reads before it starts.",
			Status:      taskgraph.Pending, Priority: taskgraph.PriorityLevel(i % 5), Labels: []string{"backend"},
			BlockedBy: []taskgraph.ID{taskgraph.ID(i), taskgraph.ID(i / 2)}, Blocks: []taskgraph.ID{taskgraph.ID(i + 2)},
			CreatedAt: now, UpdatedAt: now.Add(time.Minute), Rev: 3}
		e := entry{t: t, col: colBlocked, d: &derived{why: "blocked by 12 (pending)", waitingOn: []taskgraph.ID{taskgraph.ID(i)}}}
		switch i % 10 {
		case 0:
			t.Status, t.Owner, t.ClaimedAt, t.LeaseExpiresAt = taskgraph.InProgress, "agent-7", now, now.Add(time.Hour)
			e.col, e.d = colReady, nil
		case 1:
			t.Status, t.Result, e.col, e.d = taskgraph.Completed, "done: see the commit", colReady, nil
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

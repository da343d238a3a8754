package board

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/viewtest"
)

// TestViews: the board's JSON of a task with every field set and every
// thing derived of it, pending and in progress (its claim ending by its
// max runtime) — as a snapshot or a
// change writes it by hand, as the Snapshot holds it, and as a write
// answers — against golden files made from the code before the views
// shared one field list.
func TestViews(t *testing.T) {
	st := &state{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	d := &derived{why: "why", waitingOn: []taskgraph.ID{7}, strandedBy: 8, lapsed: true,
		rare: &rareDerived{missing: []taskgraph.ID{9}, strands: []taskgraph.ID{10}}}
	var hand, snap, write []byte
	for _, status := range []taskgraph.Status{taskgraph.Pending, taskgraph.InProgress} {
		task := viewtest.Task(t, status)
		task.LeaseExpiresAt = task.ClaimedAt.Add(24 * time.Hour) // the max runtime ends the claim first: lapsesAt, clock
		e := entry{t: &task, col: colReady, d: d}
		hand = append(st.appendTask(hand, &e), '\n')
		for _, p := range []struct {
			out *[]byte
			v   TaskView
		}{{&snap, st.view(&e)}, {&write, taskJSON(task)}} {
			data, err := json.Marshal(p.v)
			if err != nil {
				t.Fatal(err)
			}
			*p.out = append(append(*p.out, data...), '\n')
		}
	}
	viewtest.Golden(t, "board.json", hand)
	viewtest.Golden(t, "board_snapshot_struct.json", snap)
	viewtest.Golden(t, "board_write.json", write)
}

// TestTaskViewIsTheView: TaskView, the Snapshot's shape of a task, has the
// fields of the board's JSON of one, in its order, left out alike — but
// for those only the JSON carries, which a write's answer (a TaskView)
// never had.
func TestTaskViewIsTheView(t *testing.T) {
	var want []string
	for _, name := range taskView.Names() {
		if !slices.Contains([]string{"awaitingApproval?", "createdVia?", "links?"}, name) {
			want = append(want, name)
		}
	}
	if got := viewtest.Fields(reflect.TypeFor[TaskView]()); !slices.Equal(got, want) {
		t.Errorf("TaskView's fields:\n%v\nthe board's view's:\n%v", got, want)
	}
}

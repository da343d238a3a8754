package main

import (
	"bytes"
	"testing"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/viewtest"
)

// TestViews: what --json prints of a task with every field set, pending
// and in progress, one at a time (show) and as a list (list, ready, which
// write each task indented by hand), against golden files made from the
// code before the views shared one field list; and a list is what
// encoding/json writes of the same tasks (the code before wrote a list
// by hand without parent, the schedule, the retries and Extra's fields),
// as board --json is.
func TestViews(t *testing.T) {
	tasks := []taskgraph.Task{viewtest.Task(t, taskgraph.Pending), viewtest.Task(t, taskgraph.InProgress)}
	v := view{state: map[taskgraph.ID]taskgraph.State{tasks[0].ID: taskgraph.StateReady}}
	var show bytes.Buffer
	for _, task := range tasks {
		if err := (&env{stdout: &show}).printJSON(v.toJSON(task)); err != nil {
			t.Fatal(err)
		}
	}
	viewtest.Golden(t, "cli_show.json", show.Bytes())
	var list bytes.Buffer
	var j taskOut
	if err := (&env{stdout: &list}).printJSONArray(len(tasks), func(i int) any { j = v.toJSON(tasks[i]); return &j }); err != nil {
		t.Fatal(err)
	}
	viewtest.Golden(t, "cli_list.json", list.Bytes())
	var whole bytes.Buffer
	if err := (&env{stdout: &whole}).printJSON([]taskOut{v.toJSON(tasks[0]), v.toJSON(tasks[1])}); err != nil {
		t.Fatal(err)
	}
	if list.String() != whole.String() {
		t.Errorf("list --json:\n%s\nencoding/json:\n%s", list.Bytes(), whole.Bytes())
	}

	// board --json, written a task at a time, is what encoding/json
	// writes of the map of state to tasks.
	b := taskgraph.Board{Ready: tasks[:1], InProgress: tasks[1:]}
	var board bytes.Buffer
	if err := (&env{stdout: &board, json: true}).printBoard(b); err != nil {
		t.Fatal(err)
	}
	bv := viewOfBoard(b)
	byState := map[taskgraph.State][]taskOut{}
	for _, g := range b.Lists() {
		byState[g.State] = bv.toJSONs(g.Tasks)
	}
	whole.Reset()
	if err := (&env{stdout: &whole}).printJSON(byState); err != nil {
		t.Fatal(err)
	}
	if board.String() != whole.String() {
		t.Errorf("board --json:\n%s\nencoding/json:\n%s", board.Bytes(), whole.Bytes())
	}
}

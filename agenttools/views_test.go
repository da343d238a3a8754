package agenttools

import (
	"encoding/json"
	"testing"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/viewtest"
)

// TestViews: the tools' task text and structured output (in full, as
// task_get gives it, and as a line of task_list) of a task with every
// field set, pending and in progress, against golden files made from the
// code before the views shared one field list.
func TestViews(t *testing.T) {
	var text []byte
	var full, line []TaskView
	for _, status := range []taskgraph.Status{taskgraph.Pending, taskgraph.InProgress} {
		task := viewtest.Task(t, status)
		text = append(text, render(task)+"\n"...)
		full = append(full, viewOf(task, taskgraph.StateBlocked, true))
		line = append(line, viewOf(task, taskgraph.StateBlocked, false))
	}
	viewtest.Golden(t, "tools_text.txt", text)
	for name, vs := range map[string][]TaskView{"tools_structured.json": full, "tools_structured_line.json": line} {
		data, err := json.MarshalIndent(vs, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		viewtest.Golden(t, name, append(data, '\n'))
	}
}

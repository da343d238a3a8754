package agenttools

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/internal/taskview"
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

// TestTaskViewNamesAreFields: every field of TaskView, the structured
// output's task, is named as the one list of a task's outward fields
// names it (taskview.New panics on a name it does not list).
func TestTaskViewNamesAreFields(t *testing.T) {
	taskview.New(taskview.Format{}, strings.Join(viewtest.Fields(reflect.TypeFor[TaskView]()), " "))
}

// TestDeprecatedTaskJSON: TaskJSON, kept for one minor version, is still
// the head of the tools' task text.
func TestDeprecatedTaskJSON(t *testing.T) {
	task := viewtest.Task(t, taskgraph.Pending)
	head, err := json.MarshalIndent(NewTaskJSON(task), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if h := strings.TrimSuffix(string(head), "\n}"); !strings.HasPrefix(render(task), h+",\n") {
		t.Errorf("the text does not start with TaskJSON's fields:\n%s\n%s", h, render(task))
	}
}

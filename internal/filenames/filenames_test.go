package filenames

import "testing"

// TestTaskNames: only the canonical name of a positive id is a task file,
// and only TempName's temporaries of one name their target.
func TestTaskNames(t *testing.T) {
	for name, want := range map[string]int64{
		"task_1.json": 1, "task_9007199254740991.json": 9007199254740991,
		"task_0.json": 0, "task_01.json": 0, "task_+1.json": 0, "task_-1.json": 0, "task_1.json.swp": 0,
		"task_.json": 0, "Task_1.json": 0, "task_1.JSON": 0, "task_99999999999999999999.json": 0,
	} {
		id, ok := ParseTask(name)
		if ok != (want != 0) || id != want {
			t.Errorf("ParseTask(%q) = %d, %v; want %d", name, id, ok, want)
		}
		if want != 0 && Task(id) != name {
			t.Errorf("Task(%d) = %q, want %q", id, Task(id), name)
		}
	}
	for name, want := range map[string]string{
		".task_1.json0abc": "task_1.json", ".task_12.jsonz9": "task_12.json",
		".task_1.json": "", ".task_1.json.swp": "", ".task_01.json0abc": "", "task_1.json0abc": "", ".task_1.jsonABC": "",
	} {
		got, ok := TempTarget(name)
		if ok != (want != "") || got != want && ok {
			t.Errorf("TempTarget(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

// Package viewtest is what the tests of a task's outward views share (the
// CLI's JSON, the tools' text and structured output, the board's JSON): a
// task with every field set, and golden files of what each view writes of
// it, so that a view that drops, renames or reorders a field fails.
package viewtest

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

var update = flag.Bool("update-views", false, "rewrite the views' golden files in testdata/views")

// Task returns a task with every exported field set, recursively and by
// reflection, each to a value of its own (a string is the field's path,
// numbers and times count up), so that a field a view writes under
// another's name shows. A field added to taskgraph.Task is set too; status
// and priority are then set to ones a task can have.
func Task(t testing.TB, status taskgraph.Status) taskgraph.Task {
	t.Helper()
	var task taskgraph.Task
	n := 0
	fill(t, reflect.ValueOf(&task).Elem(), "", &n)
	task.Status = status
	task.Priority = taskgraph.P0 // not the default
	return task
}

func fill(t testing.TB, v reflect.Value, path string, n *int) {
	t.Helper()
	*n++
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(time.Date(2026, 12, 7, 10, *n, 12, 13, time.FixedZone("", 3600))))
		return
	case time.Duration:
		v.SetInt(int64(*n) * int64(90*time.Second))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(path)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(int64(100 + *n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0), path+"[0]", n)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf(path), reflect.ValueOf("v"+strconv.Itoa(*n)))
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem(), path, n)
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				name := f.Name
				if path != "" {
					name = path + "." + name
				}
				fill(t, v.Field(i), name, n)
			}
		}
	default:
		t.Fatalf("viewtest: no value for a field of kind %s (%s): teach fill one", v.Kind(), v.Type())
	}
}

// Golden compares got with the file testdata/views/name, which
// go test -update-views writes.
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "views", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update-views writes it)", err)
	}
	if string(want) != string(got) {
		t.Errorf("%s: the view changed (go test -update-views rewrites it, if it should)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// Fields returns the JSON names of the fields of the struct type typ, in
// order, each followed by "?" where encoding/json leaves it out when it
// says nothing (omitempty, omitzero): a view's Names, for a struct that
// must match one.
func Fields(typ reflect.Type) []string {
	var out []string
	for i := range typ.NumField() {
		tag := typ.Field(i).Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") {
			name += "?"
		}
		out = append(out, name)
	}
	return out
}

package main

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// What export prints, import reads back: every field of a task, filled
// here by reflection, so a field added to taskgraph.Task that the JSON
// form does not carry fails this test instead of vanishing in an
// export → import (before: parent, notBefore, due, maxAttempts, attempts,
// backoff, maxRuntime and progressWindow did). Blocks is derived from the
// other tasks' edges, so import ignores it.
func TestJSONCarriesEveryField(t *testing.T) {
	var task taskgraph.Task
	fill(t, reflect.ValueOf(&task).Elem())
	task.Status = taskgraph.Completed
	task.Priority = taskgraph.P0 // not the default, so that it is written
	task.Blocks = nil

	data, err := json.Marshal(toJSON(task))
	require.NoError(t, err)
	var back taskJSON
	require.NoError(t, json.Unmarshal(data, &back))
	require.Equal(t, task, fromJSON(back), "export → import changed the task; its JSON: %s", data)
}

// fill sets every exported field of v, recursively, to a value that is
// not its zero.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Interface().(type) {
	case time.Time:
		v.Set(reflect.ValueOf(time.Date(2026, 12, 7, 10, 11, 12, 13, time.UTC)))
		return
	case time.Duration:
		v.SetInt(int64(90 * time.Second))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(t, s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		m.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf("v"))
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(t, p.Elem())
		v.Set(p)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i))
			}
		}
	case reflect.Interface:
		v.Set(reflect.ValueOf("v"))
	default:
		t.Fatalf("fill: no value for a field of kind %s (%s): teach fill one", v.Kind(), v.Type())
	}
}

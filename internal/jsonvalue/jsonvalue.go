// Package jsonvalue handles the free-form metadata of a task: maps of JSON
// values as encoding/json decodes them (string, float64, bool, nil,
// []any, map[string]any).
package jsonvalue

import (
	"encoding/json"
	"maps"
	"slices"
)

// Normalize returns m as JSON would read it back (numbers as float64,
// slices as []any), so that a value looks the same before and after it is
// stored, in every store. An empty map becomes nil. It fails if m holds a
// value JSON cannot represent.
func Normalize(m map[string]any) (map[string]any, error) {
	if len(m) == 0 {
		return nil, nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// Merge applies a metadata patch to m: every key of set replaces the key of
// m, and a key whose value is nil removes it. set must already be
// normalised. The result is nil when no key is left.
func Merge(m, set map[string]any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if v := set[k]; v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Clone returns a deep copy of m.
func Clone(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return Clone(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = cloneValue(e)
		}
		return out
	default:
		return v
	}
}

// Package jsonvalue handles the free-form metadata of a task: maps of JSON
// values as encoding/json decodes them (string, float64, bool, nil,
// []any, map[string]any).
package jsonvalue

import (
	"encoding/json"
	"errors"
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

// CheckText reports the first string of m, key or value at any depth, that
// is not valid UTF-8 or holds a NUL byte: JSON would replace the first with
// U+FFFD, changing the text silently, and PostgreSQL's jsonb refuses the
// second. It returns nil if m cannot be marshalled at all (Normalize says
// why).
func CheckText(m map[string]any) error {
	if len(m) == 0 {
		return nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	// encoding/json writes a NUL as \u0000 and each byte of invalid UTF-8
	// as \ufffd, and never escapes a valid U+FFFD: the escapes are the
	// evidence.
	for i := 0; i+1 < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		i++
		if data[i] != 'u' || i+5 > len(data) {
			continue
		}
		switch string(data[i+1 : i+5]) {
		case "0000":
			return errors.New("a string holds a NUL byte")
		case "fffd":
			return errors.New("a string is not valid UTF-8")
		}
	}
	return nil
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

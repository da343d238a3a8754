package jsonvalue

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	got, err := Normalize(map[string]any{"n": 1, "l": []int{1, 2}, "m": map[string]int{"a": 1}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"n": 1.0, "l": []any{1.0, 2.0}, "m": map[string]any{"a": 1.0}}, got)
	got, err = Normalize(map[string]any{})
	require.NoError(t, err)
	require.Nil(t, got)
	_, err = Normalize(map[string]any{"bad": math.Inf(1)})
	require.Error(t, err)
}

func TestMerge(t *testing.T) {
	m := Merge(map[string]any{"a": 1.0, "b": 2.0}, map[string]any{"a": nil, "c": "x"})
	require.Equal(t, map[string]any{"b": 2.0, "c": "x"}, m)
	require.Nil(t, Merge(map[string]any{"a": 1.0}, map[string]any{"a": nil}))
	require.Equal(t, map[string]any{"k": true}, Merge(nil, map[string]any{"k": true}))
}

func TestCloneIsDeep(t *testing.T) {
	m := map[string]any{"l": []any{map[string]any{"a": 1.0}}}
	c := Clone(m)
	c["l"].([]any)[0].(map[string]any)["a"] = 2.0
	require.Equal(t, 1.0, m["l"].([]any)[0].(map[string]any)["a"])
	require.Nil(t, Clone(nil))
}

func TestCheckText(t *testing.T) {
	for _, m := range []map[string]any{nil, {"k": "v"}, {"k": "\ufffd <&>", "\\ufffd": `\u0000`}, {"n": []any{1.0, map[string]any{"x": true}}}} {
		require.NoError(t, CheckText(m), "%q", m)
	}
	for _, m := range []map[string]any{{"k": "a\x00b"}, {"a\x00": 1}, {"k": "\xff"}, {"\xc3": "x"}, {"n": []any{"ok", map[string]any{"deep": "\x00"}}}} {
		require.Error(t, CheckText(m), "%q", m)
	}
}

package journal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	j := &Journal{Put: map[int64]string{2: `{"id": 2}`}, Del: []int64{3}, HighWater: 3}
	data, err := Encode(j)
	require.NoError(t, err)
	got, err := Decode(data)
	require.NoError(t, err)
	require.Equal(t, j, got)
}

func TestFormatIsStable(t *testing.T) {
	// A journal written by an earlier version.
	got, err := Decode([]byte(`{"put":{"1":"{}"},"del":null,"highWater":0}`))
	require.NoError(t, err)
	require.Equal(t, map[int64]string{1: "{}"}, got.Put)
}

func TestDecodeRefusesGarbage(t *testing.T) {
	for _, in := range []string{``, `"not json at all"`, `{"put":{"x":"{}"}}`, `{"put":{"0":"{}"}}`, `{"del":[-1]}`, `[]`} {
		_, err := Decode([]byte(in))
		require.Error(t, err, in)
	}
}

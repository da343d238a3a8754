package jsontext

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// marshal is what encoding/json writes for v.
func marshal(t *testing.T, v any, escapeHTML bool) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	require.NoError(t, enc.Encode(v))
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func TestAppendStringIsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `"quoted" \back\`, "<a href='x'>&amp;</a>", "tab\tnl\ncr\r\x00\x01\x1f\x7f",
		"ü é 日本", "\u2028\u2029", "bad \xff\xfe utf8 \xc3", "emoji 😀", "\xed\xa0\x80 surrogate"} {
		for _, html := range []bool{true, false} {
			assert.Equal(t, marshal(t, s, html), string(AppendString(nil, s, html)), "%q html=%v", s, html)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("<&>\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{true, false} {
			if got, want := string(AppendString(nil, s, html)), marshal(t, s, html); got != want {
				t.Fatalf("%q: %s, encoding/json %s", s, got, want)
			}
		}
	})
}

func TestAppendTimeIsEncodingJSON(t *testing.T) {
	for _, tm := range []time.Time{time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 4, 10, 0, 0, 123456789, time.FixedZone("", 3600)),
		time.Date(2026, 12, 4, 10, 0, 0, 1000, time.FixedZone("", -5*3600-30*60)), {}} {
		require.True(t, TimeOK(tm))
		assert.Equal(t, marshal(t, tm, false), string(AppendTime(nil, tm)))
	}
	for _, tm := range []time.Time{time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 25*3600)), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", -24*3600))} {
		assert.False(t, TimeOK(tm), "%v", tm)
		_, err := json.Marshal(tm)
		assert.Error(t, err, "encoding/json refuses %v too", tm)
	}
	ok := time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("", 24*3600-60))
	require.True(t, TimeOK(ok))
	assert.Equal(t, marshal(t, ok, false), string(AppendTime(nil, ok)))
}

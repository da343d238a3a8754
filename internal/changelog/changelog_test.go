package changelog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	var buf []byte
	buf = AppendPut(buf, 7, Stamp{Ino: 9, Size: 12, Mtime: 13}, []byte(`{"id":7}`))
	buf = AppendDelete(buf, 8)
	buf = AppendMtime(buf, 99)
	buf = AppendIntent(buf, 98, []int64{4, 5})
	var got []Record
	for line := range strings.Lines(string(Whole(buf))) {
		r, ok := Parse(strings.TrimSuffix(line, "\n"))
		require.True(t, ok, line)
		got = append(got, r)
	}
	require.Equal(t, []Record{
		{Kind: Put, ID: 7, Stamp: Stamp{Ino: 9, Size: 12, Mtime: 13}, Content: []byte(`{"id":7}`)},
		{Kind: Delete, ID: 8},
		{Kind: Mtime, Mtime: 99},
		{Kind: Intent, Mtime: 98, IDs: []int64{4, 5}},
	}, got)
}

// TestEarlierVersionsLines: the lines of the versions that kept a redo log
// still parse, their extra fields ignored.
func TestEarlierVersionsLines(t *testing.T) {
	want := Record{Kind: Put, ID: 7, Stamp: Stamp{Ino: 9, Size: 12, Mtime: 13}, Content: []byte(`{"id":7}`)}
	for _, line := range []string{`P 7 9 12 13 {"id":7}`, `P 7 9 12 13 - {"id":7}`, `P 7 9 12 13 5.6.0123456789abcdef0123456789abcdef {"id":7}`} {
		r, ok := Parse(line)
		require.True(t, ok, line)
		require.Equal(t, want, r, line)
	}
	for _, line := range []string{"D 8 3", "D 8 3 -", "D 8"} {
		r, ok := Parse(line)
		require.True(t, ok, line)
		require.Equal(t, Record{Kind: Delete, ID: 8}, r, line)
	}
	for _, line := range []string{"X 8", "C d0d614c2-746e", "C - 1f.2a"} {
		r, ok := Parse(line)
		require.True(t, ok, line)
		require.Equal(t, Older, r.Kind, line)
	}
}

func TestTornLines(t *testing.T) {
	full := AppendPut(nil, 3, Stamp{1, 2, 3}, []byte(`{"id":3}`))
	require.Empty(t, Whole(full[:len(full)-1]), "a line without its newline is not read yet")
	// A Put cut inside its stamp or its content still names the task to
	// reload.
	for _, torn := range []string{"P 3 1 2", "P 3 1 2 3 x", "P 3 1 2 3 - "} {
		r, ok := Parse(torn)
		require.True(t, ok, torn)
		require.Equal(t, Record{Kind: Put, ID: 3}, r, torn)
	}
	for _, bad := range []string{"", "P", "P x", "P -1 1 2 3 {}", "D", "D 0", "D x", "M x", "Q 1", "garbage", "I", "I 5", "I x 1", "I 5 0", "I 5 1 y", "C", "X"} {
		_, ok := Parse(bad)
		require.False(t, ok, bad)
	}
}

// FuzzParse: any line, torn anywhere, parses without panicking; a record
// that parses with content re-encodes to the same line, and cutting a
// valid log anywhere leaves only whole lines to read.
func FuzzParse(f *testing.F) {
	f.Add(string(AppendPut(nil, 1, Stamp{2, 3, 4}, []byte(`{"id":1}`))), 10)
	f.Add("D 5\nM 77\n", 3)
	f.Add("P 1 2 3 4 {}\nP 9", 14)
	f.Add("I 77 1 2\nP 1 2 3 4 {}\n", 9)
	f.Add("C b\nI 77 1\nP 1 2 3 4 - {}\nM 78\nC c\n", 30)
	f.Add("P 1 2 3 4 {}\nM 5\nI 5 1\nX 1\nD 1 1\nM 6\n", 40)
	f.Fuzz(func(t *testing.T, log string, cut int) {
		if cut < 0 || cut > len(log) {
			cut = len(log)
		}
		whole := Whole([]byte(log[:cut]))
		require.True(t, len(whole) == 0 || whole[len(whole)-1] == '\n')
		for line := range strings.Lines(string(whole)) {
			line = strings.TrimSuffix(line, "\n")
			r, ok := Parse(line)
			if !ok {
				continue
			}
			switch r.Kind {
			case Put:
				require.Positive(t, r.ID)
				if r.Content != nil && !strings.Contains(string(r.Content), "\n") {
					again := AppendPut(nil, r.ID, r.Stamp, r.Content)
					r2, ok := Parse(string(bytes.TrimSuffix(again, []byte("\n"))))
					require.True(t, ok)
					require.Equal(t, r, r2)
				}
			case Delete:
				require.Positive(t, r.ID)
			case Intent:
				require.NotEmpty(t, r.IDs)
				for _, id := range r.IDs {
					require.Positive(t, id)
				}
			}
		}
	})
}

package changelog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRoundTrip(t *testing.T) {
	var buf []byte
	buf = AppendPut(buf, 7, Stamp{Ino: 9, Size: 12, Mtime: 13}, NoFile, []byte(`{"id":7}`))
	buf = AppendPut(buf, 7, Stamp{Ino: 10, Size: 12, Mtime: 14}, VersionOf(Stamp{Ino: 9, Mtime: 5}, []byte(`{"id":7}`)), []byte(`{"id":7,"rev":2}`))
	buf = AppendDelete(buf, 8, 3, VersionOf(Stamp{Ino: 11, Mtime: 5}, []byte("x")))
	buf = AppendMtime(buf, 99)
	buf = AppendIntent(buf, 98, []int64{4, 5})
	buf = AppendCheckpoint(buf, "d0d614c2-746e", "")
	buf = AppendCheckpoint(buf, "", "")
	buf = AppendCheckpoint(buf, "b", "1f.2a")
	var got []Record
	for line := range strings.Lines(string(Whole(buf))) {
		r, ok := Parse(strings.TrimSuffix(line, "\n"))
		require.True(t, ok, line)
		got = append(got, r)
	}
	require.Equal(t, []Record{
		{Kind: Put, ID: 7, Stamp: Stamp{Ino: 9, Size: 12, Mtime: 13}, Prev: NoFile, Content: []byte(`{"id":7}`)},
		{Kind: Put, ID: 7, Stamp: Stamp{Ino: 10, Size: 12, Mtime: 14}, Prev: VersionOf(Stamp{Ino: 9, Mtime: 5}, []byte(`{"id":7}`)), Content: []byte(`{"id":7,"rev":2}`)},
		{Kind: Delete, ID: 8, Rev: 3, Prev: VersionOf(Stamp{Ino: 11, Mtime: 5}, []byte("x"))},
		{Kind: Mtime, Mtime: 99},
		{Kind: Intent, Mtime: 98, IDs: []int64{4, 5}},
		{Kind: Checkpoint, Boot: "d0d614c2-746e"},
		{Kind: Checkpoint},
		{Kind: Checkpoint, Boot: "b", Dir: "1f.2a"},
	}, got)
}

// TestOlderRecords: the lines of versions before prev was recorded still
// parse, saying nothing of the version they replaced.
func TestOlderRecords(t *testing.T) {
	r, ok := Parse(`P 7 9 12 13 {"id":7}`)
	require.True(t, ok)
	require.Equal(t, Record{Kind: Put, ID: 7, Stamp: Stamp{Ino: 9, Size: 12, Mtime: 13}, Content: []byte(`{"id":7}`)}, r)
	r, ok = Parse("D 8 3")
	require.True(t, ok)
	require.Equal(t, Record{Kind: Delete, ID: 8, Rev: 3}, r)
	r, ok = Parse("X 8")
	require.True(t, ok, "an announced deletion is read (and ignored by Redo)")
	require.Equal(t, Record{Kind: Deleting, ID: 8}, r)
	// A damaged prev makes the content unusable: the task is reloaded.
	r, ok = Parse(`P 7 9 12 13 9.1.zz {"id":7}`)
	require.True(t, ok)
	require.Nil(t, r.Content)
}

func TestTornLines(t *testing.T) {
	full := AppendPut(nil, 3, Stamp{1, 2, 3}, NoFile, []byte(`{"id":3}`))
	require.Empty(t, Whole(full[:len(full)-1]), "a line without its newline is not read yet")
	// A Put cut inside its stamp still names the task to reload.
	r, ok := Parse("P 3 1 2")
	require.True(t, ok)
	require.Equal(t, Record{Kind: Put, ID: 3}, r)
	for _, bad := range []string{"", "P", "P x", "P -1 1 2 3 {}", "D", "D 0", "D 1 x", "D 1 -1", "D 1 2 3", "D 1 2 3.4.abc", "X", "X 0", "X -1", "X x", "M x", "Q 1", "garbage", "I", "I 5", "I x 1", "I 5 0", "I 5 1 y", "C", "C ", "C a b c", "C a "} {
		_, ok := Parse(bad)
		require.False(t, ok, bad)
	}
}

// FuzzParse: any line, torn anywhere, parses without panicking; a record
// that parses with content re-encodes to the same line, and cutting a
// valid log anywhere leaves only whole lines to read.
func FuzzParse(f *testing.F) {
	f.Add(string(AppendPut(nil, 1, Stamp{2, 3, 4}, NoFile, []byte(`{"id":1}`))), 10)
	f.Add(string(AppendPut(nil, 1, Stamp{2, 3, 4}, VersionOf(Stamp{Ino: 2, Mtime: 5}, []byte("x")), []byte(`{"id":1}`))), 50)
	f.Add("D 5\nM 77\n", 3)
	f.Add("P 1 2 3 4 {}\nP 9", 14)
	f.Add("I 77 1 2\nP 1 2 3 4 {}\n", 9)
	f.Add("C b\nI 77 1\nP 1 2 3 4 {}\nM 78\nC c\n", 30)
	f.Add("P 1 2 3 4 {}\nM 5\nI 5 1\nX 1\nD 1 1\nM 6\n", 40)
	f.Fuzz(func(t *testing.T, log string, cut int) {
		if cut < 0 || cut > len(log) {
			cut = len(log)
		}
		whole := Whole([]byte(log[:cut]))
		for id, h := range Redo(whole) {
			require.Positive(t, id)
			for i, c := range h {
				kinds := 0
				for _, is := range []bool{c.Deleted, c.Content != nil} {
					if is {
						kinds++
					}
				}
				require.Equal(t, 1, kinds, "a deletion or a put: %+v", c)
				require.True(t, c.End > 0 && c.End <= len(whole) && whole[c.End-1] == '\n')
				require.True(t, i == 0 || c.End > h[i-1].End, "in log order")
			}
		}
		if off, r, ok := lastIn(t, whole); ok {
			require.Equal(t, Checkpoint, r.Kind)
			require.True(t, off == 0 || whole[off-1] == '\n')
		}
		// Read backwards in windows of any size, the log's last
		// checkpoint is the one a reading of all of it finds.
		wantOff, wantRec, wantOK := wholeLastCheckpoint([]byte(log[:cut]))
		for _, chunk := range []int64{1, 2, 3, 7, 64, 1 << 20} {
			off, r, ok, err := lastCheckpoint(strings.NewReader(log[:cut]), int64(cut), chunk)
			require.NoError(t, err)
			require.Equal(t, wantOK, ok, "chunk %d", chunk)
			require.Equal(t, wantOff, off, "chunk %d", chunk)
			require.Equal(t, wantRec, r, "chunk %d", chunk)
		}
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
				if r.Content != nil && r.Prev != "" && !strings.Contains(string(r.Content), "\n") {
					again := AppendPut(nil, r.ID, r.Stamp, r.Prev, r.Content)
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

// TestRedo: whole records count, the later winning; a record without its
// M line, or with a damaged line, never does.
func TestRedo(t *testing.T) {
	var log []byte
	log = AppendCheckpoint(log, "boot", "")
	log = AppendIntent(log, 1, []int64{1, 2})
	log = AppendMtime(AppendPut(AppendPut(log, 1, Stamp{1, 1, 1}, NoFile, []byte(`{"id":1,"rev":1}`)), 2, Stamp{2, 2, 2}, NoFile, []byte(`{"id":2}`)), 2)
	first := len(log)
	log = AppendIntent(log, 2, []int64{1})
	log = AppendMtime(AppendPut(log, 1, Stamp{3, 3, 3}, VersionOf(Stamp{Ino: 1, Mtime: 5}, []byte("v1")), []byte(`{"id":1,"rev":2}`)), 3)
	second := len(log)
	log = AppendIntent(log, 3, []int64{2})
	log = AppendDelete(log, 2, 1, VersionOf(Stamp{Ino: 2, Mtime: 5}, []byte("v"))) // torn: no M
	log = AppendIntent(log, 3, []int64{3})
	log = append(log, "P 3 1 2\n"...) // damaged content
	log = AppendMtime(log, 4)
	log = AppendIntent(log, 4, []int64{4})
	log = AppendPut(log, 4, Stamp{4, 4, 4}, NoFile, []byte(`{"id":4}`)) // the tail, torn
	require.Equal(t, map[int64][]Change{
		1: {{Content: []byte(`{"id":1,"rev":1}`), Stamp: Stamp{1, 1, 1}, Prev: NoFile, End: first}, {Content: []byte(`{"id":1,"rev":2}`), Stamp: Stamp{3, 3, 3}, Prev: VersionOf(Stamp{Ino: 1, Mtime: 5}, []byte("v1")), End: second}},
		2: {{Content: []byte(`{"id":2}`), Stamp: Stamp{2, 2, 2}, Prev: NoFile, End: first}},
	}, Redo(log))

	off, r, ok := lastIn(t, log)
	require.True(t, ok)
	require.Zero(t, off)
	require.Equal(t, "boot", r.Boot)
	log = AppendCheckpoint(log, "later", "")
	off, r, ok = lastIn(t, append(log, "C torn"...))
	require.True(t, ok)
	require.Equal(t, "later", r.Boot)
	require.Equal(t, "C later\n", string(log[off:]))
	_, _, ok = lastIn(t, []byte("P 1 2 3 4 {\"x\":\"C y\"}\nM 5\n"))
	require.False(t, ok, "a C inside a line is not a checkpoint")
}

// TestLastCheckpointFarBack: a checkpoint many windows back, and a log with
// none, are read a window at a time; a long line across windows is read
// whole.
func TestLastCheckpointFarBack(t *testing.T) {
	log := AppendCheckpoint(nil, "first", "dir")
	at := int64(len(log))
	log = AppendCheckpoint(log, "second", "")
	for i := range 5000 {
		log = AppendMtime(AppendPut(AppendIntent(log, 1, []int64{int64(i + 1)}), int64(i+1), Stamp{1, 2, 3}, NoFile, []byte(`{"subject":"C C C"}`)), 2)
	}
	for _, chunk := range []int64{100, 4096, 1 << 20} {
		off, r, ok, err := lastCheckpoint(bytes.NewReader(log), int64(len(log)), chunk)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, at, off)
		require.Equal(t, "second", r.Boot)
	}
	long := append([]byte("C "+strings.Repeat("b", 3000)+" dir\n"), log[at+int64(len("C second\n")):]...)
	off, r, ok, err := lastCheckpoint(bytes.NewReader(long), int64(len(long)), 100)
	require.NoError(t, err)
	require.True(t, ok, "a checkpoint's line longer than a window")
	require.Zero(t, off)
	require.Equal(t, "dir", r.Dir)
	none := log[at+int64(len("C second\n")):]
	_, _, ok, err = lastCheckpoint(bytes.NewReader(none), int64(len(none)), 100)
	require.NoError(t, err)
	require.False(t, ok)
}

// lastIn is LastCheckpoint of a log in memory.
func lastIn(t *testing.T, log []byte) (int64, Record, bool) {
	t.Helper()
	off, r, ok, err := LastCheckpoint(bytes.NewReader(log), int64(len(log)))
	require.NoError(t, err)
	return off, r, ok
}

// wholeLastCheckpoint is the last checkpoint found by reading the whole
// log at once, the way LastCheckpoint did before it read in windows: the
// reference its answers are checked against.
func wholeLastCheckpoint(log []byte) (int64, Record, bool) {
	log = Whole(log)
	for end := len(log); end > 0; {
		i := bytes.LastIndex(log[:end], []byte("C "))
		if i < 0 {
			return 0, Record{}, false
		}
		end = i
		if i > 0 && log[i-1] != '\n' {
			continue // inside a line
		}
		nl := bytes.IndexByte(log[i:], '\n')
		if r, ok := Parse(string(log[i : i+nl])); ok && r.Kind == Checkpoint {
			return int64(i), r, true
		}
	}
	return 0, Record{}, false
}

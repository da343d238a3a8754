package taskgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// plainStrings need no escape in JSON; awkwardStrings do, or are not
// valid UTF-8. decodeFast (onlyKnownKeys) sends a file with an escape in a
// top-level string to decodeSlow, and so does decodeWritten; in labels,
// notes and history both take them.
var (
	plainStrings   = []string{"", "x", "Setup project", "héllo wörld", "日本語", "emoji 🎉", "<html> & </html>", "~!@#$%^&*()_+{}|:?><", "a/b 'q'", "\x7f"}
	awkwardStrings = []string{`quote " and \ backslash`, "tab\tnew\nline\r", "\x00\x1f", "\b\f", "line\u2028sep\u2029", "bad \xff utf8", "\ufffd"}
)

// randomTask builds task id with a random choice of fields set; top-level
// strings are plain when plain is set. Metadata is set when metadata is.
func randomTask(r *rand.Rand, id ID, plain, metadata bool) Task {
	all := append(slices.Clone(plainStrings), awkwardStrings...)
	top := all
	if plain {
		top = plainStrings
	}
	pick := func(list []string) string { return list[r.IntN(len(list))] }
	maybe := func() bool { return r.IntN(2) == 0 }
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", 3600), time.FixedZone("x", -(5*3600 + 1800))}
	when := func() time.Time {
		if r.IntN(4) == 0 {
			return time.Time{}
		}
		ns := []int{0, 123_000_000, r.IntN(1e9)}[r.IntN(3)]
		return time.Date(1990+r.IntN(80), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), ns,
			zones[r.IntN(len(zones))])
	}
	t := Task{ID: id, Subject: pick(top), Description: pick(top), Owner: pick(top),
		Status:    []Status{Pending, InProgress, Completed, Failed, Cancelled}[r.IntN(5)],
		CreatedAt: when(), UpdatedAt: when(), ClaimedAt: when(), LeaseExpiresAt: when(), NotBefore: when(), Due: when()}
	if maybe() {
		t.Key, t.Reason, t.Result, t.PrevOwner = pick(top), pick(top), pick(top), pick(top)
	}
	if maybe() {
		t.Parent, t.Rev = ID(1+r.IntN(1000)), r.Int64N(1<<62)
	}
	t.Priority = PriorityLevel(r.IntN(5))
	for range r.IntN(3) * r.IntN(20) { // sometimes over addIDs' 32, with repeats
		t.BlockedBy = append(t.BlockedBy, ID(1+r.IntN(40)))
	}
	for range r.IntN(4) {
		t.Labels = append(t.Labels, pick(all))
	}
	if maybe() {
		t.MaxAttempts, t.Attempts = r.IntN(5), r.IntN(5)
		t.Backoff = []time.Duration{0, 90 * time.Second, 1500 * time.Millisecond, 2 * time.Hour}[r.IntN(4)]
	}
	if metadata && maybe() {
		t.Metadata = map[string]any{"k": pick(all), "n": 1.5, "b": true, "z": nil,
			"list": []any{1.0, "x"}, "obj": map[string]any{"a": pick(all)}}
	}
	for range r.IntN(4) {
		t.Notes = append(t.Notes, Note{At: when(), Author: pick(all), Text: pick(all)})
	}
	events := []HistoryEvent{HistoryClaimed, HistoryLapsed, HistoryCompleted, HistoryEdited, HistoryEarlier}
	for range r.IntN(5) {
		t.History = append(t.History, Transition{At: when(), Event: events[r.IntN(len(events))], By: pick(all), Detail: pick(all), Count: r.IntN(3)})
	}
	return t
}

// TestDecodeWrittenCoversEncoded: what encodeTask writes takes the fast
// path, with every field, and decodes as decodeFast decodes it; so does the
// compacted form a change-log record holds, but for metadata.
func TestDecodeWrittenCoversEncoded(t *testing.T) {
	require.ElementsMatch(t, slices.Collect(maps.Keys(knownFields)), writtenOrder[:])
	r := rand.New(rand.NewPCG(5, 8))
	notes, history := 0, 0
	for i := range 5000 {
		task := randomTask(r, ID(1+i), true, true)
		data, err := encodeTask(&task)
		require.NoError(t, err)
		got := decodeWritten(task.ID, data)
		require.NotNil(t, got, "%s", data)
		require.Equal(t, decodeFast(task.ID, data), got, "%s", data)
		if len(got.Notes) > 0 {
			notes++
			require.Equal(t, len(got.Notes), cap(got.Notes), "sized at once")
		}
		if len(got.History) > 0 {
			history++
			require.Equal(t, len(got.History), cap(got.History), "sized at once")
		}
		require.Nil(t, decodeWritten(task.ID+1, data), "another task's file")
		record := compact(t, data)
		got = decodeWritten(task.ID, record)
		if task.Metadata == nil {
			require.NotNil(t, got, "%s", record)
		}
		if got != nil {
			require.Equal(t, decodeFast(task.ID, record), got, "%s", record)
		}
	}
	require.Greater(t, notes, 1000)
	require.Greater(t, history, 1000)
}

// TestDecodeWrittenRefuses: what decodeFast refuses, or what the fast
// path does not know, goes on to decodeFast.
func TestDecodeWrittenRefuses(t *testing.T) {
	const file = "{\n  \"id\": 1,\n  \"subject\": %s,\n  \"status\": %s,\n  \"blockedBy\": %s,\n  \"rev\": %s\n}\n"
	for _, c := range []struct{ subject, status, blocked, rev string }{
		{`"a\nb"`, `"pending"`, `[]`, `1`},         // an escape at the top level
		{`"x"`, `"done"`, `[]`, `1`},               // an unknown status
		{`"x"`, `"pending"`, "[\n    0\n  ]", `1`}, // not an id
		{`"x"`, `"pending"`, `[]`, `-1`},           // a negative rev
		{`"x"`, `"pending"`, `[]`, `1.0`},          // not an integer
		{`"x"`, `"pending"`, `[]`, `01`},           // not JSON
		{`"x\u0000"`, `"pending"`, `[]`, `1`},
	} {
		data := []byte(fmt.Sprintf(file, c.subject, c.status, c.blocked, c.rev))
		require.Nil(t, decodeWritten(1, data), "%s", data)
	}
	ok := []byte("{\n  \"id\": 1,\n  \"subject\": \"x\",\n  \"status\": \"pending\",\n  \"blockedBy\": [],\n  \"rev\": 1\n}\n")
	require.Equal(t, decodeFast(1, ok), decodeWritten(1, ok))
	require.Nil(t, decodeWritten(2, ok))
	for i := range ok {
		require.Nil(t, decodeWritten(1, ok[:i]), "cut at %d", i)
	}

	// Every one-byte change of written files and records: decoded as
	// decodeFast does, or left to it.
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 10 {
		task := randomTask(r, ID(1+i), true, true)
		data, err := encodeTask(&task)
		require.NoError(t, err)
		if i%2 == 1 {
			data = compact(t, data)
		}
		for j := range data {
			changes := [][]byte{slices.Delete(slices.Clone(data), j, j+1)}
			for _, c := range []byte{0, '"', '\\', '0', '9', '-', ' ', '\n', ',', '}', ']', 'x', 0xff} {
				changes = append(changes, slices.Replace(slices.Clone(data), j, j+1, c), slices.Insert(slices.Clone(data), j, c))
			}
			for _, changed := range changes {
				if got := decodeWritten(task.ID, changed); got != nil {
					require.Equal(t, decodeFast(task.ID, changed), got, "%s", changed)
				}
			}
		}
	}
}

// FuzzDecodeWritten: decodeWritten never panics, and whatever it decodes,
// decodeFast decodes the same; a file as encodeTask writes it, it decodes.
func FuzzDecodeWritten(f *testing.F) {
	r := rand.New(rand.NewPCG(13, 21))
	for i := range 200 {
		task := randomTask(r, ID(1+i), i%2 == 0, true)
		if i%10 == 0 {
			task.Extra = &Extra{unknown: map[string]json.RawMessage{"x-extra": json.RawMessage(`{"k": [1, 2]}`)}}
		}
		data, err := encodeTask(&task)
		require.NoError(f, err)
		f.Add(data, int64(task.ID))
		f.Add(compact(f, data), int64(task.ID))
	}
	f.Fuzz(func(t *testing.T, data []byte, id int64) {
		got := decodeWritten(ID(id), data)
		want := decodeFast(ID(id), data)
		if got != nil {
			require.Equal(t, want, got, "%s", data)
			return
		}
		if want != nil {
			enc, err := encodeTask(want)
			require.False(t, err == nil && bytes.Equal(enc, data), "the fast path refused a file as written: %s", data)
			require.False(t, err == nil && want.Metadata == nil && bytes.Equal(compact(t, enc), data), "the fast path refused a record as written: %s", data)
		}
	})
}

// compact is a task file as a change-log record holds it.
func compact(t testing.TB, data []byte) []byte {
	var b bytes.Buffer
	require.NoError(t, json.Compact(&b, data))
	return b.Bytes()
}

// BenchmarkDecodeTask decodes a typical task file: claimed, released,
// claimed again.
func BenchmarkDecodeTask(b *testing.B) {
	at := time.Date(2026, 3, 4, 10, 11, 12, 345678901, time.UTC)
	task := Task{ID: 42, Subject: "Write the parser", Description: "Parse task files without reflection.",
		Status: InProgress, Owner: "agent-7", BlockedBy: []ID{3, 17}, Labels: []string{"backend", "perf"},
		CreatedAt: at, UpdatedAt: at.Add(time.Hour), Rev: 5, ClaimedAt: at.Add(time.Hour), LeaseExpiresAt: at.Add(2 * time.Hour),
		History: []Transition{
			{At: at.Add(time.Minute), Event: HistoryClaimed, By: "agent-3", Detail: "lease 5m0s"},
			{At: at.Add(30 * time.Minute), Event: HistoryReleased, By: "agent-3"},
			{At: at.Add(time.Hour), Event: HistoryClaimed, By: "agent-7", Detail: "lease 1h0m0s"},
		}}
	data, err := encodeTask(&task)
	require.NoError(b, err)
	for _, c := range []struct {
		name   string
		decode func(ID, []byte) *Task
	}{{"decodeWritten", decodeWritten}, {"decodeFast", decodeFast}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if c.decode(42, data) == nil {
					b.Fatal("not decoded")
				}
			}
		})
	}
}

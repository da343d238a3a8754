package pgstore_test

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/pgstore"
)

// FuzzDecodeFlat: wherever decodeFlat decodes, encoding/json decodes the
// same bytes without error to the same lists.
func FuzzDecodeFlat(f *testing.F) {
	for _, s := range []string{
		`[]`, `[{}]`, ` [ { "at" : "2026-12-05T09:00:00.123456+00:00" , "by": "a" } ] `,
		`[{"at": "2026-12-05T09:00:00Z", "by": "alice", "count": 3, "event": "claimed", "detail": "é"}]`,
		`[{"at": "2026-12-05T09:00:00Z", "text": "x", "author": "b"}, {"at": "2026-12-05T09:00:01Z"}]`,
		`[{"count": -0}]`, `[{"count": 01}]`, `[{"count": 1.5}]`, `[{"by": "a\"b"}]`, `[{"By": "a"}]`,
		`[{"by": "a", "by": "b"}]`, `[{"at": "2026-13-05T09:00:00Z"}]`, `[{"by": null}]`, `[] x`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var notes, wantNotes []taskgraph.Note
		if pgstore.DecodeFlat(data, &notes) {
			require.NoError(t, json.Unmarshal(data, &wantNotes), "%q", data)
			require.Equal(t, wantNotes, notes, "%q", data)
		}
		var history, wantHistory []taskgraph.Transition
		if pgstore.DecodeFlat(data, &history) {
			require.NoError(t, json.Unmarshal(data, &wantHistory), "%q", data)
			require.Equal(t, wantHistory, history, "%q", data)
		}
	})
}

// TestDecodeFlatFromPostgres: random notes and histories, written as this
// package writes them, printed back by PostgreSQL as a jsonb column is
// read, decode to what encoding/json gives, and those without an escape
// take the fast path.
func TestDecodeFlatFromPostgres(t *testing.T) {
	p := pool(t)
	rng := rand.New(rand.NewPCG(5, 8))
	texts := []string{"", "alice", "é ü 日本", "a \"quoted\" b", "back\\slash", "line\nbreak", "tab\t", "\u2028", "<b>&</b>", strings.Repeat("x", 300)}
	fast := 0
	for range 300 {
		var history []taskgraph.Transition
		var notes []taskgraph.Note
		for range 1 + rng.IntN(4) {
			at := time.Date(2026, 12, 5, rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1_000_000)*1000, time.FixedZone("", 3600*(rng.IntN(5)-2)))
			history = append(history, taskgraph.Transition{At: at, Event: taskgraph.HistoryEvent(texts[rng.IntN(4)]), By: texts[rng.IntN(len(texts))],
				Detail: texts[rng.IntN(len(texts))], Count: rng.IntN(3) * rng.IntN(1000)})
			notes = append(notes, taskgraph.Note{At: at, Author: texts[rng.IntN(len(texts))], Text: texts[rng.IntN(len(texts))]})
		}
		for _, fast1 := range []bool{fastAsJSON(t, p, history), fastAsJSON(t, p, notes)} {
			if fast1 {
				fast++
			}
		}
	}
	// A list takes the fast path unless one of its texts has an escape
	// (four of the ten texts do): about a tenth of them.
	require.Greater(t, fast, 30, "the fast path is taken for lists without escapes")
	t.Logf("%d of 600 lists took the fast path", fast)
}

// fastAsJSON has PostgreSQL print list as it prints a jsonb column, and
// reports whether decodeFlat decoded that, failing if it decoded it
// otherwise than encoding/json does.
func fastAsJSON[T any](t *testing.T, p *pgxpool.Pool, list []T) bool {
	t.Helper()
	data, err := json.Marshal(list)
	require.NoError(t, err)
	var printed string
	require.NoError(t, p.QueryRow(t.Context(), `SELECT $1::jsonb::text`, string(data)).Scan(&printed))
	var got, want []T
	if !pgstore.DecodeFlat([]byte(printed), &got) {
		return false
	}
	require.NoError(t, json.Unmarshal([]byte(printed), &want))
	require.Equal(t, want, got, printed)
	return true
}

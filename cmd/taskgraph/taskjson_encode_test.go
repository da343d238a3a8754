package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// encodedByJSON is what printJSONArray's encoding/json writes for j: its
// compact form (taskOut.MarshalJSON), indented by encoding/json.
func encodedByJSON(t *testing.T, j *taskOut) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	err := enc.Encode(j)
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), err
}

// randomTask is a task with every field the JSON form has, each at random
// set or not, with text that needs escaping.
func randomTask(r *rand.Rand) taskgraph.Task {
	texts := []string{"", "plain", "<b>&amp;</b>", "quote \" back \\ nl \n tab \t", "\x00\x01\b\f\x7f", "ü 日本 😀", "\u2028\u2029", "bad \xff utf8"}
	text := func() string { return texts[r.IntN(len(texts))] }
	at := func() time.Time {
		zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -(5*3600 + 1800))}
		return time.Date(2000+r.IntN(30), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), []int{0, 1000, 123456789}[r.IntN(3)], zones[r.IntN(3)])
	}
	maybe := func() bool { return r.IntN(2) == 0 }
	t := taskgraph.Task{ID: taskgraph.ID(1 + r.Int64N(1<<40)), Subject: text(), Description: text(), Owner: text(), Rev: r.Int64N(1000),
		Status:   []taskgraph.Status{taskgraph.Pending, taskgraph.InProgress, taskgraph.Completed, taskgraph.Failed}[r.IntN(4)],
		Priority: taskgraph.PriorityLevel(r.IntN(5)), Key: text(), Reason: text(), Result: text(), PrevOwner: text()}
	for range r.IntN(3) {
		t.BlockedBy = append(t.BlockedBy, taskgraph.ID(1+r.IntN(100)))
	}
	for range r.IntN(3) {
		t.Blocks = append(t.Blocks, taskgraph.ID(1+r.IntN(100)))
	}
	for range r.IntN(3) {
		t.Labels = append(t.Labels, text())
	}
	if maybe() {
		t.Metadata = map[string]any{"n": 1.5, "big": 1e21, "s": text(), "<k>": []any{true, nil, text(), map[string]any{"deep": text()}}}
	}
	for _, p := range []*time.Time{&t.CreatedAt, &t.UpdatedAt, &t.ClaimedAt, &t.LeaseExpiresAt} {
		if maybe() {
			*p = at()
		}
	}
	for range r.IntN(3) {
		t.Notes = append(t.Notes, taskgraph.Note{At: at(), Author: text(), Text: text()})
	}
	for range r.IntN(4) {
		t.History = append(t.History, taskgraph.Transition{At: at(), Event: taskgraph.HistoryEvent(text()), By: text(), Detail: text(), Count: r.IntN(3)})
	}
	if maybe() {
		t.Parent, t.NotBefore, t.Due, t.MaxAttempts, t.Attempts, t.Backoff = taskgraph.ID(1+r.IntN(100)), at(), at(), r.IntN(5), r.IntN(5), time.Duration(r.Int64N(1e12))
	}
	if maybe() {
		t.Extra = &taskgraph.Extra{MaxRuntime: time.Duration(r.Int64N(1e12)), ProgressWindow: time.Duration(r.Int64N(1e12)), NeedsApproval: maybe(),
			CreatedVia: text(), Check: text(), Links: []taskgraph.Link{{Ref: text(), At: at()}}, Acceptance: []string{text(), text()}}
	}
	return t
}

// TestAppendTaskJSONIsEncodingJSON: a task of a list, written indented by
// cliView, is what encoding/json writes of it (cliView compact, indented
// by encoding/json, as show prints it), byte for byte, for a thousand
// random tasks with every field and every kind of text, with and without
// a state.
func TestAppendTaskJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		j := toJSON(randomTask(r))
		if i%2 == 0 {
			j.State = taskgraph.StateReady
		}
		if i%7 == 0 {
			j.BlockedBy, j.Blocks = nil, nil // written [], as ever
		}
		want, err := encodedByJSON(t, &j)
		require.NoError(t, err)
		got, err := j.appendIndent(nil, "  ", "  ")
		require.NoError(t, err)
		if !assert.Equal(t, want, string(got), "task %d", i) {
			return
		}
	}
}

// TestAppendTaskJSONLeavesTheRestToEncodingJSON: where encoding/json would
// fail (a time it refuses, metadata it cannot marshal), cliView fails,
// and printJSONArray says what encoding/json says.
func TestAppendTaskJSONLeavesTheRestToEncodingJSON(t *testing.T) {
	late := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, task := range map[string]taskgraph.Task{
		"year 10000":    {ID: 1, CreatedAt: late},
		"note in 10000": {ID: 2, Notes: []taskgraph.Note{{At: late}}},
		"NaN metadata":  {ID: 3, Metadata: map[string]any{"x": math.NaN()}},
	} {
		t.Run(name, func(t *testing.T) {
			j := toJSON(task)
			_, err := j.appendIndent(nil, "  ", "  ")
			assert.Error(t, err)
			_, jerr := encodedByJSON(t, &j)
			var out bytes.Buffer
			err = (&env{stdout: &out}).printJSONArray(1, func(int) any { return &j })
			assert.Equal(t, fmt.Sprint(jerr), fmt.Sprint(err))
		})
	}
}

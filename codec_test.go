package taskgraph

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEncodeTaskAsJSONWrites: the task file encodeTask writes directly is
// byte for byte the one encoding/json and json.Indent write (jsonTaskFile),
// for plain and awkward values in every field. FuzzDecodeTask compares
// them on every task it decodes.
func TestEncodeTaskAsJSONWrites(t *testing.T) {
	at := time.Date(2026, 12, 5, 7, 0, 0, 123456789, time.UTC)
	awkward := []string{"", "plain", `quote " and \ backslash`, "tab\tnew\nline\r", "\x00\x1f\x7f", "<html> & </html>",
		"héllo wörld", "line\u2028sep\u2029", "bad \xff utf8", "emoji 🎉", "~!@#$%^&*()_+{}|:?><"}
	var tasks []Task
	for i, s := range awkward {
		tasks = append(tasks, Task{ID: ID(i + 1), Subject: s, Description: s, Status: Pending, Owner: s, BlockedBy: []ID{}})
	}
	full := Task{
		ID: 1<<53 - 1, Subject: "all", Description: "every field", Status: InProgress, BlockedBy: []ID{3, 1, 2}, Owner: "me",
		Key: "k", Parent: 7, Priority: P0, Labels: []string{"a", "b c", "é"}, Reason: "r\n", Result: "done",
		CreatedAt: at, UpdatedAt: at.Add(time.Second), Rev: 1<<63 - 1, Metadata: map[string]any{"z": []any{1.5, map[string]any{"y": nil}}, "a": "<b>", "n": json.Number("12")},
		ClaimedAt: at.In(time.FixedZone("x", 3600)), LeaseExpiresAt: at.Add(time.Minute), PrevOwner: "other",
		NotBefore: at, Due: at.Add(time.Hour), MaxAttempts: 3, Attempts: 2, Backoff: 90 * time.Second,
		Notes:   []Note{{At: at, Author: "a", Text: "note \"x\" <y>"}},
		History: []Transition{{At: at, Event: HistoryClaimed, By: "me", Detail: "lease 1m0s"}},
		Extra: &Extra{MaxRuntime: 2 * time.Hour, ProgressWindow: 30 * time.Minute,
			unknown: map[string]json.RawMessage{"x-extra": json.RawMessage(`{"k":[1,2]}`), "ünï": json.RawMessage(`"v"`)}},
	}
	tasks = append(tasks, full, Task{ID: 2, Subject: "nil blockers", Status: Completed, Priority: P4})
	for _, task := range tasks {
		want, werr := jsonTaskFile(&task)
		got, gerr := encodeTask(&task)
		require.Equal(t, werr, gerr)
		require.Equal(t, string(want), string(got))
	}
	bad := full
	bad.CreatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	_, werr := jsonTaskFile(&bad)
	_, gerr := encodeTask(&bad)
	require.Error(t, gerr)
	require.Equal(t, werr.Error(), gerr.Error())
	bad = full
	bad.Metadata = map[string]any{"x": math.NaN()}
	_, werr = jsonTaskFile(&bad)
	_, gerr = encodeTask(&bad)
	require.Error(t, gerr)
	require.Equal(t, werr.Error(), gerr.Error())
}

// jsonTaskFile is the task file written field by field through
// encoding/json and json.Indent: the reference encodeTask is held to.
func jsonTaskFile(t *Task) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString("{")
	first := true
	field := func(k string, v any) error {
		raw, ok := v.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = marshalNoEscape(v); err != nil {
				return fmt.Errorf("field %q: %w", k, err)
			}
		}
		if !first {
			b.WriteString(",")
		}
		first = false
		b.WriteString("\n  ")
		kb, _ := marshalNoEscape(k)
		b.Write(kb)
		b.WriteString(": ")
		return json.Indent(&b, raw, "  ", "  ")
	}
	blockedBy := t.BlockedBy
	if blockedBy == nil {
		blockedBy = []ID{}
	}
	fields := []struct {
		k    string
		v    any
		omit bool
	}{
		{"id", t.ID, false},
		{"subject", t.Subject, false},
		{"description", t.Description, false},
		{"status", t.Status, false},
		{"blockedBy", blockedBy, false},
		{"owner", t.Owner, false},
		{"key", t.Key, t.Key == ""},
		{"parent", t.Parent, t.Parent == 0},
		{"priority", t.Priority.Level(), t.Priority == DefaultPriority},
		{"labels", t.Labels, len(t.Labels) == 0},
		{"reason", t.Reason, t.Reason == ""},
		{"result", t.Result, t.Result == ""},
		{"createdAt", t.CreatedAt, t.CreatedAt.IsZero()},
		{"updatedAt", t.UpdatedAt, t.UpdatedAt.IsZero()},
		{"rev", t.Rev, t.Rev == 0},
		{"metadata", t.Metadata, len(t.Metadata) == 0},
		{"claimedAt", t.ClaimedAt, t.ClaimedAt.IsZero()},
		{"leaseExpiresAt", t.LeaseExpiresAt.Format(fixedWidthTime), t.LeaseExpiresAt.IsZero()},
		{"prevOwner", t.PrevOwner, t.PrevOwner == ""},
		{"notBefore", t.NotBefore, t.NotBefore.IsZero()},
		{"due", t.Due, t.Due.IsZero()},
		{"maxAttempts", t.MaxAttempts, t.MaxAttempts == 0},
		{"attempts", t.Attempts, t.Attempts == 0},
		{"backoff", t.Backoff.String(), t.Backoff == 0},
		{"maxRuntime", t.extra().MaxRuntime.String(), t.extra().MaxRuntime == 0},
		{"progressWindow", t.extra().ProgressWindow.String(), t.extra().ProgressWindow == 0},
		{"notes", t.Notes, len(t.Notes) == 0},
		{"history", t.History, len(t.History) == 0},
	}
	for _, f := range fields {
		if f.omit {
			continue
		}
		if err := field(f.k, f.v); err != nil {
			return nil, err
		}
	}
	for _, k := range slices.Sorted(maps.Keys(t.unknownFields())) {
		if err := field(k, t.unknownFields()[k]); err != nil {
			return nil, err
		}
	}
	b.WriteString("\n}\n")
	return b.Bytes(), nil
}

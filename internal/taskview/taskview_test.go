package taskview

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/taskgraph-dev/taskgraph"
)

// TestTimesEncodingJSONRefuses: a view fails on a time exactly where
// time.Time's MarshalJSON does (a year outside 0 to 9999, an offset of a
// day or more), though it tells most from the text it wrote (plainTime).
func TestTimesEncodingJSONRefuses(t *testing.T) {
	v := New(Format{}, "createdAt")
	for _, year := range []int{-1, 0, 1, 999, 2026, 9999, 10000, 123456} {
		for _, off := range []int{0, 3600, -3600, 24*3600 - 60, -(24*3600 - 60), 24*3600 - 1, 24 * 3600, -24 * 3600, 100 * 3600, 5*3600 + 1800} {
			at := time.Date(year, 3, 4, 5, 6, 7, 8, time.FixedZone("", off))
			_, want := at.MarshalJSON()
			_, got := v.Append(nil, &taskgraph.Task{CreatedAt: at}, nil)
			if (got == nil) != (want == nil) {
				t.Errorf("year %d, offset %ds: the view says %v, encoding/json %v", year, off, got, want)
			}
		}
	}
}

// TestIndentIsEncodingJSONs: AppendIndent is Append indented by
// encoding/json, at any prefix and indent, for a task with every kind of
// value: members, arrays, objects in arrays, metadata.
func TestIndentIsEncodingJSONs(t *testing.T) {
	at := time.Date(2026, 12, 7, 10, 11, 12, 13, time.UTC)
	task := taskgraph.Task{ID: 1, Subject: "s", Labels: []string{"a", "b"}, BlockedBy: []taskgraph.ID{2, 3},
		Metadata: map[string]any{"k": []any{1.5, map[string]any{"x": "<y>"}}}, CreatedAt: at,
		Notes:   []taskgraph.Note{{At: at, Author: "a", Text: "t"}, {At: at, Author: "b", Text: "u"}},
		History: []taskgraph.Transition{{At: at, Event: taskgraph.HistoryClaimed, By: "a", Count: 2}},
		Extra:   &taskgraph.Extra{Links: []taskgraph.Link{{Ref: "r", At: at}}, Acceptance: []string{}}}
	for _, f := range []Format{{}, {EscapeHTML: true}, {Seconds: true, AuthorFirst: true, LinkRefs: true}} {
		v := New(f, "id subject description? labels blockedBy blocks metadata createdAt notes history links acceptance")
		compact, err := v.Append(nil, &task, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(compact) {
			t.Fatalf("invalid JSON: %s", compact)
		}
		for _, ind := range [][2]string{{"", "  "}, {"  ", "  "}, {"\t", "\t"}} {
			var want bytes.Buffer
			if err := json.Indent(&want, compact, ind[0], ind[1]); err != nil {
				t.Fatal(err)
			}
			got, err := v.AppendIndent(nil, &task, nil, ind[0], ind[1])
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != want.String() {
				t.Errorf("prefix %q, indent %q:\n%s\nencoding/json:\n%s", ind[0], ind[1], got, want.Bytes())
			}
		}
	}
}

// TestNewRefusesAFieldItDoesNotList: a view names only listed fields.
func TestNewRefusesAFieldItDoesNotList(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New accepted a field the list does not have")
		}
	}()
	New(Format{}, "id subjcet")
}

package pgstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// A row written by hand is held to the bounds of taskgraph.Rules.Bounded
// by the schema's CHECK constraints (migration 012), at the same limits as
// the Go constants: the value at each bound is stored, the one past it is
// refused (check_violation) and the row keeps what it held. So no row
// makes a claim loop in RetryDelay (attempts near 2^31, no backoff) or
// pins its task with a name that every write copies again.
func TestRowBounds(t *testing.T) {
	p := pool(t)
	g := graphName(t)
	s := open(t, p, g)
	task, err := s.Create(ctx, taskgraph.NewTask{Subject: "hand-edited"})
	require.NoError(t, err)
	list := func(n int, elem func(i int) any) string {
		out := make([]any, n)
		for i := range out {
			out[i] = elem(i)
		}
		data, err := json.Marshal(out)
		require.NoError(t, err)
		return string(data)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	note := func(author, text string) func(int) any {
		return func(int) any { return taskgraph.Note{At: at, Author: author, Text: text} }
	}
	entry := func(by string, count int) func(int) any {
		return func(int) any {
			return taskgraph.Transition{At: at, Event: taskgraph.HistoryEarlier, By: by, Count: count}
		}
	}
	maxID := int64(taskgraph.MaxID)
	cases := []struct {
		set       string // SET clause, its value $3
		ok, wrong []any
	}{
		{"owner = $3", []any{strings.Repeat("o", taskgraph.MaxOwner)}, []any{strings.Repeat("o", taskgraph.MaxOwner+1), strings.Repeat("o", 1<<20)}},
		{"prev_owner = $3", []any{strings.Repeat("o", taskgraph.MaxOwner)}, []any{strings.Repeat("o", taskgraph.MaxOwner+1)}},
		{"key = $3", []any{strings.Repeat("k", taskgraph.MaxKey)}, []any{strings.Repeat("k", taskgraph.MaxKey+1)}},
		{"max_attempts = $3", []any{0, taskgraph.MaxAttemptsLimit}, []any{-1, taskgraph.MaxAttemptsLimit + 1, 1<<31 - 1}},
		{"attempts = $3", []any{0, taskgraph.MaxAttemptsLimit}, []any{-1, taskgraph.MaxAttemptsLimit + 1, 1<<31 - 2}},
		{"backoff_us = $3", []any{0, taskgraph.MaxBackoff.Microseconds()}, []any{-1, taskgraph.MaxBackoff.Microseconds() + 1}},
		{"parent = $3", []any{0, maxID}, []any{-1, maxID + 1}},
		{"blocked_by = $3", []any{[]int64{1, maxID}}, []any{[]int64{0}, []int64{maxID + 1}, []int64{2, -3}}},
		{"notes = $3::jsonb", []any{list(taskgraph.MaxNotes, note(strings.Repeat("a", taskgraph.MaxAuthor), strings.Repeat("t", taskgraph.MaxNoteText)))},
			[]any{list(taskgraph.MaxNotes+1, note("a", "t")), list(1, note(strings.Repeat("a", taskgraph.MaxAuthor+1), "t")), list(1, note("a", strings.Repeat("t", taskgraph.MaxNoteText+1)))}},
		{"history = $3::jsonb", []any{list(taskgraph.MaxHistory, entry(strings.Repeat("b", max(taskgraph.MaxOwner, taskgraph.MaxAuthor)), 7))},
			[]any{list(taskgraph.MaxHistory+1, entry("b", 1)), list(1, entry(strings.Repeat("b", max(taskgraph.MaxOwner, taskgraph.MaxAuthor)+1), 1)), list(1, entry("b", -1))}},
	}
	for _, c := range cases {
		update := func(v any) error {
			_, err := p.Exec(ctx, `UPDATE taskgraph_tasks SET `+c.set+` WHERE graph = $1 AND id = $2`, g, int64(task.ID), v)
			return err
		}
		for _, v := range c.ok {
			require.NoError(t, update(v), "%s: at the bound", c.set)
		}
		var before string
		require.NoError(t, p.QueryRow(ctx, `SELECT row_to_json(t)::text FROM taskgraph_tasks t WHERE graph = $1 AND id = $2`, g, int64(task.ID)).Scan(&before))
		for _, v := range c.wrong {
			err := update(v)
			var pe *pgconn.PgError
			require.True(t, errors.As(err, &pe), "%s = %.40v: stored past the bound (%v)", c.set, fmt.Sprint(v), err)
			assert.Equal(t, "23514", pe.Code, "%s: a check_violation: %v", c.set, err)
		}
		var after string
		require.NoError(t, p.QueryRow(ctx, `SELECT row_to_json(t)::text FROM taskgraph_tasks t WHERE graph = $1 AND id = $2`, g, int64(task.ID)).Scan(&after))
		assert.Equal(t, before, after, "%s: a refused update changes nothing", c.set)
	}
	got, err := s.Get(ctx, task.ID)
	require.NoError(t, err, "the row at every bound reads")
	assert.NoError(t, taskgraph.Rules.Bounded(&got), "and is within the bounds the codec reads")
}

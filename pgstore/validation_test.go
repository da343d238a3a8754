package pgstore_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// TestValidationBeforeSQL: text that is not valid UTF-8 or holds NUL is
// refused with ErrInvalid before any SQL is sent — the pool is closed, so
// any statement would fail otherwise. (PostgreSQL answered with a raw
// SQLSTATE 22021 that matched no sentinel, where the file store accepted
// the same subject.)
func TestValidationBeforeSQL(t *testing.T) {
	p := poolWith(t, nil)
	s := open(t, p, graphName(t))
	p.Close()
	for _, bad := range []string{"nul\x00", "\xff"} {
		for name, write := range map[string]func() error{
			"create": func() error { _, err := s.Create(ctx, taskgraph.NewTask{Subject: bad}); return err },
			"metadata": func() error {
				_, err := s.Create(ctx, taskgraph.NewTask{Subject: "x", Metadata: map[string]any{"k": bad}})
				return err
			},
			"update":     func() error { _, err := s.Update(ctx, 1, taskgraph.Patch{Description: &bad}); return err },
			"claim":      func() error { _, err := s.Claim(ctx, 1, bad); return err },
			"claim next": func() error { _, err := s.ClaimNext(ctx, bad); return err },
			"load":       func() error { return s.Load(ctx, []taskgraph.Task{{ID: 5, Subject: bad, Status: taskgraph.Pending}}) },
		} {
			err := write()
			require.ErrorIs(t, err, taskgraph.ErrInvalid, "%s %q", name, bad)
			assert.NotContains(t, err.Error(), "closed pool", "%s: no SQL was sent", name)
		}
	}
	_, err := s.Create(ctx, taskgraph.NewTask{Subject: "valid"})
	require.Error(t, err, "a valid write does reach the (closed) pool")
	assert.NotErrorIs(t, err, taskgraph.ErrInvalid)
}

package taskgraph

import (
	"context"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteFailures fails each write of single- and multi-file mutations in
// turn, as a full disk would, and checks that the error says so, that the
// directory holds the mutation entirely or not at all, and that the store
// that saw the failure goes on working with a correct view.
func TestWriteFailures(t *testing.T) {
	ctx := context.Background()
	bb := func(ts []Task, i int) []ID { return append([]ID{}, ts[i].BlockedBy...) }
	mutations := []struct {
		name      string
		do        func(s Store) error
		whole, no func(ts []Task) bool // the mutation entirely there, or not at all
	}{
		{"create", func(s Store) error {
			_, err := s.Create(ctx, NewTask{Subject: "new"})
			return err
		}, func(ts []Task) bool { return len(ts) == 4 }, func(ts []Task) bool { return len(ts) == 3 }},
		{"create with blocks", func(s Store) error {
			_, err := s.Create(ctx, NewTask{Subject: "new", Blocks: []ID{2, 3}})
			return err
		}, func(ts []Task) bool {
			return len(ts) == 4 && slices.Equal(bb(ts, 1), []ID{1, 4}) && slices.Equal(bb(ts, 2), []ID{2, 4})
		}, func(ts []Task) bool {
			return len(ts) == 3 && slices.Equal(bb(ts, 1), []ID{1}) && slices.Equal(bb(ts, 2), []ID{2})
		}},
		{"add blocks", func(s Store) error {
			_, err := s.Update(ctx, 1, Patch{AddBlocks: []ID{3}, Description: ptr("x")})
			return err
		}, func(ts []Task) bool { return ts[0].Description == "x" && slices.Equal(bb(ts, 2), []ID{2, 1}) },
			func(ts []Task) bool { return ts[0].Description == "" && slices.Equal(bb(ts, 2), []ID{2}) }},
		{"delete detach", func(s Store) error { return s.Delete(ctx, 2, Detach()) },
			func(ts []Task) bool { return len(ts) == 2 && len(ts[1].BlockedBy) == 0 },
			func(ts []Task) bool { return len(ts) == 3 && slices.Equal(bb(ts, 2), []ID{2}) }},
		{"claim", func(s Store) error {
			_, err := s.Claim(ctx, 1, "a")
			return err
		}, func(ts []Task) bool { return ts[0].Status == InProgress }, func(ts []Task) bool { return ts[0].Status == Pending }},
	}
	enospc := &wrapped{syscall.ENOSPC}
	for _, m := range mutations {
		for failAt := 1; ; failAt++ {
			dir := t.TempDir()
			setup, err := Open(dir, WithoutSync())
			require.NoError(t, err)
			for _, subj := range []string{"a", "b", "c"} {
				_, err := setup.Create(ctx, NewTask{Subject: subj})
				require.NoError(t, err)
			}
			_, err = setup.Update(ctx, 2, Patch{AddBlockedBy: []ID{1}})
			require.NoError(t, err)
			_, err = setup.Update(ctx, 3, Patch{AddBlockedBy: []ID{2}})
			require.NoError(t, err)
			setup.Close()

			s, err := Open(dir)
			require.NoError(t, err)
			writes := 0
			s.fault = func(name string) error {
				if writes++; writes == failAt {
					return enospc
				}
				return nil
			}
			err = m.do(s)
			if writes < failAt {
				require.NoError(t, err)
				require.True(t, m.whole(must(s.List(ctx))), m.name)
				s.Close()
				break // every write of this mutation has had its turn
			}
			require.Error(t, err, "%s, write %d failing", m.name, failAt)
			assert.ErrorIs(t, err, syscall.ENOSPC, "%s: the cause is kept", m.name)
			s.fault = nil

			fresh, err := Open(dir)
			require.NoError(t, err)
			after, err := fresh.List(ctx)
			require.NoError(t, err, "%s, write %d: every file parses", m.name, failAt)
			assert.True(t, m.whole(after) != m.no(after), "%s, write %d failing: all or nothing, found %+v", m.name, failAt, after)
			mine, err := s.List(ctx)
			require.NoError(t, err)
			assert.Equal(t, after, mine, "%s, write %d: the failing store's view is the directory's", m.name, failAt)
			_, err = s.Create(ctx, NewTask{Subject: "still works"})
			require.NoError(t, err)
			s.Close()
			fresh.Close()
		}
	}
}

func ptr[T any](v T) *T { return &v }

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

type wrapped struct{ err error }

func (w *wrapped) Error() string { return "injected: " + w.err.Error() }
func (w *wrapped) Unwrap() error { return w.err }

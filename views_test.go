package taskgraph_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// What List, Board and Get return shares nothing the store keeps: a
// caller that writes into every slice and map of every task returned, and
// appends to them, changes nothing stored — in every store. (Board copies
// its tasks out of a few shared allocations; this is what keeps that
// safe.)
func TestReturnedTasksShareNothingStored(t *testing.T) {
	for name, s := range map[string]tg.Store{"MemStore": tg.NewMemStore(), "FileStore": openStore(t, t.TempDir())} {
		t.Run(name, func(t *testing.T) {
			for i := 1; i <= 6; i++ {
				nt := tg.NewTask{Subject: "t", Labels: []string{"a", "b"}, Metadata: map[string]any{"k": []any{"v"}}}
				if i > 1 {
					nt.BlockedBy = []tg.ID{tg.ID(i - 1)}
				}
				_, err := s.Create(ctx, nt)
				require.NoError(t, err)
			}
			// As JSON: what was returned before is no witness, if it
			// shares what a scribble changes.
			snapshot := func() string {
				l, err := s.List(ctx)
				require.NoError(t, err)
				b, err := s.Board(ctx)
				require.NoError(t, err)
				data, err := json.Marshal([]any{l, b})
				require.NoError(t, err)
				return string(data)
			}
			want := snapshot()

			scribble := func(ts []tg.Task) {
				for i := range ts {
					x := &ts[i]
					for j := range x.BlockedBy {
						x.BlockedBy[j] = 999
					}
					for j := range x.Blocks {
						x.Blocks[j] = 999
					}
					for j := range x.Labels {
						x.Labels[j] = "scribbled"
					}
					x.BlockedBy = append(x.BlockedBy, 998)
					x.Blocks = append(x.Blocks, 998)
					x.Labels = append(x.Labels, "more")
					x.Metadata["k"].([]any)[0] = "scribbled"
					x.Metadata["new"] = true
					x.Subject = "scribbled"
				}
			}
			got, err := s.List(ctx)
			require.NoError(t, err)
			scribble(got)
			b, err := s.Board(ctx)
			require.NoError(t, err)
			scribble(b.Ready)
			scribble(b.Blocked)
			one, err := s.Get(ctx, 3)
			require.NoError(t, err)
			scribble([]tg.Task{one})

			require.Equal(t, want, snapshot())
		})
	}
}

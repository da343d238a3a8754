package taskgraph_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func TestWavesAndCriticalPath(t *testing.T) {
	task := func(id tg.ID, s tg.Status, by ...tg.ID) tg.Task {
		return tg.Task{ID: id, Subject: "t", Status: s, BlockedBy: by}
	}
	tasks := []tg.Task{
		task(1, tg.Completed),
		task(2, tg.InProgress, 1),
		task(3, tg.Pending, 1),
		task(4, tg.Pending, 2, 3),
		task(5, tg.Pending, 3),
		task(6, tg.Pending, 4),
		task(7, tg.Pending, 99), // waits on a missing task
		task(8, tg.Pending, 7),
	}
	waves, err := tg.Waves(tasks)
	require.NoError(t, err)
	require.Equal(t, [][]tg.ID{{2, 3}, {4, 5}, {6}}, waves)
	path, err := tg.CriticalPath(tasks)
	require.NoError(t, err)
	require.Equal(t, []tg.ID{2, 4, 6}, path)

	done := []tg.Task{task(1, tg.Completed)}
	waves, err = tg.Waves(done)
	require.NoError(t, err)
	require.Empty(t, waves)
	path, err = tg.CriticalPath(done)
	require.NoError(t, err)
	require.Empty(t, path)

	cyclic := []tg.Task{task(1, tg.Pending, 2), task(2, tg.Pending, 1)}
	_, err = tg.Waves(cyclic)
	require.ErrorIs(t, err, tg.ErrCycle)
	_, err = tg.CriticalPath(cyclic)
	require.ErrorIs(t, err, tg.ErrCycle)
}

// On random graphs: each task's wave is one more than its latest unfinished
// blocker's, and the critical path is a chain of edges as long as there are
// waves.
func TestWavesProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	statuses := []tg.Status{tg.Pending, tg.Pending, tg.InProgress, tg.Completed}
	for round := 0; round < 200; round++ {
		n := 1 + r.IntN(60)
		tasks := make([]tg.Task, n)
		for i := range tasks {
			id := tg.ID(i + 1)
			tasks[i] = tg.Task{ID: id, Status: statuses[r.IntN(len(statuses))]}
			for k := r.IntN(4); k > 0 && i > 0; k-- {
				tasks[i].BlockedBy = append(tasks[i].BlockedBy, tg.ID(1+r.IntN(i))) // lower ids only: acyclic
			}
		}
		byID := map[tg.ID]tg.Task{}
		for _, tk := range tasks {
			byID[tk.ID] = tk
		}
		// The unfinished tasks tk waits on: its blockers that are not
		// completed, and for one completed out of order (a random status
		// makes many), that one's own blockers that are not completed.
		waitsOn := func(tk tg.Task) []tg.ID {
			var out []tg.ID
			for _, b := range tk.BlockedBy {
				if byID[b].Status != tg.Completed {
					out = append(out, b)
					continue
				}
				for _, bb := range byID[b].BlockedBy {
					if byID[bb].Status != tg.Completed {
						out = append(out, bb)
					}
				}
			}
			return out
		}
		waves, err := tg.Waves(tasks)
		require.NoError(t, err)
		wave := map[tg.ID]int{}
		for k, w := range waves {
			require.NotEmpty(t, w)
			require.True(t, slices.IsSorted(w))
			for _, id := range w {
				wave[id] = k
			}
		}
		for _, tk := range tasks {
			if tk.Status == tg.Completed {
				require.NotContains(t, wave, tk.ID)
				continue
			}
			want := 0
			for _, b := range waitsOn(tk) {
				want = max(want, wave[b]+1)
			}
			require.Equal(t, want, wave[tk.ID], "task %d", tk.ID)
		}
		path, err := tg.CriticalPath(tasks)
		require.NoError(t, err)
		require.Len(t, path, len(waves))
		for i := 1; i < len(path); i++ {
			require.Contains(t, waitsOn(byID[path[i]]), path[i-1])
		}
	}
}

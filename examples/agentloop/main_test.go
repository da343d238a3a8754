package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAgentLoop(t *testing.T) {
	var out bytes.Buffer
	board, err := run(context.Background(), t.TempDir(), newScripted(), &out)
	require.NoError(t, err)
	ids := func(n int, f func(i int) int64) []int64 {
		var s []int64
		for i := range n {
			s = append(s, f(i))
		}
		return s
	}
	assert.Equal(t, []int64{2, 4}, ids(len(board.Ready), func(i int) int64 { return int64(board.Ready[i].ID) }))
	assert.Equal(t, []int64{3, 5, 6, 7}, ids(len(board.Blocked), func(i int) int64 { return int64(board.Blocked[i].ID) }))
	assert.Len(t, board.Completed, 1)
	transcript := out.String()
	assert.Contains(t, transcript, "[ ] #2: Write code (blocked by: [1])")
	assert.Contains(t, transcript, "Completed #1: Setup project\n    Unblocked: #2 Write code")
	assert.Contains(t, transcript, "[ ] #7: test (blocked by: [5, 6])")
	assert.Contains(t, transcript, "assistant> Done.")
}

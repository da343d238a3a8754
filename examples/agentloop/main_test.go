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
	// The model made a plan of 7 tasks and did 1 by hand; Work did the rest,
	// each after its blockers.
	assert.True(t, board.Finished())
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7}, ids(len(board.Completed), func(i int) int64 { return int64(board.Completed[i].ID) }))
	transcript := out.String()
	assert.Contains(t, transcript, "[ ] #2: Write code (blocked by: [1])")
	assert.Contains(t, transcript, "Completed #1: Setup project\n    Unblocked: #2 Write code")
	assert.Contains(t, transcript, "[ ] #7: test (blocked by: [5, 6])")
	assert.Contains(t, transcript, "assistant> Done.")
	assert.Regexp(t, `(?s)Do task #2: Write code.*Do task #3: Write tests`, transcript)
	assert.Regexp(t, `(?s)Do task #4: parse.*Do task #5: transform.*Do task #6: emit.*Do task #7: test`, transcript)
}

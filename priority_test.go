package taskgraph_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// Priority's zero value is the default, so NewTask{} means P2 and
// NewTask{Priority: P1} is written as it reads; outside Go a priority is
// its level, 0 to 4, as the files and the tools have always written it.
func TestPriorityZeroValueAndLevels(t *testing.T) {
	var zero tg.Priority
	assert.Equal(t, tg.DefaultPriority, zero)
	assert.Equal(t, "P2", zero.String())
	for level, p := range []tg.Priority{tg.P0, tg.P1, tg.P2, tg.P3, tg.P4} {
		assert.Equal(t, level, p.Level())
		assert.Equal(t, p, tg.PriorityLevel(level))
		assert.True(t, p.Valid())
		data, err := json.Marshal(p)
		require.NoError(t, err)
		assert.Equal(t, strconv.Itoa(level), string(data))
		var back tg.Priority
		require.NoError(t, json.Unmarshal(data, &back))
		assert.Equal(t, p, back)
	}
	assert.False(t, tg.PriorityLevel(5).Valid())
	assert.False(t, tg.PriorityLevel(-1).Valid())
	assert.True(t, tg.P0 < tg.P1 && tg.P3 < tg.P4, "more urgent compares lower")

	s := tg.NewMemStore()
	plain, err := s.Create(ctx, tg.NewTask{Subject: "plain"})
	require.NoError(t, err)
	assert.Equal(t, tg.P2, plain.Priority)
	urgent, err := s.Create(ctx, tg.NewTask{Subject: "urgent", Priority: tg.P1})
	require.NoError(t, err)
	assert.Equal(t, tg.P1, urgent.Priority)
	// A task file keeps the level: P1 is "priority": 1, the default absent.
	dir := t.TempDir()
	fs := openStore(t, dir)
	_, err = fs.Create(ctx, tg.NewTask{Subject: "urgent", Priority: tg.P1})
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "task_1.json"))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"priority": 1`)
}

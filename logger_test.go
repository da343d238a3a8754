package taskgraph_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/taskgraph-dev/taskgraph"
)

// records decodes the JSON lines a slog.JSONHandler wrote.
func records(t *testing.T, b *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		out = append(out, r)
	}
	return out
}

// WithLogger: a FileStore says through it what it did on its own — the
// directory it created, the durability protocol it chose and why — and
// logs nothing without it.
func TestWithLogger(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := filepath.Join(t.TempDir(), ".tasks")
	s, err := taskgraph.Open(dir, taskgraph.WithLogger(log))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	got := map[string]map[string]any{}
	for _, r := range records(t, &buf) {
		got[r["msg"].(string)] = r
	}
	if r := got["taskgraph: created the task directory"]; assert.NotNil(t, r, "%s", buf.String()) {
		assert.Equal(t, "INFO", r["level"])
		assert.Equal(t, dir, r["dir"])
	}
	if r := got["taskgraph: durability protocol chosen"]; assert.NotNil(t, r, "%s", buf.String()) {
		assert.Equal(t, "DEBUG", r["level"])
		assert.Equal(t, string(s.Durability().Protocol), r["protocol"])
		assert.NotEmpty(t, r["reason"])
	}
	buf.Reset()
	s, err = taskgraph.Open(dir, taskgraph.WithLogger(log))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.NotContains(t, buf.String(), "created the task directory", "only when it creates it")
}

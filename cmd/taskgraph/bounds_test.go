package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hostile task files, through the built binary: attempts near 2^63 with
// no backoff (fail once looped for ever holding the lock, and every other
// command timed out), a MiB owner, a MiB note author. Every command on
// the task answers within a second with an error naming the file and the
// field, the file is never rewritten, and the other tasks go on. A note
// by an author of 100,000 bytes (which once made a 200 KB task) is refused
// and changes nothing.
func TestHostileFilesAnswerAtOnce(t *testing.T) {
	mib := strings.Repeat("n", 1<<20)
	cases := map[string]struct{ fields, problem string }{
		"attempts near 2^63, no backoff": {`"owner": "x", "maxAttempts": 9223372036854775807, "attempts": 9223372036854775805`, `field "attempts" 9223372036854775805 is not between 0 and 1000`},
		"a MiB owner":                    {`"owner": "` + mib + `"`, `field "owner" is 1048576 bytes, over the 256-byte limit (MaxOwner)`},
		"a MiB author":                   {`"owner": "x", "notes": [{"at": "2026-01-01T00:00:00Z", "author": "` + mib + `", "text": "t"}]`, `field "notes[0].author" is 1048576 bytes`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := project(t)
			ok(t, dir, "add", "hostile")
			ok(t, dir, "add", "healthy")
			file := filepath.Join(dir, ".tasks", "task_1.json")
			content := `{"id": 1, "subject": "hostile", "status": "in_progress", "blockedBy": [], ` + c.fields + `}`
			require.NoError(t, os.WriteFile(file, []byte(content), 0o644))
			for _, args := range [][]string{
				{"fail", "1", "boom", "--owner", "x"}, {"fail", "1", "boom", "--force"}, {"done", "1", "--force"},
				{"note", "1", "still here", "--owner", "x"}, {"release", "1", "--force"}, {"claim", "1", "--owner", "y"},
			} {
				start := time.Now()
				r := tgWithin(t, dir, 5*time.Second, args...)
				assert.Less(t, time.Since(start), time.Second, "%v answers at once", args)
				assert.NotEqual(t, 0, r.code, "%v: %s", args, r.stdout)
				assert.Contains(t, r.stderr, "corrupt task file "+file, "%v", args)
				assert.Contains(t, r.stderr, c.problem, "%v", args)
			}
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			assert.Equal(t, content, string(data), "the file is never rewritten")
			assert.Contains(t, ok(t, dir, "claim", "2", "--owner", "z"), "Claimed #2", "the other tasks go on")
		})
	}

	dir := project(t)
	ok(t, dir, "add", "noted")
	file := filepath.Join(dir, ".tasks", "task_1.json")
	before, err := os.ReadFile(file)
	require.NoError(t, err)
	r := tg(t, dir, "note", "1", "a note", "--owner", strings.Repeat("a", 100_000))
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "author")
	assert.Contains(t, r.stderr, "is 100000 bytes, over the 256-byte limit (MaxAuthor)")
	after, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "nothing written")
}

// tgWithin is tg, but kills the command if it has not exited after d: a
// command that hangs fails the test rather than outliving it.
func tgWithin(t *testing.T, dir string, d time.Duration, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir, cmd.Env = dir, cleanEnv()
	r := collect(t, cmd)
	require.NoError(t, ctx.Err(), "%v did not exit within %v: killed", args, d)
	return r
}

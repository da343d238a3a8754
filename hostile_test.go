//go:build !windows

package taskgraph_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// within runs fn and fails the test if it has not returned after d: an
// operation that blocks (on a FIFO, say) is reported, never waited on.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v: it hangs", what, d)
	}
}

// taskFiles returns the bytes of every task_*.json of dir that is a
// regular file.
func taskFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	names, err := filepath.Glob(filepath.Join(dir, "task_*.json"))
	require.NoError(t, err)
	for _, n := range names {
		if fi, err := os.Lstat(n); err == nil && fi.Mode().IsRegular() {
			data, err := os.ReadFile(n)
			require.NoError(t, err)
			out[filepath.Base(n)] = string(data)
		}
	}
	return out
}

// checkProblem runs Check and returns the one problem it reports for name.
func checkProblem(t *testing.T, dir, name string) tg.Problem {
	t.Helper()
	var problems []tg.Problem
	within(t, 20*time.Second, "Check", func() {
		var err error
		problems, err = tg.Check(ctx, dir)
		require.NoError(t, err)
	})
	var found []tg.Problem
	for _, p := range problems {
		if filepath.Base(p.Path) == name {
			found = append(found, p)
		}
	}
	require.Len(t, found, 1, "Check reports %s once: %v", name, problems)
	return found[0]
}

// TestHostileEntries puts a FIFO, a directory, a symlink and a dangling
// symlink in the place of a task file and of each of the store's own
// files. No operation hangs, in any of two stores (two processes) at
// once; healthy tasks stay readable; a write that cannot be made safely
// is refused with ErrCorrupt naming the file and what to do; no task file
// changes; nothing is written through a symlink; and Check describes the
// case truly. (A FIFO used to block every operation forever, under the
// lock; the others failed every read, or Check misdescribed them.)
func TestHostileEntries(t *testing.T) {
	kinds := []struct {
		name, says string
		make       func(path string) error
	}{
		{"fifo", "a named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"directory", "a directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"symlink", "a symlink", func(p string) error { return os.Symlink("task_1.json", p) }},
		{"dangling symlink", "a symlink", func(p string) error { return os.Symlink("task_99.json", p) }},
	}
	roles := []struct {
		name string
		// writes is what the refusal of a write says (nil: writes work).
		writes []string
		check  []string // what Check says, beside the kind
	}{
		{"task_5.json", nil, []string{"fix the file or remove it"}},
		{".taskgraph.meta", []string{".taskgraph.meta", `{"highWater": N}`}, []string{"high-water mark", `{"highWater": N}`, "reads go on"}},
		{".taskgraph.journal", []string{".taskgraph.journal", "remove it"}, []string{"never replayed", "remove it", "reads go on"}},
		{".taskgraph.lock", []string{".taskgraph.lock", "remove it"}, []string{"remove it", "reads go on without the lock"}},
		{".taskgraph.log", []string{".taskgraph.log", "remove it"}, []string{"remove it", "reads go on"}},
	}
	for _, role := range roles {
		for _, kind := range kinds {
			t.Run(role.name+"/"+kind.name, func(t *testing.T) {
				dir := copyDir(t, "testdata/reference")
				healthy := taskFiles(t, dir)
				path := filepath.Join(dir, role.name)
				require.NoError(t, kind.make(path))
				mode := func() fs.FileMode {
					fi, err := os.Lstat(path)
					require.NoError(t, err)
					return fi.Mode().Type()
				}
				hostile := mode()
				a, b := openStore(t, dir), openStore(t, dir)
				octx, cancel := context.WithTimeout(ctx, 20*time.Second)
				defer cancel()
				for i, s := range []*tg.FileStore{a, b} {
					within(t, 20*time.Second, fmt.Sprintf("List of store %d", i), func() {
						all, err := s.List(octx)
						assert.Equal(t, []tg.ID{1, 2, 3, 4}, idsOf(all), "healthy tasks are read")
						if role.name == "task_5.json" {
							require.ErrorIs(t, err, tg.ErrCorrupt)
							assert.Contains(t, err.Error(), "task_5.json: not a regular file ("+kind.says+")")
						} else {
							require.NoError(t, err, "a bad %s does not stop reads", role.name)
						}
					})
					within(t, 20*time.Second, "Get", func() {
						got, err := s.Get(octx, 2)
						require.NoError(t, err)
						assert.Equal(t, "Write code", got.Subject)
					})
				}
				within(t, 20*time.Second, "Create", func() {
					n, err := a.Create(octx, tg.NewTask{Subject: "new"})
					if role.writes == nil {
						require.NoError(t, err)
						if role.name == "task_5.json" {
							assert.Equal(t, tg.ID(6), n.ID, "the id of the broken file is never allocated")
						}
						name := fmt.Sprintf("task_%d.json", n.ID)
						healthy[name] = taskFiles(t, dir)[name]
						return
					}
					require.ErrorIs(t, err, tg.ErrCorrupt)
					var ce *tg.CorruptError
					require.ErrorAs(t, err, &ce)
					assert.Equal(t, path, ce.Path)
					for _, s := range role.writes {
						assert.Contains(t, err.Error(), s)
					}
				})
				within(t, 20*time.Second, "Claim", func() {
					_, err := b.Claim(octx, 3, "x")
					if role.writes == nil {
						require.NoError(t, err)
						healthy["task_3.json"] = taskFiles(t, dir)["task_3.json"]
					} else {
						require.ErrorIs(t, err, tg.ErrCorrupt)
					}
				})
				p := checkProblem(t, dir, role.name)
				assert.Equal(t, tg.ProblemCorrupt, p.Kind)
				assert.Contains(t, p.Message, "not a regular file ("+kind.says+")")
				for _, s := range role.check {
					assert.Contains(t, p.Message, s)
				}
				assert.Equal(t, healthy, taskFiles(t, dir), "task files are untouched, byte for byte")
				assert.Equal(t, hostile, mode(), "the entry is left as it was")
				assert.NoFileExists(t, filepath.Join(dir, "task_99.json"), "nothing is created through a symlink")
			})
		}
	}
}

// TestBadSidecarContent: garbage, truncated and oversized content in the
// meta file and task files. Healthy tasks stay readable; writes that need
// the meta file are refused with what to do; Check says it.
func TestBadSidecarContent(t *testing.T) {
	huge := strings.Repeat(" ", 5<<20)
	for _, c := range []struct{ name, content, problem string }{
		{"garbage", "garbage", "invalid character"},
		{"truncated", `{"highWat`, "unexpected end of JSON input"},
		{"huge", huge, "over the 4194304-byte limit"},
		{"negative", `{"highWater": -3}`, "highWater is -3"},
	} {
		t.Run("meta "+c.name, func(t *testing.T) {
			dir := copyDir(t, "testdata/reference")
			writeFile(t, dir, ".taskgraph.meta", c.content)
			healthy := taskFiles(t, dir)
			s := openStore(t, dir)
			all, err := s.List(ctx)
			require.NoError(t, err, "reads of healthy tasks go on")
			assert.Len(t, all, 4)
			_, err = s.Create(ctx, tg.NewTask{Subject: "x"})
			require.ErrorIs(t, err, tg.ErrCorrupt)
			assert.Contains(t, err.Error(), c.problem)
			assert.Contains(t, err.Error(), `{"highWater": N}`)
			p := checkProblem(t, dir, ".taskgraph.meta")
			assert.Equal(t, tg.ProblemCorrupt, p.Kind)
			assert.Contains(t, p.Message, c.problem)
			assert.Contains(t, p.Message, `{"highWater": N}`)
			assert.Equal(t, healthy, taskFiles(t, dir))
		})
		t.Run("task file "+c.name, func(t *testing.T) {
			dir := copyDir(t, "testdata/reference")
			writeFile(t, dir, "task_2.json", c.content)
			s := openStore(t, dir)
			all, err := s.List(ctx)
			require.ErrorIs(t, err, tg.ErrCorrupt)
			assert.Equal(t, []tg.ID{1, 3, 4}, idsOf(all))
			p := checkProblem(t, dir, "task_2.json")
			assert.Equal(t, tg.ProblemCorrupt, p.Kind)
			assert.Contains(t, p.Message, "fix the file or remove it")
			data, err := os.ReadFile(filepath.Join(dir, "task_2.json"))
			require.NoError(t, err)
			assert.Equal(t, c.content, string(data))
		})
	}
}

// TestHostileJournal: a journal is replayed only if every entry is a
// healthy task file for its id that continues the file it replaces. A
// journal that is garbage, names another task, would overwrite a healthy
// task with unrelated content, or would delete a corrupt file, is refused
// as corrupt: no task file changes, reads go on, writes are refused until
// it is removed, and Check says so. (A journal whose entry was "not json
// at all" used to be replayed blindly over a healthy task_2.json.)
func TestHostileJournal(t *testing.T) {
	// A legitimate multi-file write, captured from a real store: task 2
	// updated (rev 0 -> 1) and task 5 created.
	src := copyDir(t, "testdata/reference")
	w := openStore(t, src)
	_, err := w.Update(ctx, 2, tg.Patch{Description: ptr("from the journal")})
	require.NoError(t, err)
	_, err = w.Create(ctx, tg.NewTask{Subject: "five"})
	require.NoError(t, err)
	legit := taskFiles(t, src)
	entry := func(id int, content string) string {
		b, _ := json.Marshal(map[string]any{"put": map[string]string{fmt.Sprint(id): content}, "del": []int{}, "highWater": 0})
		return string(b)
	}
	two := legit["task_2.json"]
	journal := func(put map[string]string, del []int, hw int64) string {
		b, _ := json.Marshal(map[string]any{"put": put, "del": del, "highWater": hw})
		return string(b)
	}
	good := journal(map[string]string{"2": two, "5": legit["task_5.json"]}, []int{}, 0)
	// Cut in half, but not just after a backslash (inside an escape the
	// error is another): where half falls depends on the times' lengths.
	half := len(good) / 2
	for good[half-1] == '\\' {
		half--
	}

	cases := []struct {
		name, content, why string
		setup              func(dir string)
	}{
		{"entry not json at all", entry(2, "not json at all"), "entry for task 2: invalid JSON", nil},
		{"garbage", "garbage, not a journal", "cannot be replayed: invalid character", nil},
		{"truncated", good[:half], "unexpected end of JSON input", nil},
		{"mismatched id", entry(2, strings.Replace(two, `"id": 2`, `"id": 3`, 1)), `field "id" is 3 but the file name says 2`, nil},
		{"other content", entry(2, strings.Replace(strings.Replace(two, `"rev": 1`, `"rev": 5`, 1), "Write code", "hijacked", 1)),
			"entry for task 2 is rev 5, but task_2.json is at rev 0", nil},
		{"high water above MaxID", journal(map[string]string{"2": two}, []int{}, int64(tg.MaxID)+1), "highWater is 9007199254740992", nil},
		{"replaces a corrupt file", good, "would replace a file that taskgraph never rewrites: task_5.json is corrupt",
			func(dir string) { writeFile(t, dir, "task_5.json", `{"id": 5, "sub`) }},
		{"deletes a corrupt file", journal(map[string]string{"2": two}, []int{5}, 5), "deletion of task 5 would remove a file that taskgraph never deletes",
			func(dir string) { writeFile(t, dir, "task_5.json", `{"id": 5, "sub`) }},
		{"huge", "", "over the 268435456-byte limit", func(dir string) {
			require.NoError(t, os.Truncate(filepath.Join(dir, ".taskgraph.journal"), 300<<20)) // sparse
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := copyDir(t, "testdata/reference")
			jpath := filepath.Join(dir, ".taskgraph.journal")
			writeFile(t, dir, ".taskgraph.journal", c.content)
			if c.setup != nil {
				c.setup(dir)
			}
			before := taskFiles(t, dir)
			jfi, err := os.Stat(jpath)
			require.NoError(t, err)
			s := openStore(t, dir)
			within(t, 20*time.Second, "List", func() {
				all, err := s.List(ctx)
				if c.setup == nil {
					require.NoError(t, err, "reads go on")
				}
				assert.Equal(t, []tg.ID{1, 2, 3, 4}, idsOf(all))
				assert.Equal(t, "Write code", all[1].Subject)
			})
			_, err = s.Create(ctx, tg.NewTask{Subject: "refused"})
			require.ErrorIs(t, err, tg.ErrCorrupt)
			var ce *tg.CorruptError
			require.ErrorAs(t, err, &ce)
			assert.Equal(t, jpath, ce.Path)
			assert.Contains(t, err.Error(), c.why)
			assert.Contains(t, err.Error(), "remove it")
			p := checkProblem(t, dir, ".taskgraph.journal")
			assert.Equal(t, tg.ProblemCorrupt, p.Kind)
			assert.Contains(t, p.Message, c.why)
			assert.Contains(t, p.Message, "never replayed")
			assert.Equal(t, before, taskFiles(t, dir), "task files untouched, byte for byte")
			after, err := os.Stat(jpath)
			require.NoError(t, err)
			assert.Equal(t, jfi.Size(), after.Size(), "the journal is left as it is")

			require.NoError(t, os.Remove(jpath))
			if err := os.Remove(filepath.Join(dir, "task_5.json")); err != nil {
				require.ErrorIs(t, err, fs.ErrNotExist)
			}
			_, err = s.Create(ctx, tg.NewTask{Subject: "after the journal was removed"})
			require.NoError(t, err)
		})
	}

	t.Run("legitimate journal is replayed", func(t *testing.T) {
		dir := copyDir(t, "testdata/reference")
		writeFile(t, dir, ".taskgraph.journal", good)
		p := checkProblem(t, dir, ".taskgraph.journal")
		assert.Equal(t, tg.ProblemJournal, p.Kind)
		s := openStore(t, dir)
		all, err := s.List(ctx)
		require.NoError(t, err)
		assert.Equal(t, []tg.ID{1, 2, 3, 4, 5}, idsOf(all))
		assert.Equal(t, "from the journal", all[1].Description)
		assert.NoFileExists(t, filepath.Join(dir, ".taskgraph.journal"))
		assert.Equal(t, legit["task_2.json"], taskFiles(t, dir)["task_2.json"])
	})
}

func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGitThenReboot: what git or a person writes in .tasks wins over the
// change log, also after a restart of the machine: nothing the store
// keeps is replayed onto the files. Each case runs real git and the real
// command in a mount namespace whose boot id changes at the "reboot" (as
// the power-loss test does), on two filesystems: an ext4 image with a
// journal, and the temporary directory's (this machine: ext4 without a
// journal), each with the one protocol there is (checked below). The same
// with checkouts that never ran init, where git commits the rev and the
// lease (no clean filter).
func TestGitThenReboot(t *testing.T) {
	if why := rebootUnavailable(); why != "" {
		t.Skipf("GIT-THEN-REBOOT TEST NOT RUN: %s; it needs Linux, root, unshare, mount, mkfs.ext4 and git (CI runs it as root)", why)
	}
	cases := []struct {
		name string
		// script runs, before the reboot, in a checkout where this
		// machine's store created task $one ("one") and committed it;
		// $clone is the path for a clone of it, $init how a checkout is
		// set up.
		script string
		// want checks what the store reads after the reboot, by subject.
		want func(t *testing.T, tasks map[string]map[string]any)
	}{
		{
			name: "pulled completion",
			script: `git clone -q . "$clone"
				(cd "$clone" && eval "$init" && tg next >/dev/null && tg done --result shipped $one >/dev/null && git add -A && git commit -qm done)
				git pull -q --no-rebase "$clone" main`,
			want: func(t *testing.T, tasks map[string]map[string]any) {
				assert.Equal(t, "completed", tasks["one"]["status"])
				assert.Equal(t, "shipped", tasks["one"]["result"])
			},
		},
		{
			name: "merged task",
			script: `git clone -q . "$clone"
				(cd "$clone" && eval "$init" && tg next >/dev/null && tg done --result shipped $one >/dev/null && git add -A && git commit -qm done)
				tg edit --description ours $one >/dev/null && git add -A && git commit -qm ours
				git pull -q --no-rebase "$clone" main >/dev/null 2>&1 || { git checkout --theirs .tasks && git add -A && git commit -qm merged; }`,
			want: func(t *testing.T, tasks map[string]map[string]any) {
				assert.Equal(t, "completed", tasks["one"]["status"])
			},
		},
		{
			name: "checkout removes another branch's task",
			script: `git checkout -q -b feature
				tg add "on the branch" >/dev/null && git add -A && git commit -qm branch
				git checkout -q main`,
			want: func(t *testing.T, tasks map[string]map[string]any) {
				assert.Len(t, tasks, 1, "only main's task")
			},
		},
		{
			name: "hand edit",
			script: `tg next >/dev/null
				sed -i 's/"subject": "one"/"subject": "edited by hand"/' .tasks/task_$one.json
				grep -q "edited by hand" .tasks/task_$one.json`,
			want: func(t *testing.T, tasks map[string]map[string]any) {
				assert.Contains(t, tasks, "edited by hand")
			},
		},
		{
			name: "hand delete",
			script: `two=$(tg add two --json | sed -n 's/^  "id": \([0-9]*\),$/\1/p')
				tg next >/dev/null && tg done $one >/dev/null
				rm .tasks/task_$two.json`,
			want: func(t *testing.T, tasks map[string]map[string]any) {
				assert.Len(t, tasks, 1, "the deleted task stays deleted")
				assert.Equal(t, "completed", tasks["one"]["status"], "and the write after it is there")
			},
		},
		{
			name: "checkout of the committed file",
			script: `tg next >/dev/null && tg done $one >/dev/null
				git checkout -- .tasks`,
			want: func(t *testing.T, tasks map[string]map[string]any) {
				assert.Equal(t, "pending", tasks["one"]["status"])
			},
		},
	}
	for _, fs := range []string{"ext4-journal", "tmp"} {
		for _, withInit := range []bool{true, false} {
			for _, c := range cases {
				name := fmt.Sprintf("%s/%s/init=%v", fs, c.name, withInit)
				t.Run(name, func(t *testing.T) {
					got := rebootAfter(t, fs, withInit, c.script)
					c.want(t, got.tasks)
					assert.Equal(t, got.before, got.after, "the task files are what git or the person wrote")
					assert.Equal(t, got.statusBefore, got.statusAfter, "git sees what it saw before the reboot")
					assert.Contains(t, got.check, "no problems")
				})
			}
		}
	}
}

// rebooted is what the store and git say after the reboot.
type rebooted struct {
	tasks                     map[string]map[string]any
	before, after             string // the task files' checksums
	statusBefore, statusAfter string // git status
	check                     string
}

// rebootAfter makes a repository on the filesystem fs (an ext4 image with a
// journal, or the temporary directory's), whose graph (init, committed before its first task) a
// checkout — the origin, or with withInit false a clone that never ran
// init — gives a task "one", committed; runs script there, restarts the
// machine (a new boot id) and reads the graph there.
func rebootAfter(t *testing.T, fs string, withInit bool, script string) rebooted {
	t.Helper()
	work := t.TempDir()
	init, me := "tg init >/dev/null", "origin"
	if !withInit {
		init, me = "true", "me"
	}
	mountFS := "mkdir plain && cd plain"
	if fs == "ext4-journal" {
		mountFS = `truncate -s 64M img && mkfs.ext4 -q -F img && mkdir mnt && mount -o loop img mnt && cd mnt`
	}
	full := fmt.Sprintf(`set -eu
tg() { %[1]q "$@"; }
echo boot-a > "$WORK/boot-a"; echo boot-b > "$WORK/boot-b"
mount --bind "$WORK/boot-a" /proc/sys/kernel/random/boot_id
cd "$WORK" && %[2]s
base=$(pwd)
clone="$base/clone"
init=%[3]q
mkdir origin && cd origin && git init -q -b main
tg init >/dev/null && git add -A && git commit -qm graph
cd "$base"
[ -d %[4]s ] || git clone -q origin %[4]s
cd %[4]s
one=$(tg add one --json | sed -n 's/^  "id": \([0-9]*\),$/\1/p') # the full id: text shows a clone's short form
git add -A && git commit -qm one
tg check | grep -q %[5]q || { echo "not the protocol %[5]s:"; tg check; exit 1; }
%[6]s
sha256sum .tasks/task_*.json > "$WORK/before"
git status --porcelain > "$WORK/status-before"
sync
mount --bind "$WORK/boot-b" /proc/sys/kernel/random/boot_id
tg list --json > "$WORK/list"
sha256sum .tasks/task_*.json > "$WORK/after"
git status --porcelain > "$WORK/status-after"
tg check > "$WORK/check" 2>/dev/null || true
`, binary, mountFS, init, me, "durability: sync-each-write on", script)
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", full)
	cmd.Env = cleanEnv("WORK="+work, "TASKGRAPH_OWNER=me",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "HOME="+work)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(work, name))
		require.NoError(t, err)
		return string(data)
	}
	var list []map[string]any
	require.NoError(t, json.Unmarshal([]byte(read("list")), &list))
	tasks := map[string]map[string]any{}
	for _, task := range list {
		tasks[task["subject"].(string)] = task
	}
	return rebooted{tasks: tasks, before: read("before"), after: read("after"),
		statusBefore: read("status-before"), statusAfter: read("status-after"), check: read("check")}
}

// rebootUnavailable says why a restart cannot be staged here, or "".
func rebootUnavailable() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	for _, prog := range []string{"unshare", "mount", "mkfs.ext4", "git", "sha256sum"} {
		if _, err := exec.LookPath(prog); err != nil {
			return prog + " is not installed"
		}
	}
	if _, err := os.Stat("/proc/sys/kernel/random/boot_id"); err != nil {
		return "no /proc/sys/kernel/random/boot_id"
	}
	return ""
}

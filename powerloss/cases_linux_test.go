package powerloss

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/taskgraph-dev/taskgraph"
)

// oneOp is the process of the deterministic cases: it does one step
// (opEnv) on the directory and records it in its ledger like a writer.
//
//   - seed: task 1 created and updated to rev 2, then a plan of two
//     tasks (a journal): rev 2 is acknowledged, durable at its commit
//     point, and nothing in the change log is needed to bring it back.
//   - update: task 1's description changed (to rev 3).
//   - create: one new task.
func oneOp() error {
	ctx := context.Background()
	s, err := taskgraph.Open(os.Getenv(dirEnv))
	if err != nil {
		return err
	}
	defer s.Close()
	l, err := openLedger(os.Getenv(ledgerEnv), os.Getenv(opEnv))
	if err != nil {
		return err
	}
	ack := func(op string, ts ...taskgraph.Task) {
		e := entry{Kind: "ack", Op: op}
		for _, t := range ts {
			e.Tasks = append(e.Tasks, versionOf(t))
		}
		l.add(e)
	}
	switch op := os.Getenv(opEnv); op {
	case "seed":
		l.add(entry{Kind: "intent", Op: "create"})
		t, err := s.Create(ctx, taskgraph.NewTask{Subject: "the acknowledged task", Description: "rev 1"})
		if err != nil {
			return err
		}
		ack("create", t)
		d := "rev 2: acknowledged, durable at its commit point"
		l.add(entry{Kind: "intent", Op: "update", ID: int64(t.ID)})
		if t, err = s.Update(ctx, t.ID, taskgraph.Patch{Description: &d}); err != nil {
			return err
		}
		ack("update", t)
		l.add(entry{Kind: "intent", Op: "plan"})
		ts, err := s.CreatePlan(ctx, []taskgraph.NewTask{{Subject: "plan a", Key: "a"}, {Subject: "plan b", Key: "b", After: []string{"a"}}})
		if err != nil {
			return err
		}
		ack("plan", ts...)
	case "update":
		d := "rev 3: in flight when the power went"
		l.add(entry{Kind: "intent", Op: "update", ID: 1})
		t, err := s.Update(ctx, 1, taskgraph.Patch{Description: &d})
		if err != nil {
			return err
		}
		ack("update", t)
	case "create":
		l.add(entry{Kind: "intent", Op: "create"})
		t, err := s.Create(ctx, taskgraph.NewTask{Subject: "in flight when the power went"})
		if err != nil {
			return err
		}
		ack("create", t)
	default:
		return fmt.Errorf("unknown op %q", op)
	}
	return nil
}

// The deterministic cases stage, on a real filesystem, the orders known to
// be dangerous, then cut the power as the random rounds do.

// caseConfigs are the filesystems of the deterministic cases: ext4
// without its rename heuristic and xfs, which both commit a rename
// without the data of the renamed file; TASKGRAPH_POWERLOSS_FS narrows
// them.
func caseConfigs(t *testing.T) []fsConfig {
	want := map[string]bool{"ext4-noauto_da_alloc": true, "xfs": true}
	if os.Getenv("TASKGRAPH_POWERLOSS_FS") != "" {
		want = map[string]bool{}
		for _, c := range selectedConfigs(t) {
			want[c.Name] = true
		}
	}
	var out []fsConfig
	for _, c := range configs {
		if want[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// A rename committed before its record: task 1 is acknowledged at rev 2
// (and a plan follows it). An update of task 1 renames its new file, fsynced
// before, over task_1.json and fsyncs the directory (its commit point);
// its record's append to the change log is held up (strace delays that
// write(2) by 3 s) while another program fsyncs a file on the same
// filesystem. Then the power goes. Rev 2 must survive, or rev 3 (the
// update was in flight; its commit point may have passed); the record's
// absence must cost nothing.
func TestRenameCommittedBeforeItsRecord(t *testing.T) {
	for _, cfg := range caseConfigs(t) {
		t.Run(cfg.Name, func(t *testing.T) {
			v, _ := stageCut(t, cfg, "update", "task_1.json", hold{call: "write", file: ".taskgraph.log", when: 2})
			t.Logf("task_1.json as found after the cut: %q (%s)", v.Before[1], stagedHow(v.Before[1]))
			assert.Emptyf(t, v.Lost, "the acknowledged rev 2 of task 1 was lost (%s)", v.Durability.Protocol)
			assert.Empty(t, v.Undone)
			assert.Empty(t, v.NeedsPerson)
		})
	}
}

// A create cut at its commit point: the new task file is written, fsynced
// and renamed into place, and the directory's fsync that would commit it
// is held up (strace delays it by 3 s) while another program fsyncs a
// file on the same filesystem, which on a journalling filesystem commits
// the rename too. Then the power goes. After the restart task_4.json is
// there (or not) with only the create's announcement in the change log
// and no record. The store must open, list and write as usual, and what
// it shows of task 4 must be the whole task the create wrote or nothing,
// so that no person has to repair anything.
func TestCreateInFlight(t *testing.T) {
	for _, cfg := range caseConfigs(t) {
		t.Run(cfg.Name, func(t *testing.T) {
			v, dir := stageCut(t, cfg, "create", "task_4.json", hold{call: "fsync", when: 1})
			t.Logf("task_4.json as found after the cut: %q (%s)", v.Before[4], stagedHow(v.Before[4]))
			assert.Empty(t, v.Lost)
			assert.Empty(t, v.Undone)
			assert.Emptyf(t, v.NeedsPerson, "the directory needs a person after a create in flight (%s)", v.Durability.Protocol)
			data, err := os.ReadFile(filepath.Join(dir, "task_4.json"))
			if errors.Is(err, fs.ErrNotExist) {
				return
			}
			require.NoError(t, err)
			var task taskgraph.Task
			require.NoErrorf(t, json.Unmarshal(data, &task), "task_4.json after the store opened the directory: %q", data)
			assert.Equal(t, "in flight when the power went", task.Subject)
		})
	}
}

// stagedHow says what the cut left of the file the case is about.
func stagedHow(content string) string {
	switch {
	case content == "":
		return "missing or empty"
	case strings.Trim(content, "\x00") == "":
		return "zero-filled: the rename and the size reached the disk without the data, which the protocol's fsync before the rename forbids"
	default:
		return "whole"
	}
}

// hold is the system call of the op that strace holds up for 3 s: the
// when-th call to call on file in the task directory (the directory
// itself if file is "").
type hold struct {
	call, file string
	when       int
}

// stageCut seeds task 1 (rev 2) and plan tasks 2 and 3, runs op with the
// system call h held up by strace, waits until op has renamed target into
// place, fsyncs an unrelated file, cuts the power, and checks the copy
// after a restart. It returns the checker's
// verdict and the task directory (the copy stays mounted until the test
// ends).
func stageCut(t *testing.T, cfg fsConfig, op, target string, h hold) (verdict, string) {
	requireMachine(t, []fsConfig{cfg})
	_, err := exec.LookPath("strace")
	require.NoError(t, err, "strace is missing (it holds up a system call of the write): apt-get install strace")
	dir := runDir(t)
	ledgers := filepath.Join(dir, "ledgers")
	require.NoError(t, os.MkdirAll(ledgers, 0o755))
	image, cut := filepath.Join(dir, "disk.img"), filepath.Join(dir, "cut.img")
	defer os.Remove(image)
	newImage(t, cfg, image)
	d := attach(t, cfg, image, filepath.Join(dir, "mnt"))
	tasks := filepath.Join(d.mnt, "tasks")
	env := append(os.Environ(), dirEnv+"="+tasks, roleEnv+"=op")

	seed := exec.Command(os.Args[0], "-test.run=^TestPowerLoss$")
	seed.Env = append(env, opEnv+"=seed", ledgerEnv+"="+filepath.Join(ledgers, "seed.ledger"))
	out, err := seed.CombinedOutput()
	require.NoErrorf(t, err, "seed: %s", out)
	old, _ := os.Stat(filepath.Join(tasks, target))

	cmd := exec.Command("strace", "-f", "-qq", "-o", filepath.Join(dir, "strace.out"),
		"-P", filepath.Join(tasks, h.file), "-e", "trace="+h.call,
		"-e", fmt.Sprintf("inject=%s:delay_enter=3000000:when=%d", h.call, h.when),
		os.Args[0], "-test.run=^TestPowerLoss$")
	cmd.Env = append(env, opEnv+"="+op, ledgerEnv+"="+filepath.Join(ledgers, "op.ledger"))
	stderr, err := os.Create(filepath.Join(dir, "op.stderr"))
	require.NoError(t, err)
	defer stderr.Close()
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	var pids []int
	t.Cleanup(func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	// Wait for the rename: a new inode at target.
	require.Eventuallyf(t, func() bool {
		fi, err := os.Stat(filepath.Join(tasks, target))
		return err == nil && (old == nil || !os.SameFile(old, fi))
	}, 20*time.Second, time.Millisecond, "%s never renamed %s", op, target)

	// Someone else's fsync, while the record is held up.
	f, err := os.Create(filepath.Join(d.mnt, "someone-else"))
	require.NoError(t, err)
	_, err = f.WriteString("another program's data\n")
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Close())

	// The power cut: the tracer first, so that the tracee stays held up,
	// then the tracee.
	pids = append([]int{cmd.Process.Pid}, children(cmd.Process.Pid)...)
	require.NoError(t, stopWith(pids, "TtZXS"))
	require.NoError(t, d.cut(cut, ledgers))
	for _, p := range pids[1:] {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	d.release()

	c := restart(t, cfg, cut, filepath.Join(dir, "mnt"))
	boot, verdictPath := filepath.Join(dir, "boot_id"), filepath.Join(dir, "verdict.json")
	newBootID(t, boot)
	checker := afterRestart(boot, "checker", dirEnv+"="+tasks, ledgerEnv+"="+ledgers, outEnv+"="+verdictPath)
	out, err = checker.CombinedOutput()
	require.NoErrorf(t, err, "checker: %s", out)
	data, err := os.ReadFile(verdictPath)
	require.NoErrorf(t, err, "checker wrote no verdict: %s", out)
	var v verdict
	require.NoError(t, json.Unmarshal(data, &v))
	t.Logf("protocol %s (%s; %s)", v.Durability.Protocol, v.Durability.Filesystem, v.Durability.Reason)
	if len(v.Lost)+len(v.Undone)+len(v.NeedsPerson) > 0 {
		files, _ := filepath.Glob(filepath.Join(tasks, "*"))
		t.Logf("after the restart the directory holds %v", files)
		keepFailure(t, cfg, cut, ledgers, v)
	}
	_ = c // released by its cleanup, after the caller looked at the directory
	return v, tasks
}

// children returns the processes pid started (a tracer's tracees).
func children(pid int) []int {
	var out []int
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

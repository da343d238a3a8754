package powerloss

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// workRoot holds everything a run makes: images, mount points, ledgers.
// It is on tmpfs, so the images cost no disk. A run lives in run-<pid>,
// so the next run can tell (and clean) what a killed one left behind.
const workRoot = "/dev/shm/taskgraph-powerloss"

// hostSize is the size of a run's host filesystem (see runDir): sparse,
// and mounted with discard, so it costs what the images in it hold.
const hostSize = 8 << 30

// failuresDir keeps the images of failed rounds for a person to look at.
const failuresDir = "/dev/shm/powerloss-failures"

// maxFailures is how many failed images failuresDir keeps at most.
const maxFailures = 4

// fsConfig is one filesystem as the test makes and mounts it.
type fsConfig struct {
	Name  string   // as in the table and TASKGRAPH_POWERLOSS_FS
	Mkfs  []string // the command, before the image path
	Opts  string   // mount options, "" for the defaults
	Size  int64    // image size
	Types string   // the filesystem type for mount -t
	// Fsck is what a boot runs on the filesystem before mounting it
	// after a power loss, before the image path; nil for none.
	Fsck []string
	// Unproven says why the filesystem is run only when
	// TASKGRAPH_POWERLOSS_FS names it: a loss the test found there that
	// is the filesystem's, not the store's.
	Unproven string
}

// configs are the filesystems the test knows. mkfs.xfs refuses less than
// 300 MB; the images are sparse, so the size costs only what is written.
var configs = []fsConfig{
	{Name: "ext4", Types: "ext4", Mkfs: []string{"mkfs.ext4", "-q", "-F", "-T", "default"}, Size: 128 << 20},
	{Name: "ext4-noauto_da_alloc", Types: "ext4", Mkfs: []string{"mkfs.ext4", "-q", "-F", "-T", "default"}, Opts: "noauto_da_alloc", Size: 128 << 20},
	{Name: "ext4-data=writeback", Types: "ext4", Mkfs: []string{"mkfs.ext4", "-q", "-F", "-T", "default"}, Opts: "data=writeback", Size: 128 << 20},
	// No journal: the filesystem of this project's own machine, where a
	// store always uses the full protocol.
	// Its metadata after a power loss is whatever the kernel had
	// written, which only e2fsck repairs: a boot runs it before mounting
	// a filesystem left unclean. Its preening (-p, what systemd-fsck
	// runs) refuses some states that every power loss can leave, such as
	// an unattached inode (the old version of a replaced file), and asks
	// for a person; that person runs e2fsck -y, which the test does.
	{Name: "ext4-nojournal", Types: "ext4", Mkfs: []string{"mkfs.ext4", "-q", "-F", "-T", "default", "-O", "^has_journal"}, Fsck: []string{"e2fsck", "-f", "-y"}, Size: 128 << 20,
		Unproven: "a task file fsynced before its rename and its directory after came back zero-filled after e2fsck, about once in 100–200 rounds, with every version of the store (docs/durability.md)"},
	{Name: "xfs", Types: "xfs", Mkfs: []string{"mkfs.xfs", "-q", "-f"}, Size: 320 << 20},
	{Name: "btrfs", Types: "btrfs", Mkfs: []string{"mkfs.btrfs", "-q", "-f"}, Size: 128 << 20},
}

func configNamed(name string) (fsConfig, bool) {
	for _, c := range configs {
		if c.Name == name {
			return c, true
		}
	}
	return fsConfig{}, false
}

// requireMachine skips, loudly, where the test cannot run at all (not
// root, no loop devices), and fails where only a program is missing: a
// missing mkfs is fixed by scripts/install-fstools, and skipping would
// hide that the test never ran.
func requireMachine(t *testing.T, cfgs []fsConfig) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("POWER-LOSS TEST NOT RUN: it must run as root (it makes loop devices, mounts filesystems and mount namespaces); run: sudo go test ./powerloss -run TestPowerLoss -v")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		t.Skipf("POWER-LOSS TEST NOT RUN: no /dev/loop-control (%v): this machine or container has no loop devices; load the loop module (modprobe loop) or give the container access to /dev/loop*", err)
	}
	for _, prog := range []string{"losetup", "mount", "umount", "unshare", "cp"} {
		_, err := exec.LookPath(prog)
		require.NoErrorf(t, err, "%s is missing: install util-linux and coreutils", prog)
	}
	for _, c := range cfgs {
		_, err := exec.LookPath(c.Mkfs[0])
		require.NoErrorf(t, err, "%s is missing, so %s cannot be tested: run bash scripts/install-fstools", c.Mkfs[0], c.Name)
	}
}

// run runs a command and returns its output, failing the test with it on
// error.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoErrorf(t, err, "%s %s: %s", name, strings.Join(args, " "), out)
	return strings.TrimSpace(string(out))
}

// runDir makes this run's directory under workRoot, after cleaning what
// earlier runs left, and removes it (with every mount and loop device in
// it) when the test ends. It returns the run's host filesystem, mounted
// in that directory: an XFS with reflinks, in an image on tmpfs, which
// holds every image, ledger and mount point of the run, so that a cut can
// clone an image in one step (see cut).
func runDir(t *testing.T) string {
	t.Helper()
	cleanStale()
	dir := filepath.Join(workRoot, fmt.Sprintf("run-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_")))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { releaseUnder(dir); _ = os.RemoveAll(dir) })
	img, host := filepath.Join(dir, "host.img"), filepath.Join(dir, "host")
	f, err := os.Create(img)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(hostSize))
	require.NoError(t, f.Close())
	_, err = exec.LookPath("mkfs.xfs")
	require.NoError(t, err, "mkfs.xfs is missing: the power-loss test's images live on XFS, which clones a file in one step: run bash scripts/install-fstools")
	run(t, "mkfs.xfs", "-q", "-f", "-m", "reflink=1", img)
	loop := run(t, "losetup", "--find", "--show", img)
	require.NoError(t, os.MkdirAll(host, 0o755))
	run(t, "mount", "-t", "xfs", "-o", "discard", loop, host)
	return host
}

// cleanStale releases the mounts and loop devices of runs whose process is
// gone (killed by a timeout, say) and removes their files.
func cleanStale() {
	ents, _ := os.ReadDir(workRoot)
	for _, e := range ents {
		pid, ok := runPid(e.Name())
		if !ok || syscall.Kill(pid, 0) == nil {
			continue
		}
		dir := filepath.Join(workRoot, e.Name())
		releaseUnder(dir)
		_ = os.RemoveAll(dir)
	}
}

func runPid(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "run-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
	return pid, err == nil
}

// releaseUnder detaches every loop device whose backing file is under dir
// and unmounts every mount point under dir (deepest first). The detaching
// comes first: a loop device still mounted is detached once its mount
// goes, and the images of a run's rounds are named through its host
// filesystem, whose path is gone once that is unmounted.
func releaseUnder(dir string) {
	loops, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, bf := range loops {
		data, _ := os.ReadFile(bf)
		if strings.HasPrefix(string(data), dir+"/") {
			dev := "/dev/" + filepath.Base(filepath.Dir(filepath.Dir(bf)))
			_ = exec.Command("losetup", "-d", dev).Run()
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	lines := strings.Split(string(mounts), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		f := strings.Fields(lines[i])
		if len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			_ = exec.Command("umount", "-l", f[1]).Run()
		}
	}
}

// disk is one image file attached to a loop device and mounted. Its
// methods are idempotent, so a cleanup can always call them.
type disk struct {
	t     *testing.T
	cfg   fsConfig
	image string
	loop  string // "/dev/loopN" while attached
	mnt   string // the mount point while mounted
}

// newImage makes the image file and the filesystem in it.
func newImage(t *testing.T, cfg fsConfig, image string) {
	t.Helper()
	f, err := os.Create(image)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(cfg.Size))
	require.NoError(t, f.Close())
	run(t, cfg.Mkfs[0], append(cfg.Mkfs[1:], image)...)
}

// attach attaches image to a free loop device and mounts it at mnt.
func attach(t *testing.T, cfg fsConfig, image, mnt string) *disk {
	t.Helper()
	d := &disk{t: t, cfg: cfg, image: image}
	t.Cleanup(d.release)
	d.loop = run(t, "losetup", "--find", "--show", image)
	require.NoError(t, os.MkdirAll(mnt, 0o755))
	args := []string{"-t", cfg.Types}
	if cfg.Opts != "" {
		args = append(args, "-o", cfg.Opts)
	}
	if out, err := exec.Command("mount", append(args, d.loop, mnt)...).CombinedOutput(); err != nil {
		// Say why: the kernel's log of this device, and keep the image.
		klog, _ := exec.Command("dmesg").Output()
		var lines []string
		for _, l := range strings.Split(string(klog), "\n") {
			if strings.Contains(l, "("+filepath.Base(d.loop)+")") {
				lines = append(lines, l)
			}
		}
		kept := filepath.Join(failuresDir, fmt.Sprintf("unmountable-%s-%d.img", cfg.Name, time.Now().UnixNano()))
		_ = os.MkdirAll(failuresDir, 0o755)
		_ = exec.Command("cp", "--sparse=always", image, kept).Run()
		t.Fatalf("mount %s (%s): %v: %s\nkernel log of %s:\n%s\nimage kept: %s", image, d.loop, err, out, d.loop, strings.Join(lastLines(lines, 15), "\n"), kept)
	}
	d.mnt = mnt
	return d
}

// restart attaches and mounts the copy of a disk after a power loss, as a
// boot does: after the filesystem's fsck, if it needs one. An fsck that
// cannot repair the filesystem (e2fsck exits 4 or more) fails the test.
func restart(t *testing.T, cfg fsConfig, image, mnt string) *disk {
	t.Helper()
	if len(cfg.Fsck) > 0 {
		out, err := exec.Command(cfg.Fsck[0], append(cfg.Fsck[1:], image)...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() < 4 {
			t.Logf("%s repaired the filesystem (exit %d): %s", cfg.Fsck[0], ee.ExitCode(), out)
			err = nil
		}
		require.NoErrorf(t, err, "%s after the power loss: %s", strings.Join(cfg.Fsck, " "), out)
	}
	if cfg.Types == "xfs" {
		// The copy has the original's uuid, and the original may
		// still be mounted in a mount namespace another process made
		// meanwhile (a concurrent run's checker): xfs would refuse it.
		cfg.Opts = strings.TrimPrefix(cfg.Opts+",nouuid", ",")
	}
	return attach(t, cfg, image, mnt)
}

// release unmounts and detaches. btrfs remembers devices by filesystem
// id: forgetting the detached one lets a copy with the same id mount.
func (d *disk) release() {
	if d.mnt != "" {
		if out, err := exec.Command("umount", d.mnt).CombinedOutput(); err != nil {
			d.t.Logf("umount %s: %v: %s (unmounting lazily)", d.mnt, err, out)
			_ = exec.Command("umount", "-l", d.mnt).Run()
		}
		d.mnt = ""
	}
	if d.loop != "" {
		if out, err := exec.Command("losetup", "-d", d.loop).CombinedOutput(); err != nil {
			d.t.Logf("losetup -d %s: %v: %s", d.loop, err, out)
		}
		d.loop = ""
		if d.cfg.Types == "btrfs" {
			_ = exec.Command("btrfs", "device", "scan", "--forget").Run()
		}
	}
}

// cutFile, in the ledgers' directory, says where each ledger stood at the
// cut (see cut and readLedgers).
const cutFile = "cut.json"

// ledgerCut is where a ledger stood at the cut: Before bytes of it were
// written before the clone began, After before it had ended.
type ledgerCut struct{ Before, After int64 }

// cut is the power cut: it clones the image to dst in one step while the
// processes go on (FICLONE: the host filesystem holds off the loop
// device's writes meanwhile), so the copy holds exactly the writes the
// device had completed — what a disk that keeps every write it receives
// holds at a power cut, everything still in the page cache or on its way
// lost, an fsync in flight cut short. It records in ledgers/cutFile where
// each ledger stood just before and just after, so that the checker takes
// nothing written after the clone began as having happened before it.
func (d *disk) cut(dst, ledgers string) error {
	before, err := ledgerSizes(ledgers)
	if err != nil {
		return err
	}
	src, err := os.Open(d.image)
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	err = unix.IoctlFileClone(int(out.Fd()), int(src.Fd()))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("clone %s: %w", d.image, err)
	}
	after, err := ledgerSizes(ledgers)
	if err != nil {
		return err
	}
	cuts := map[string]ledgerCut{}
	for name, n := range after {
		cuts[name] = ledgerCut{Before: before[name], After: n}
	}
	data, err := json.Marshal(cuts)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(ledgers, cutFile), data, 0o644)
}

// ledgerSizes returns the size of every ledger in dir.
func ledgerSizes(dir string) (map[string]int64, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.ledger"))
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			return nil, err
		}
		out[filepath.Base(name)] = fi.Size()
	}
	return out, nil
}

// stopAll sends SIGSTOP to the process group of every process (each leads
// its own) and waits until each thread of them and of the processes they
// started is stopped: only then has none a system call half done that
// could still send a write.
func stopAll(pids []int) error {
	for _, p := range pids {
		_ = syscall.Kill(-p, syscall.SIGSTOP)
	}
	var all []int
	for _, p := range pids {
		all = append(all, descendants(p)...)
	}
	return stopWith(all, "TtZX")
}

// descendants returns pid and every process it started, and they started.
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children(out[i])...)
	}
	return out
}

// stopWith is stopAll accepting the thread states in ok. A process traced
// by a stopped tracer (strace) never reaches the group stop of its own
// SIGSTOP: the tracer it must report to is stopped. Each of its threads
// stops at its next system call instead; one asleep in a system call (S:
// a futex, epoll, nanosleep of the Go runtime) writes nothing.
func stopWith(pids []int, ok string) error {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGSTOP)
	}
	// A process in a system call that waits for the disk (sync) stops
	// when the call returns.
	deadline := time.Now().Add(10 * time.Second)
	for _, p := range pids {
		for !allIn(p, ok) {
			if time.Now().After(deadline) {
				comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p))
				stat, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
				wchan, _ := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", p))
				return fmt.Errorf("process %d (%q; %q; waiting in %q) did not stop", p, comm, stat, wchan)
			}
			time.Sleep(time.Millisecond)
		}
	}
	return nil
}

// allIn reports whether every thread of pid is in one of the states in
// ok (see proc(5)) or gone. A thread waiting for a child it started with
// vfork to exec (os/exec does) counts as stopped: it stays in that wait,
// uninterruptible, while the child is stopped, and writes nothing.
func allIn(pid int, ok string) bool {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
	for _, task := range tasks {
		data, err := os.ReadFile(task + "/stat")
		if err != nil {
			continue
		}
		// The state follows the command name in parentheses, which
		// may itself hold spaces or parentheses.
		rest := string(data[bytes.LastIndexByte(data, ')')+1:])
		f := strings.Fields(rest)
		if len(f) == 0 || strings.Contains(ok, f[0]) {
			continue
		}
		if wchan, _ := os.ReadFile(task + "/wchan"); f[0] == "D" && (string(wchan) == "kernel_clone" || strings.Contains(string(wchan), "vfork")) {
			continue
		}
		return false
	}
	return true
}

// newBootID writes a fresh boot id to a file, for the checker's mount
// namespace to show as /proc/sys/kernel/random/boot_id.
func newBootID(t *testing.T, path string) {
	t.Helper()
	id, err := os.ReadFile("/proc/sys/kernel/random/uuid")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, id, 0o644))
}

// afterRestart returns a command that runs the test binary in role with
// env in a new mount namespace whose boot id is the one in bootFile: to
// the store, the machine has restarted.
func afterRestart(bootFile, role string, env ...string) *exec.Cmd {
	script := `mount --bind "$1" /proc/sys/kernel/random/boot_id && shift && exec "$@"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", bootFile, os.Args[0], "-test.run=^TestPowerLoss$")
	cmd.Env = append(os.Environ(), append(env, roleEnv+"="+role)...)
	return cmd
}

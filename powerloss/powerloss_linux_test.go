package powerloss

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

// defaultRounds keeps the whole test (5 filesystems; ext4 without a
// journal when named) within about two and a half minutes under go test
// -race on two busy cores, fewer rounds than the two modes of group
// commit's time ran (30); TASKGRAPH_POWERLOSS_ROUNDS runs more.
const defaultRounds = 5

const writers = 3

// row is one line of the table: a filesystem over all rounds.
type row struct {
	FS          string
	Durability  taskgraph.Durability // as the checker's store reported it
	Rounds      int                  // rounds checked
	Idle        int                  // rounds in which git went on alone before the cut
	Checked     int                  // acknowledged writes checked
	Recycled    int64                // of the writes, those that filled a spare
	GitOps      int                  // git operations whose sync returned
	GitChecked  int                  // versions git made durable, checked
	Lost        int
	Overwritten int // versions git made durable, overwritten
	Undone      int
	NeedsPerson int // rounds after which a person would have to repair the directory
	GitDamaged  int // rounds after which a person would have to repair what git was writing at the cut
}

func (r *row) bad() bool { return r.Lost+r.Overwritten+r.Undone+r.NeedsPerson > 0 }

func TestPowerLoss(t *testing.T) {
	cfgs := selectedConfigs(t)
	requireMachine(t, cfgs)
	rounds := defaultRounds
	if s := os.Getenv("TASKGRAPH_POWERLOSS_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, "TASKGRAPH_POWERLOSS_ROUNDS")
		rounds = n
	}
	base := runDir(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d rounds per filesystem", seed, rounds)
	r := rand.New(rand.NewPCG(seed, 0))
	var rows []*row
	for _, cfg := range cfgs {
		rw := &row{FS: cfg.Name}
		rows = append(rows, rw)
		t.Run(cfg.Name, func(t *testing.T) {
			for i := range rounds {
				round(t, cfg, filepath.Join(base, fmt.Sprintf("%s-%d", cfg.Name, i)), r, rw)
			}
			if rw.Rounds == 0 {
				return
			}
			// The store knew the filesystem it was on, and used the one
			// protocol a syncing store has.
			assert.True(t, strings.HasPrefix(rw.Durability.Filesystem, cfg.Types), "%s: Open saw %q", cfg.Name, rw.Durability.Filesystem)
			assert.Equal(t, taskgraph.ProtocolSyncEachWrite, rw.Durability.Protocol, "%s", cfg.Name)
			// The cuts fell among writes that filled spares.
			assert.Positive(t, rw.Recycled, "%s: no write filled a spare (recycle.go)", cfg.Name)
		})
	}
	table := formatTable(rows)
	t.Log("\n" + table)
	if path := os.Getenv("TASKGRAPH_POWERLOSS_TABLE"); path != "" {
		require.NoError(t, os.WriteFile(path, []byte(table), 0o644))
	}
	for _, rw := range rows {
		if rw.bad() {
			t.Errorf("%s (%s): %d lost, %d git versions overwritten, %d reads undone, %d rounds needing a person", rw.FS, rw.Durability.Protocol, rw.Lost, rw.Overwritten, rw.Undone, rw.NeedsPerson)
		}
	}
}

// selectedConfigs returns the filesystems named in TASKGRAPH_POWERLOSS_FS
// (comma-separated), or all that are not Unproven.
func selectedConfigs(t *testing.T) []fsConfig {
	names := os.Getenv("TASKGRAPH_POWERLOSS_FS")
	if names == "" {
		var out []fsConfig
		for _, c := range configs {
			if c.Unproven == "" {
				out = append(out, c)
			} else {
				t.Logf("%s is run only when TASKGRAPH_POWERLOSS_FS names it: %s", c.Name, c.Unproven)
			}
		}
		return out
	}
	var out []fsConfig
	for _, n := range strings.Split(names, ",") {
		c, ok := configNamed(strings.TrimSpace(n))
		require.Truef(t, ok, "TASKGRAPH_POWERLOSS_FS: no filesystem %q; known: %s", n, configNames())
		out = append(out, c)
	}
	return out
}

func configNames() string {
	var names []string
	for _, c := range configs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ", ")
}

// round runs writers on a fresh filesystem, cuts the power at a random
// moment, and checks the copy. Everything it makes lives in dir.
func round(t *testing.T, cfg fsConfig, dir string, r *rand.Rand, rw *row) {
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "ledgers"), 0o755))
	image, cut := filepath.Join(dir, "disk.img"), filepath.Join(dir, "cut.img")
	defer os.Remove(image)
	defer os.Remove(cut)
	newImage(t, cfg, image)
	d := attach(t, cfg, image, filepath.Join(dir, "mnt"))
	tasks := filepath.Join(d.mnt, "tasks")
	env := []string{dirEnv + "=" + tasks}
	setUpGit(t, tasks, filepath.Join(dir, "ledgers"))

	var procs []*exec.Cmd
	start := func(role, ledger string, extra ...string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPowerLoss$")
		cmd.Env = append(os.Environ(), append(env, append(extra, roleEnv+"="+role, ledgerEnv+"="+ledger)...)...)
		stderr, err := os.Create(filepath.Join(dir, filepath.Base(ledger)+".stderr"))
		require.NoError(t, err)
		defer stderr.Close()
		cmd.Stderr = stderr
		// Its own process group: the git writer's git, sync and merge
		// driver are stopped and killed with it; and killed if the test
		// dies, which no longer reaches it through the terminal's group.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		require.NoError(t, cmd.Start())
		procs = append(procs, cmd)
	}
	killAll := func() {
		for _, p := range procs {
			if p.ProcessState == nil {
				_ = syscall.Kill(-p.Process.Pid, syscall.SIGKILL)
				_ = p.Wait()
				// The rest of its group (git, the merge driver) must be
				// gone too, or the filesystem stays busy: xfs then
				// refuses to mount the copy (the same uuid).
				for deadline := time.Now().Add(5 * time.Second); syscall.Kill(-p.Process.Pid, 0) == nil && time.Now().Before(deadline); {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}
	}
	t.Cleanup(killAll) // also if the test fails or panics
	for w := range writers {
		start("writer", filepath.Join(dir, "ledgers", fmt.Sprintf("w%d.ledger", w)), seedEnv+"="+strconv.FormatUint(r.Uint64(), 10))
	}
	start("reader", filepath.Join(dir, "ledgers", "reader.ledger"))
	start("git", filepath.Join(dir, "ledgers", "git.ledger"), seedEnv+"="+strconv.FormatUint(r.Uint64(), 10))
	start("other", filepath.Join(dir, "other"))

	time.Sleep(time.Second + time.Duration(r.Int64N(int64(3*time.Second))))
	var pids []int
	for _, p := range procs {
		pids = append(pids, p.Process.Pid)
	}
	idle := r.IntN(2) == 0
	if idle {
		// The store falls idle (its writers and reader stop, wherever
		// they are) while the git writer goes on alone for a while: no
		// store write follows git's, and the store that opens the copy
		// meets git's files behind its change log's back.
		require.NoError(t, stopAll(pids[:writers+1]))
		time.Sleep(200*time.Millisecond + time.Duration(r.Int64N(int64(800*time.Millisecond))))
	}
	// The cut, with the processes running: the writes in flight, an
	// fsync half done among them, are lost as at a real power cut.
	require.NoError(t, d.cut(cut, filepath.Join(dir, "ledgers")))
	killAll()
	d.release()
	rw.Rounds++
	if idle {
		rw.Idle++
	}
	noisyChildren(t, dir)

	// The restart: the copy on another loop device, checked by a process
	// that sees a new boot id.
	c := restart(t, cfg, cut, filepath.Join(dir, "mnt"))
	defer c.release()
	boot, out := filepath.Join(dir, "boot_id"), filepath.Join(dir, "verdict.json")
	newBootID(t, boot)
	cmd := afterRestart(boot, "checker", append(env, ledgerEnv+"="+filepath.Join(dir, "ledgers"), outEnv+"="+out)...)
	output, err := cmd.CombinedOutput()
	require.NoErrorf(t, err, "checker: %s", output)
	var v verdict
	data, err := os.ReadFile(out)
	require.NoErrorf(t, err, "checker wrote no verdict: %s", output)
	require.NoError(t, json.Unmarshal(data, &v))
	rw.Durability = v.Durability
	rw.Checked += v.Checked
	rw.Recycled += v.Recycled
	rw.GitOps += v.GitOps
	rw.GitChecked += v.GitChecked
	rw.Lost += len(v.Lost)
	rw.Overwritten += len(v.Overwritten)
	rw.Undone += len(v.Undone)
	if len(v.NeedsPerson) > 0 {
		rw.NeedsPerson++ // one broken file fails List, Check and Delete alike: count the round
	}
	if len(v.GitDamaged) > 0 {
		rw.GitDamaged++
		t.Logf("git left files damaged (an operation in flight at the cut, or a version it committed unreadable and wrote back): not the store's failure:\n%s", strings.Join(lastLines(v.GitDamaged, 3), "\n"))
	}
	if len(v.Lost)+len(v.Overwritten)+len(v.Undone)+len(v.NeedsPerson) > 0 {
		c.release()
		keepFailure(t, cfg, cut, filepath.Join(dir, "ledgers"), v)
	}
}

// noisyChildren logs what the children printed: errors a workload does
// not provoke on purpose (an unknown outcome, a corrupt file).
func noisyChildren(t *testing.T, dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, "*.stderr"))
	for _, name := range names {
		data, _ := os.ReadFile(name)
		if s := strings.TrimSpace(string(data)); s != "" && !strings.Contains(s, "signal: killed") {
			t.Logf("%s printed:\n%s", filepath.Base(name), strings.Join(lastLines(strings.Split(s, "\n"), 5), "\n"))
		}
	}
}

// keepFailure copies the copy of a failed round to failuresDir (at most
// maxFailures kept) with a description beside it, and logs what was
// found.
func keepFailure(t *testing.T, cfg fsConfig, cut, ledgers string, v verdict) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s: %s)\n", cfg.Name, v.Durability.Protocol, v.Durability.Reason)
	for _, list := range []struct {
		what  string
		items []string
	}{{"LOST", v.Lost}, {"GIT VERSION OVERWRITTEN", v.Overwritten}, {"UNDONE READ", v.Undone}, {"NEEDS A PERSON", v.NeedsPerson}} {
		for _, s := range lastLines(list.items, 5) {
			fmt.Fprintf(&b, "%s: %s\n", list.what, s)
		}
		if len(list.items) > 5 {
			fmt.Fprintf(&b, "%s: ... %d in all\n", list.what, len(list.items))
		}
	}
	if v.Log != "" {
		b.WriteString(v.Log + "\n")
	}
	_ = os.MkdirAll(failuresDir, 0o755)
	kept, _ := filepath.Glob(filepath.Join(failuresDir, "*.img"))
	if len(kept) >= maxFailures {
		fmt.Fprintf(&b, "image not kept: %s already holds %d; remove them to keep new ones\n", failuresDir, len(kept))
	} else {
		name := filepath.Join(failuresDir, fmt.Sprintf("%s-%d", cfg.Name, time.Now().UnixNano()))
		if err := exec.Command("cp", "--sparse=always", cut, name+".img").Run(); err == nil {
			_ = os.WriteFile(name+".txt", []byte(b.String()), 0o644)
			_ = exec.Command("cp", "-r", ledgers, name+".ledgers").Run()
			fmt.Fprintf(&b, "image kept: %s.img (mount -o loop%s; described in %s.txt, the ledgers in %s.ledgers)\n", name, optsSuffix(cfg), name, name)
		}
	}
	t.Logf("round failed:\n%s", b.String())
}

func optsSuffix(cfg fsConfig) string {
	if cfg.Opts == "" {
		return ""
	}
	return "," + cfg.Opts
}

// formatTable renders the rows as a Markdown table, then what the store
// said of each filesystem: its protocol and why.
func formatTable(rows []*row) string {
	var b strings.Builder
	b.WriteString("| filesystem | protocol | rounds | acknowledged writes checked | spares filled | store idle before the cut | git operations | git versions checked | lost | git versions overwritten | undone reads | rounds needing a person | rounds git left needing a person |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d | %d |\n", r.FS, r.Durability.Protocol, r.Rounds, r.Checked, r.Recycled, r.Idle, r.GitOps, r.GitChecked, r.Lost, r.Overwritten, r.Undone, r.NeedsPerson, r.GitDamaged)
	}
	b.WriteString("\nWhat the store said of each filesystem:\n\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "- %s: %s\n", r.FS, r.Durability)
	}
	return b.String()
}

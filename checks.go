// The checks file and the running of a check: data committed with the
// graph names commands, and only the worker runs them (taskgraph done,
// Work with WorkChecks). No store reads the file or runs a command; a
// task names a check, never a command.

package taskgraph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// ChecksFile is the name of the checks file in a task directory (for a
// database or a hub: .tasks/checks.json under the working directory).
// It is a JSON object from check name to its definition:
//
//	{"test": {"command": "go test ./...", "timeout": "10m"}}
//
// The command runs through sh -c (cmd /c on Windows) in the directory
// that holds the task directory; timeout (default 10m, at most 24h) is
// when its whole process group is killed. The file is at most 64 KiB and
// defines at most 100 checks, each command at most 4096 bytes.
// People edit it and git commits it with the graph; no tool, MCP call or
// hub token can write it.
const ChecksFile = "checks.json"

// Bounds of the checks file, which LoadChecks refuses past them.
const (
	maxChecksFileSize   = 64 << 10         // the largest checks file, in bytes
	maxChecks           = 100              // the most checks a file defines
	maxCheckCommand     = 4096             // the longest command, in bytes
	maxCheckTimeout     = 24 * time.Hour   // the longest timeout of a check
	defaultCheckTimeout = 10 * time.Minute // the timeout of a check that sets none
)

// Checks are the checks a graph defines (LoadChecks), and where they
// run.
type Checks struct {
	// Dir is the directory the checks run in: the one that holds the task
	// directory.
	Dir  string
	path string
	defs map[string]checkDef
}

// checkDef is one check of the file.
type checkDef struct {
	command string
	timeout time.Duration
}

// LoadChecks reads the checks file of the task directory taskDir
// (ChecksFile); the checks run in taskDir's parent. A missing file
// defines no check. A file that is a symbolic link or not a regular file,
// larger than 64 KiB, not a JSON object of definitions
// {"command", "timeout"}, or past a bound, is refused with an
// *InvalidError naming the file.
func LoadChecks(taskDir string) (*Checks, error) {
	abs, err := filepath.Abs(taskDir)
	if err != nil {
		return nil, err
	}
	c := &Checks{Dir: filepath.Dir(abs), path: filepath.Join(abs, ChecksFile), defs: map[string]checkDef{}}
	bad := func(format string, a ...any) error {
		return &InvalidError{Field: "checks file " + c.path, Reason: fmt.Sprintf(format, a...) + `: define checks as {"name": {"command": "…", "timeout": "10m"}}`}
	}
	info, err := os.Lstat(c.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return c, nil
	case err != nil:
		return nil, err
	case info.Mode()&fs.ModeSymlink != 0:
		return nil, bad("is a symbolic link, which taskgraph does not follow")
	case !info.Mode().IsRegular():
		return nil, bad("is not a regular file")
	case info.Size() > maxChecksFileSize:
		return nil, bad("is %d bytes, over %d", info.Size(), maxChecksFileSize)
	}
	f, err := os.OpenFile(c.path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxChecksFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxChecksFileSize {
		return nil, bad("is over %d bytes", maxChecksFileSize)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil || raw == nil {
		return nil, bad("is not a JSON object (%v)", err)
	}
	if len(raw) > maxChecks {
		return nil, bad("defines %d checks, over %d", len(raw), maxChecks)
	}
	for name, v := range raw {
		if err := checkName("name", name); err != nil {
			return nil, bad("check %.80q: %v", name, err)
		}
		var d struct {
			Command string `json:"command"`
			Timeout string `json:"timeout"`
		}
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&d); err != nil {
			return nil, bad("check %q is not {\"command\", \"timeout\"} (%v)", name, err)
		}
		def := checkDef{command: d.Command, timeout: defaultCheckTimeout}
		switch {
		case strings.TrimSpace(d.Command) == "":
			return nil, bad("check %q has no command", name)
		case len(d.Command) > maxCheckCommand:
			return nil, bad("check %q: its command is %d bytes, over %d", name, len(d.Command), maxCheckCommand)
		case !utf8.ValidString(d.Command) || strings.IndexByte(d.Command, 0) >= 0:
			return nil, bad("check %q: its command is not UTF-8 text without NUL", name)
		}
		if d.Timeout != "" {
			if def.timeout, err = time.ParseDuration(d.Timeout); err != nil || def.timeout <= 0 || def.timeout > maxCheckTimeout {
				return nil, bad("check %q: timeout %q is not a duration from 1s to %v", name, d.Timeout, maxCheckTimeout)
			}
		}
		c.defs[name] = def
	}
	return c, nil
}

// names returns the names of the checks defined, sorted.
func (c *Checks) names() []string {
	var out []string
	for n := range c.defs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Run runs the check name in c.Dir, through sh -c (cmd /c on Windows),
// killing its whole process group at its timeout (and once it exits, so
// that nothing it started outlives it), and returns what it reported:
// exit status, duration, the digest and tail of its output (stdout and
// stderr together, which also go to out if it is not nil), and the git
// commit of c.Dir. A check that fails or times out is Evidence that did
// not pass, not an error; the error is for a check that is not defined
// or could not be started.
func (c *Checks) Run(ctx context.Context, name string, out io.Writer) (Evidence, error) {
	def, ok := c.defs[name]
	if !ok {
		return Evidence{}, &InvalidError{Field: "check", Reason: fmt.Sprintf("no check named %q in %s (defined: %s): define it there, or name another", name, c.path, strings.Join(c.names(), ", "))}
	}
	ev := Evidence{Check: name, Commit: gitCommit(ctx, c.Dir)}
	rctx, cancel := context.WithTimeout(ctx, def.timeout)
	defer cancel()
	cmd := shellCommand(rctx, def.command)
	cmd.Dir = c.Dir
	var o outputRecord
	o.hash = sha256.New()
	w := io.Writer(&o)
	if out != nil {
		w = io.MultiWriter(&o, out)
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = time.Second // what it left running holds the pipe no longer than this
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Evidence{}, fmt.Errorf("taskgraph: check %q could not start: %w", name, err)
	}
	err := cmd.Wait()
	ev.Duration = time.Since(start)
	killGroup(cmd) // whatever it left behind
	ev.Exit = cmd.ProcessState.ExitCode()
	if rctx.Err() != nil && ctx.Err() == nil {
		ev.TimedOut, ev.Exit = true, -1
	} else if ctx.Err() != nil {
		return Evidence{}, ctx.Err()
	} else if ev.Exit == 0 && err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		ev.Exit = -1 // it did not run to its end (its output failed)
	}
	ev.Digest = "sha256:" + hex.EncodeToString(o.hash.Sum(nil))
	ev.Tail = tailText(o.tail)
	return ev, nil
}

// RunHeld runs the check t names (Extra.Check), as Run does, while
// keeping t's claim alive (KeepAlive, as its owner): a check that runs
// longer than what is left of the lease does not lose the task to another
// agent before the evidence it is for reaches Complete. Each renewal
// extends the lease to what was left of it when the check started, so
// the check's time is not counted against the claim and nothing beyond
// it is granted. A claim lost while the check ran (revoked, or its
// MaxRuntime reached) is the error, the evidence then being no one's. A
// task not in progress, or claimed without a lease, is checked as Run
// checks it.
func (c *Checks) RunHeld(ctx context.Context, s Store, t Task, out io.Writer) (Evidence, error) {
	left := time.Until(t.LeaseExpiresAt)
	name := t.extra().Check
	if t.Status != InProgress || t.LeaseExpiresAt.IsZero() || left <= 0 {
		return c.Run(ctx, name, out)
	}
	kctx, stop := KeepAlive(ctx, s, t.ID, t.Owner, left)
	ev, err := c.Run(kctx, name, out)
	if lost := stop(); lost != nil {
		return Evidence{}, fmt.Errorf("taskgraph: task %d's claim was lost while its check %q ran; nothing was completed: %w", t.ID, name, lost)
	}
	return ev, err
}

// shellCommand is command run by the system's shell.
func shellCommand(ctx context.Context, command string) *exec.Cmd {
	var cmd *exec.Cmd
	if runtime.GOOS == "windows" {
		cmd = exec.CommandContext(ctx, "cmd", "/c", command)
	} else {
		cmd = exec.CommandContext(ctx, "sh", "-c", command)
	}
	ownGroup(cmd)
	cmd.Cancel = func() error { killGroup(cmd); return nil }
	return cmd
}

// outputRecord digests everything written to it and keeps its end.
type outputRecord struct {
	hash interface {
		io.Writer
		Sum([]byte) []byte
	}
	tail []byte
}

func (o *outputRecord) Write(p []byte) (int, error) {
	o.hash.Write(p)
	o.tail = append(o.tail, p...)
	if len(o.tail) > 4*MaxEvidenceTail {
		o.tail = append(o.tail[:0], o.tail[len(o.tail)-MaxEvidenceTail:]...)
	}
	return len(p), nil
}

// tailText is the end of an output as text for the history: at most
// MaxEvidenceTail bytes of valid UTF-8 without NUL.
func tailText(b []byte) string {
	s := strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", " "), "?")
	for len(s) > MaxEvidenceTail {
		_, n := utf8.DecodeRuneInString(s)
		s = s[n:]
	}
	return s
}

// gitCommit returns the commit checked out in dir, or "" outside git.
func gitCommit(ctx context.Context, dir string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "--verify", "-q", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if len(c) > 80 {
		return ""
	}
	return c
}

//go:build !windows

// A check's process group on Unix.

package taskgraph

import (
	"os/exec"
	"syscall"
)

// oNoFollow makes opening the checks file refuse a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW

// ownGroup starts cmd in a process group of its own, so that killGroup
// reaches everything it starts.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills cmd's process group, if it was started.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// A check's process tree on Windows.

package taskgraph

import (
	"os/exec"
	"strconv"
	"syscall"
)

// oNoFollow: Windows has no O_NOFOLLOW; LoadChecks refuses a link by its
// Lstat.
const oNoFollow = 0

// ownGroup starts cmd in a process group of its own.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: syscall.CREATE_NEW_PROCESS_GROUP}
}

// killGroup kills cmd's process tree while cmd runs (taskkill /T): once
// it has exited its id may be another process's.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.ProcessState == nil {
		_ = exec.Command("taskkill", "/T", "/F", "/PID", strconv.Itoa(cmd.Process.Pid)).Run()
	}
}

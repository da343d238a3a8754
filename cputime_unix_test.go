//go:build unix

package taskgraph

import (
	"syscall"
	"time"
)

// cpuNow returns the CPU time this process has used: what a test that
// judges growth measures, so that other processes on a shared machine do
// not count.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

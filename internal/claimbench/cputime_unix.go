//go:build unix

package claimbench

import (
	"syscall"
	"time"
)

// cpuNow returns the CPU time this process has used: other processes on a
// shared machine, which stretch a claim's wall time, do not count in it.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

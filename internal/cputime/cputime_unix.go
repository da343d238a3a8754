//go:build unix

package cputime

import (
	"syscall"
	"time"
)

// Now returns the CPU time this process has used (user and system), or
// the wall clock if it cannot be read. Only differences of two readings
// mean anything.
func Now() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return time.Duration(time.Now().UnixNano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

//go:build !unix

package claimbench

import "time"

// cpuNow is the wall clock where the process's CPU time is not read.
func cpuNow() time.Duration { return time.Duration(time.Now().UnixNano()) }

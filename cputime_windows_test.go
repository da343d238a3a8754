package taskgraph

import "time"

// cpuNow returns the wall clock: Windows runs these tests under Wine, on a
// machine of their own.
func cpuNow() time.Duration { return time.Duration(time.Now().UnixNano()) }

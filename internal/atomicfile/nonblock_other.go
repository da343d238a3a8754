//go:build !linux && !windows

package atomicfile

import "syscall"

// nonblock keeps OpenIn from blocking on a FIFO put in place of a file
// (Linux's OpenIn sets it itself; Windows has no FIFOs in a directory).
const nonblock = syscall.O_NONBLOCK

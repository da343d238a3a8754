// The directory lock on Windows: not available yet (flock reports
// errors.ErrUnsupported), so Open refuses a directory there.

package taskgraph

import (
	"errors"
	"os"
)

// The operations of flock, for the code that compiles everywhere.
const (
	lockShared = 1 << iota
	lockExclusive
	lockNonBlock
	lockUnlock
)

// flock is not used on Windows, where a FileStore cannot be opened.
func flock(*os.File, int) error { return errors.ErrUnsupported }

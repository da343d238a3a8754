// Opening a file inside a directory handle on Windows: not available.

package atomicfile

import (
	"errors"
	"os"
)

// OpenIn is not available on Windows.
func OpenIn(_ *os.File, _ *os.Root, _ string, _ int, _ os.FileMode) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

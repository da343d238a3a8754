//go:build windows

package taskgraph

import (
	"errors"
	"os"
)

// errPlatform: renameio, and with it atomic replacement of a file, is not
// available on Windows, so Open refuses there.
var errPlatform = errors.ErrUnsupported

func writeDurable(root *os.Root, name string, data []byte, perm os.FileMode) error {
	return errors.ErrUnsupported
}

func fileID(fi os.FileInfo) uint64 { return 0 }

func openNoFollow(path string) (*os.File, error) { return nil, errors.ErrUnsupported }

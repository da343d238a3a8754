package atomicfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// ExchangeIn swaps the names oldname and newname inside the directory dir
// atomically (renameat2 with RENAME_EXCHANGE). A filesystem or kernel that
// cannot gives an error matching ErrNoExchange.
func ExchangeIn(dir *os.File, oldname, newname string) error {
	err := control(dir, func(fd int) error {
		return unix.Renameat2(fd, oldname, fd, newname, unix.RENAME_EXCHANGE)
	})
	var pe *os.PathError
	if errors.As(err, &pe) {
		switch pe.Err {
		case unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP:
			return ErrNoExchange
		}
		return &os.LinkError{Op: "exchange", Old: oldname, New: newname, Err: pe.Err}
	}
	return err
}

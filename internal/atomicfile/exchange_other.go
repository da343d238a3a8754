//go:build !linux

package atomicfile

import "os"

// ExchangeIn is not available here: Replace renames.
func ExchangeIn(dir *os.File, oldname, newname string) error { return ErrNoExchange }

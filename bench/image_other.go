//go:build !linux

package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
)

func mountImage(string) (string, func(), error) {
	return "", nil, errors.New("mounting a filesystem image is done on Linux only: give -dir a directory on the filesystem to measure")
}

// machine names where the figures were taken.
func machine() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s, %s/%s", host, runtime.GOOS, runtime.GOARCH)
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// imageSize is the size of an image the bench makes: room for the 100,000-task
// graphs of every shape and the throughput directories, sparse until used.
const imageSize = "8G"

// mountImage loop-mounts the filesystem image at path on a new directory,
// first making it (ext4 with mkfs's defaults: a journal, data=ordered) if
// there is no file there, so figures can be taken on a disk-backed
// filesystem of a known kind rather than whatever holds the temporary
// directory. It needs root (mount) and, to make an image, mkfs.ext4.
func mountImage(path string) (dir string, unmount func(), err error) {
	if _, err := os.Stat(path); os.IsNotExist(err) {
		if err := run("truncate", "-s", imageSize, path); err != nil {
			return "", nil, err
		}
		if err := run("mkfs.ext4", "-q", "-F", path); err != nil {
			os.Remove(path)
			return "", nil, err
		}
	} else if err != nil {
		return "", nil, err
	}
	dir, err = os.MkdirTemp("", "taskgraph-bench-mnt-")
	if err != nil {
		return "", nil, err
	}
	if err := run("mount", "-o", "loop", path, dir); err != nil {
		os.Remove(dir)
		return "", nil, fmt.Errorf("%w (mounting an image needs root)", err)
	}
	return dir, func() {
		if err := run("umount", dir); err != nil {
			fmt.Fprintf(os.Stderr, "bench: the image stays mounted on %s: %v\n", dir, err)
			return
		}
		os.Remove(dir)
	}, nil
}

func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// machine names where the figures were taken: host, CPU model, kernel.
func machine() string {
	host, _ := os.Hostname()
	cpu := "unknown CPU"
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(info)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%s, %s, Linux %s", host, cpu, strings.TrimSpace(string(kernel)))
}

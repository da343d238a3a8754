// Which filesystem, with which options, holds a directory, on Linux.

package fsinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Probe describes the filesystem holding the open directory d: the mount
// whose device is d's (from /proc/self/mountinfo) and, for ext4, every
// option in effect (from /proc/fs/ext4/<device>/options, the only place
// that shows defaults such as data=ordered or dioread_nolock, and that
// shows no data= at all without a journal). A part that cannot be read is
// left out; Type "" means unknown.
func Probe(d *os.File) Info {
	var st unix.Stat_t
	if err := unix.Fstat(int(d.Fd()), &st); err != nil {
		return Info{}
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Info{}
	}
	info, source, ok := mountOf(data, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	if !ok {
		// A btrfs subvolume's files have a device number of their own,
		// which mountinfo may not show: the filesystem says its type.
		var sfs unix.Statfs_t
		if err := unix.Fstatfs(int(d.Fd()), &sfs); err != nil {
			return Info{}
		}
		return Info{Type: magics[int64(sfs.Type)]}
	}
	if info.Type == "ext4" {
		opts := ext4Options(source, unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
		info.Options, info.AllOptions = append(info.Options, opts...), opts != nil
	}
	return info
}

// magics names the filesystems by their statfs magic number, where
// mountinfo does not say (the names are mountinfo's).
var magics = map[int64]string{
	unix.EXT4_SUPER_MAGIC:      "ext4",
	unix.XFS_SUPER_MAGIC:       "xfs",
	unix.BTRFS_SUPER_MAGIC:     "btrfs",
	unix.TMPFS_MAGIC:           "tmpfs",
	unix.OVERLAYFS_SUPER_MAGIC: "overlay",
	unix.NFS_SUPER_MAGIC:       "nfs",
	unix.FUSE_SUPER_MAGIC:      "fuse",
	unix.V9FS_MAGIC:            "9p",
}

// mountOf finds the mount of device major:minor in mountinfo: its type,
// source and options (the mount point's, then the superblock's).
func mountOf(mountinfo []byte, major, minor uint32) (Info, string, bool) {
	want := fmt.Sprintf("%d:%d", major, minor)
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 6 || len(g) < 3 || f[2] != want {
			continue
		}
		opts := append(strings.Split(f[5], ","), strings.Split(g[2], ",")...)
		return Info{Type: g[0], Options: opts}, g[1], true
	}
	return Info{}, "", false
}

// ext4Options reads every option in effect on the ext4 filesystem of the
// block device source (major:minor), or returns nil if it cannot.
func ext4Options(source string, major, minor uint32) []string {
	var names []string
	if dev, err := filepath.EvalSymlinks(source); err == nil { // /dev/mapper/x → /dev/dm-0
		names = append(names, filepath.Base(dev))
	}
	// The kernel's own name for the device, when the source says
	// another (/dev/root, a container's mount).
	if dev, err := os.Readlink(fmt.Sprintf("/sys/dev/block/%d:%d", major, minor)); err == nil {
		names = append(names, filepath.Base(dev))
	}
	names = append(names, filepath.Base(source))
	for _, name := range names {
		if data, err := os.ReadFile(filepath.Join("/proc/fs/ext4", name, "options")); err == nil {
			return strings.Fields(string(data))
		}
	}
	return nil
}

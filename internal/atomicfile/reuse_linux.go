// Reusing a file's inode on Linux.

package atomicfile

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// CanReuse reports whether Reusable can ever say yes here.
const CanReuse = true

// euid is this process's effective user id (a system call each time asked).
var euid = os.Geteuid()

// CreatedPerm returns the permissions a file created with perm gets: perm
// without the process's umask, which Linux (4.7 and later) tells in
// /proc/self/status without changing it; 0 if it cannot be told.
func CreatedPerm(perm os.FileMode) os.FileMode {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				return 0
			}
			return perm.Perm() &^ os.FileMode(mask)
		}
	}
	return 0
}

// Reusable reports whether f, open for writing, may be overwritten in
// place unseen, and then be taken for a file this process made with
// permissions perm: a regular file with perm, owned by this process's
// user, with a single name and no other open file description anywhere on
// the system. The kernel grants a write lease
// (fcntl F_SETLEASE) only then; it is let go at once. A reader that opened
// the file under another name it had before (a task file since replaced,
// read slowly) keeps the file open and so keeps it from being reused:
// that reader sees the old content to the end, as after a rename. After a
// yes, only whoever can open f's one name can reach the file; size is
// then its size.
func Reusable(f *os.File, perm os.FileMode) (size int64, ok bool) {
	_ = Control(f, "fcntl", func(fd int) error {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
			return nil // open elsewhere, not ours (EACCES), or leases disabled
		}
		var st unix.Stat_t
		ok = unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink == 1 &&
			os.FileMode(st.Mode&0o777) == perm && st.Mode&0o7000 == 0 && int(st.Uid) == euid
		size = st.Size
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
		return nil
	})
	return size, ok
}

// LinkIn gives the file name in the directory from a second name, to in the
// directory dir: through the directories' handles, never their paths, and
// never following a symlink at name (linkat without AT_SYMLINK_FOLLOW).
func LinkIn(from *os.File, name string, dir *os.File, to string) error {
	var lerr error
	err := Control(from, "linkat", func(fromFD int) error {
		return Control(dir, "linkat", func(dirFD int) error {
			lerr = unix.Linkat(fromFD, name, dirFD, to, 0)
			return lerr
		})
	})
	if lerr != nil {
		return &os.LinkError{Op: "link", Old: name, New: to, Err: lerr}
	}
	return err
}

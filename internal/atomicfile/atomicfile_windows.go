//go:build windows

// Atomic replacement and file identity on Windows. os.Root does the work
// through the directory handle: it opens files with NtCreateFile sharing
// them for reading, writing and deletion (so a reader holding a file open
// does not refuse its replacement where the filesystem allows renaming
// over an open file), and renames with FILE_RENAME_REPLACE_IF_EXISTS, with
// POSIX semantics where the system has them. What Windows adds is a
// bounded retry on the sharing violations that antivirus scanners and
// indexers cause (Retry), and a directory that cannot be fsynced
// (SyncDir). See docs/windows.md.

package atomicfile

import (
	"errors"
	"math/rand/v2"
	"os"
	"reflect"
	"syscall"
	"time"

	"golang.org/x/sys/windows"
)

// nonblock is 0: Windows has no FIFOs in a directory to block an open.
const nonblock = 0

// retryFor bounds Retry: as long as Go's own tooling waits for a file
// another process holds (cmd/go's internal/robustio), and a variable for
// tests.
var retryFor = 2 * time.Second

// Retry runs fn again while it fails with a sharing violation, a lock
// violation or access denied — what an antivirus scanner, an indexer or
// a backup tool holding a file for a moment causes, and also what a file
// being deleted gives — for up to retryFor, with a jittered exponential
// backoff; then it returns fn's last error. Any other error is returned
// at once. A real permission error thus comes back after retryFor.
func Retry(fn func() error) error {
	var deadline time.Time
	wait := time.Millisecond
	for {
		err := fn()
		if err == nil || !transient(err) {
			return err
		}
		now := time.Now()
		if deadline.IsZero() {
			deadline = now.Add(retryFor)
		} else if now.After(deadline) {
			return err
		}
		time.Sleep(wait/2 + rand.N(wait)) // jitter: two waiters do not retry in step
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// transient reports whether err is a refusal that another process's open
// handle causes, and that goes away when it closes it.
func transient(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case windows.ERROR_SHARING_VIOLATION, windows.ERROR_LOCK_VIOLATION, windows.ERROR_ACCESS_DENIED:
		return true
	}
	return false
}

// syncFile flushes f (FlushFileBuffers); a directory is not flushed (see
// SyncDir).
func syncFile(f *os.File) error {
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return SyncDir(f)
	}
	return f.Sync()
}

// SyncDir does nothing on Windows: FlushFileBuffers needs a handle with
// write access, which a directory handle does not have, and Windows has no
// call that makes one directory entry durable. NTFS logs a rename in its
// own journal; the rename is durable when NTFS commits that journal, which
// it does on its own within seconds. docs/windows.md says what this means
// for durability.
func SyncDir(d *os.File) error { return nil }

// FileID returns the NTFS file index of fi (the 64-bit file reference:
// MFT record and sequence number), which a file replaced by rename always
// changes; 0 where it is not known. os.File.Stat and os.Root.Lstat read it
// with GetFileInformationByHandle, but os.FileInfo.Sys does not expose it,
// so it is read from the fields os.SameFile compares. A FileInfo that lacks
// them (os.Lstat by path) gives 0, and then only the size and mtime tell
// versions apart.
func FileID(fi os.FileInfo) uint64 {
	v := reflect.ValueOf(fi)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return 0
	}
	v = v.Elem()
	hi, lo := v.FieldByName("idxhi"), v.FieldByName("idxlo")
	if hi.Kind() != reflect.Uint32 || lo.Kind() != reflect.Uint32 {
		return 0
	}
	return hi.Uint()<<32 | lo.Uint()
}

// Links is 1 on Windows: os.FileInfo does not carry the link count
// (nNumberOfLinks), so the check for a hard-linked sidecar is not made
// here (docs/windows.md lists it among what does not hold).
func Links(fi os.FileInfo) uint64 { return 1 }

// OpenNoFollow is not available on Windows.
func OpenNoFollow(path string) (*os.File, error) { return nil, errors.ErrUnsupported }

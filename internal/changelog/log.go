// The change log open in a store: how every store learns what the others
// wrote without reading their files, and what a writer that died left
// unfinished.

package changelog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/filenames"
)

// FS is the directory a change log lives in, as a store writes it: the
// seam through which tests inject faults.
type FS interface {
	atomicfile.FS
	// Append appends data to the change log f.
	Append(f *os.File, data []byte) error
	// OpenRead opens name for reading without following a symlink and
	// without blocking (a FIFO in place of a file must not hang a reader).
	OpenRead(name string) (*os.File, error)
}

// UnusableError is a change log a store must not write: not a regular
// file, or a file with other names. Err says what to do.
type UnusableError struct {
	Path string
	Err  error
}

func (e *UnusableError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *UnusableError) Unwrap() error { return e.Err }

// Log is a store's hold on its directory's change log (.taskgraph.log;
// the record format is Record): the file open here and how far this store
// has read it. The log is never what makes a
// write durable — every write is durable in its files before its record is
// appended — so a record lost costs the other stores a rescan, never a
// write. It knows lines, not tasks: the store decides what a record says.
// Guarded by the store's semaphore; only its methods write its fields.
type Log struct {
	fs   FS       // the directory's, through which the log is written
	root *os.Root // the directory, for Lstat
	path string   // the log's path, for messages
	max  int64    // the size at which prepare replaces it
	f    *os.File // the log open here, or nil
	ino  uint64   // the directory's log as last seen (0: none)
	off  int64    // read (and appended) up to here: the end of a whole line
	// checked: refresh found the log open here to be the directory's,
	// read to its end, in the current hold of the lock.
	checked bool
}

// New returns the hold on the change log of the directory dir (root),
// written through fsys, to be replaced once it reaches max bytes.
func New(fsys FS, root *os.Root, dir string, max int64) Log {
	return Log{fs: fsys, root: root, path: filepath.Join(dir, filenames.Log), max: max}
}

// Open opens (creating if needed) the change log the directory has now.
// A log that is not a regular file, or has other names, is an
// *UnusableError: writes refuse until it is removed (reads go on, by the directory's mtime alone).
func (l *Log) Open() error {
	if l.f != nil {
		if l.checked {
			return nil // refresh just saw it, and the lock is held
		}
		if fi, err := l.root.Lstat(filenames.Log); err == nil && atomicfile.FileID(fi) == l.ino {
			return nil
		}
		l.f.Close()
		l.f = nil
	}
	unusable := func(m fs.FileMode) error {
		return &UnusableError{Path: l.path, Err: fmt.Errorf("the change log is %w: remove it; until then every write is refused (reads go on)", atomicfile.NotRegular(m))}
	}
	// Through the handle, without following a symlink or blocking on a
	// FIFO: something put in its place gives an error, not a hang, and
	// never receives a record.
	f, err := l.fs.OpenFile(filenames.Log, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		if fi, lerr := l.root.Lstat(filenames.Log); lerr == nil && !fi.Mode().IsRegular() {
			return unusable(fi.Mode())
		}
		return fmt.Errorf("taskgraph: open change log %s: %w", l.path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("taskgraph: open change log %s: %w", l.path, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return unusable(fi.Mode())
	}
	if n := atomicfile.Links(fi); n > 1 {
		f.Close()
		return &UnusableError{Path: l.path, Err: atomicfile.HardLinked("change log", n, "every write is refused (reads go on)")}
	}
	l.f, l.ino = f, atomicfile.FileID(fi)
	return nil
}

// Close closes the change log open here.
func (l *Log) Close() error {
	l.checked = false
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Prepare opens the change log, replacing it first if it has grown large.
// A write prepares it before its files are written, so that creating or
// replacing the log is part of the directory change the write commits.
func (l *Log) Prepare() error {
	if err := l.Open(); err != nil {
		return err
	}
	if l.off < l.max {
		return nil
	}
	return l.Replace()
}

// Replace replaces the change log with a new, empty file and opens it.
// Every other store sees its new inode and rescans the directory, so no
// record of the old log needs to reach them; this store is current and
// starts over.
func (l *Log) Replace() error {
	if err := atomicfile.Replace(l.fs, filenames.Log, nil, 0o644, false); err != nil {
		return fmt.Errorf("taskgraph: replace change log: %w", err)
	}
	l.Close()
	if err := l.Open(); err != nil {
		return err
	}
	l.off = 0
	return nil
}

// Restart cuts the change log open here short, to nothing, in place: its
// blocks are freed even while other stores hold it open, which see it cut
// short and rescan.
func (l *Log) Restart() error {
	if l.f == nil {
		return errors.New("taskgraph: no change log is open")
	}
	if err := l.f.Truncate(0); err != nil {
		return fmt.Errorf("taskgraph: cut the change log short: %w", err)
	}
	l.off, l.checked = 0, false
	return nil
}

// Remove removes the change log: without one, every other store rescans
// the directory. It reports whether the log is gone; either way this
// store forgets it, and rescans at its next refresh.
func (l *Log) Remove() bool {
	l.Close()
	err := l.fs.Remove(filenames.Log)
	l.ino, l.off = 0, 0
	return err == nil || errors.Is(err, fs.ErrNotExist)
}

// Append appends rec, whole lines, to the change log.
func (l *Log) Append(rec []byte) error {
	if l.f == nil {
		return errors.New("taskgraph: no change log is open")
	}
	size := l.off
	if !l.checked {
		lfi, err := l.f.Stat()
		if err != nil {
			return fmt.Errorf("taskgraph: change log: %w", err)
		}
		size = lfi.Size()
	}
	if size > l.off {
		// Every whole line has been read (refresh comes first): the rest
		// is the start of a line whose writer died in mid-append. End it,
		// so that ours stays whole.
		rec = append([]byte{'\n'}, rec...)
	}
	if err := l.fs.Append(l.f, rec); err != nil {
		return fmt.Errorf("taskgraph: append change log: %w", err)
	}
	l.off = size + int64(len(rec))
	return nil
}

// News is what the directory's change log holds that this store has not
// read.
type News int

// What News can say.
const (
	Same  News = iota // nothing: the log ends where this store stopped reading
	Grown             // records appended since: read them (ReadNew)
	Lost              // removed, replaced or cut short: records may be lost, so rescan
)

// News compares the directory's change log with what this store has read
// of it, and returns its size.
func (l *Log) News() (News, int64, error) {
	fi, err := l.root.Lstat(filenames.Log)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.Mode().IsRegular()):
		if l.ino != 0 {
			// Removed (by a writer that could not append to it) or
			// replaced by something unusable.
			return Lost, 0, nil
		}
		return Same, 0, nil
	case err != nil:
		return Same, 0, fmt.Errorf("taskgraph: %w", err)
	case atomicfile.FileID(fi) != l.ino:
		return Lost, fi.Size(), nil // a new log, created or compacted
	case fi.Size() < l.off:
		return Lost, fi.Size(), nil // cut short in place, by something other than taskgraph
	case fi.Size() > l.off:
		return Grown, fi.Size(), nil
	}
	return Same, fi.Size(), nil
}

// SetFS makes the log written through fsys from now on: a test's
// fault-injecting file system.
func (l *Log) SetFS(fsys FS) { l.fs = fsys }

// SetMax makes the log be replaced once it reaches max bytes.
func (l *Log) SetMax(max int64) { l.max = max }

// Path is the change log's path, for messages.
func (l *Log) Path() string { return l.path }

// Recheck forgets what CaughtUp recorded: a new hold of the lock begins,
// and others may have appended since the last.
func (l *Log) Recheck() { l.checked = false }

// CaughtUp records that this store has read the log to size, as news
// found it, in the current hold of the lock: while it is held nobody else
// appends, so the next append need not look at the log again.
func (l *Log) CaughtUp(size int64) {
	l.checked = l.f != nil && l.ino != 0 && size == l.off
}

// ReadNew returns the whole lines appended between what this store has
// read and size, and counts them read. A line not yet whole (its writer
// is appending, or died in mid-append) is left for later.
func (l *Log) ReadNew(size int64) ([]byte, error) {
	if err := l.Open(); err != nil {
		return nil, err
	}
	buf := make([]byte, size-l.off)
	n, err := l.f.ReadAt(buf, l.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	whole := Whole(buf[:n])
	l.off += int64(len(whole))
	return whole, nil
}

// ReadAll reports, by one fstat, whether this store has read every record
// of the log open here.
func (l *Log) ReadAll() bool {
	if l.f == nil {
		return false
	}
	fi, err := l.f.Stat()
	return err == nil && fi.Size() == l.off
}

// SkipToEnd takes the directory's log as read to its last whole line: a
// scan, which reads the files themselves, needs none of its records. If
// the log open here is not the directory's any more (appending to it would
// reach no one), or was cut short in place by something other than
// taskgraph, it is closed: nothing known of it holds.
func (l *Log) SkipToEnd() {
	prevIno, prevOff := l.ino, l.off
	l.ino, l.off = 0, 0
	if fi, err := l.root.Lstat(filenames.Log); err == nil && fi.Mode().IsRegular() {
		l.ino, l.off = atomicfile.FileID(fi), l.wholeLines(fi.Size())
	}
	if l.ino != prevIno || l.off < prevOff {
		l.Close()
	}
}

// wholeLines returns where the last whole line of a change log of size
// bytes ends: before a line a writer was killed in the middle of, so that
// the next append starts a line of its own instead of ending that one.
func (l *Log) wholeLines(size int64) int64 {
	if size == 0 {
		return 0
	}
	f, err := l.fs.OpenRead(filenames.Log)
	if err != nil {
		return size
	}
	defer f.Close()
	var last [1]byte
	if n, _ := f.ReadAt(last[:], size-1); n == 1 && last[0] != '\n' {
		return size - 1 // append ends the torn line first
	}
	return size
}

// EndsUnfinished reports whether the change log, read by a scan rather
// than record by record, ends in a write that did not finish: a writer
// killed after its announcement, perhaps before the directory's fsync that
// made its rename durable. A write's record ends with its M line, and every
// write fsyncs the directory before it appends it; a write that finished
// after an unfinished one fsynced the directory too. So only the log's
// last line matters.
func (l *Log) EndsUnfinished() (bool, error) {
	if l.ino == 0 || l.off == 0 {
		return false, nil
	}
	f, err := l.fs.OpenRead(filenames.Log)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	defer f.Close()
	// An M line is short; a line that does not fit in tail is not one.
	var tail [32]byte
	at := max(l.off-int64(len(tail)), 0)
	n, err := f.ReadAt(tail[:l.off-at], at)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("taskgraph: read change log: %w", err)
	}
	last := tail[:n]
	if i := bytes.LastIndexByte(last[:max(len(last)-1, 0)], '\n'); i >= 0 {
		last = last[i+1:]
	} else if at > 0 {
		return true, nil // a line longer than tail
	}
	r, ok := Parse(strings.TrimSuffix(string(last), "\n"))
	return !ok || r.Kind != Mtime, nil
}

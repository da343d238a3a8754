// Package changelog is the record format of a task directory's change log:
// one line per change, appended by every writer under the directory lock,
// read by every other process to learn what changed without reading the
// task files, and the redo log that makes group-committed writes durable
// (below). To a reader a torn or garbled line (a writer killed in
// mid-append) costs a reload of the task it names, or a rescan, never a
// wrong answer; the files stay the source of truth.
//
// The lines:
//
//	I <mtime> <id>...                         a write of these tasks is about to commit; the directory's mtime before it
//	P <id> <ino> <size> <mtime> <prev> <task JSON>   task id was written, as this, over the version prev
//	D <id> [<rev> [<prev>]]                   task id, at rev (the version prev), was deleted
//	M <mtime>                                 the directory's mtime after a write
//	C <boot id> [<dir id>]                    every write before this line is durable in its files
//
// A writer appends I before its commit point and P, D and M after it. A
// reader that finds an I not followed by the P or D of each id it names
// (the writer died, or its append failed) reloads those tasks from their
// files; one whose own view of the directory's mtime differs from the I's
// rescans the directory. So a record lost after the commit point never
// leaves a reader stale. Readers of older versions skip I lines.
//
// The log is also the redo log of group commit: a write's P and D lines,
// ended by its M line, are one record, appended in one write, and a write
// is durable once the log is synced past it. C, a checkpoint, says that
// every file the records before it name was synced: after a crash of the
// machine (another boot id than the last checkpoint's) the records after
// the last C are replayed onto the files. A record without its M (a torn
// append) was never acknowledged and is never replayed. A record names the
// version of the file it replaced (prev: its inode and a digest of its
// bytes, or NoFile), so that a replay continues only the versions the
// records themselves replaced or wrote, never a file git or a person wrote
// since: those win. The dir id ties a
// checkpoint to the directory that wrote it (its inode and birth time): a
// log copied or restored elsewhere is not replayed there.
package changelog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Kind says what a record reports.
type Kind byte

// The kinds of record.
const (
	Put    Kind = 'P' // a task file was written
	Delete Kind = 'D' // a task file was removed
	Mtime  Kind = 'M' // the directory's modification time after a write
	Intent Kind = 'I' // a write about to commit, and the mtime before it
	// Checkpoint: every write recorded before it is durable in its files.
	Checkpoint Kind = 'C'
	// Deleting: a task file about to be removed, which versions before
	// this one wrote and synced before the removal, so that their replay
	// would not restore a missing file. A replay no longer restores a
	// missing file at all (creates make their directory entry durable):
	// the line is read and ignored.
	Deleting Kind = 'X'
)

// Stamp identifies one version of a file: a replaced file has a new inode.
type Stamp struct {
	Ino   uint64
	Size  int64
	Mtime int64 // nanoseconds
}

// NoFile is the version a record replaced when there was no file: it
// created the file.
const NoFile = "-"

// VersionOf names the version of a task file with stamp st and content
// data: its inode, its mtime and a digest of its bytes. A power loss that
// undoes a rename brings back the version before it whole (same inode,
// mtime and bytes) or damages it; git and people write new files, at
// another time — so even a checkout of the very bytes a store once wrote
// (a clone that commits the rev) is never taken for that version.
func VersionOf(st Stamp, data []byte) string {
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%d.%d.%s", st.Ino, st.Mtime, hex.EncodeToString(sum[:16]))
}

// Unknown is the version a record names when it cannot say which it
// replaced: no file has inode 0, so no replay continues it.
var Unknown = VersionOf(Stamp{}, nil)

// validVersion reports whether v is NoFile or what VersionOf returns.
func validVersion(v string) bool {
	if v == NoFile {
		return true
	}
	f := strings.Split(v, ".")
	if len(f) != 3 || len(f[2]) != 32 {
		return false
	}
	_, e1 := strconv.ParseUint(f[0], 10, 64)
	_, e2 := strconv.ParseInt(f[1], 10, 64)
	_, e3 := hex.DecodeString(f[2])
	return e1 == nil && e2 == nil && e3 == nil
}

// Record is one line of the log.
type Record struct {
	Kind Kind
	ID   int64 // Put, Delete
	Rev  int64 // Delete: the rev of the task deleted; 0 if not said
	// Prev is the version a Put or Delete replaced (VersionOf, or NoFile);
	// "" in a record of an older version, which did not say.
	Prev    string
	Stamp   Stamp // Put, when Content is set
	Content []byte
	Mtime   int64   // Mtime, Intent
	IDs     []int64 // Intent
	Boot    string  // Checkpoint: the boot id of the machine that synced
	Dir     string  // Checkpoint: the directory it was made in; "" if not said (older versions)
}

// AppendPut appends the record of a task file written with content (JSON
// on one line) and stamp over the version prev (VersionOf, or NoFile).
func AppendPut(buf []byte, id int64, st Stamp, prev string, content []byte) []byte {
	buf = fmt.Appendf(buf, "P %d %d %d %d %s ", id, st.Ino, st.Size, st.Mtime, prev)
	return append(append(buf, content...), '\n')
}

// AppendDelete appends the record of a removed task file, which held rev
// and was the version prev.
func AppendDelete(buf []byte, id, rev int64, prev string) []byte {
	return fmt.Appendf(buf, "D %d %d %s\n", id, rev, prev)
}

// AppendMtime appends the directory's mtime after a write: the end of its
// record.
func AppendMtime(buf []byte, mtime int64) []byte { return fmt.Appendf(buf, "M %d\n", mtime) }

// AppendIntent appends the announcement of a write of ids, made while the
// directory's mtime is mtime.
func AppendIntent(buf []byte, mtime int64, ids []int64) []byte {
	buf = fmt.Appendf(buf, "I %d", mtime)
	for _, id := range ids {
		buf = fmt.Appendf(buf, " %d", id)
	}
	return append(buf, '\n')
}

// AppendCheckpoint appends a checkpoint made during boot in the directory
// dir (ids without spaces or newlines; a boot "" is written as "-", an
// unknown boot; a dir "" is left out).
func AppendCheckpoint(buf []byte, boot, dir string) []byte {
	if boot == "" || strings.ContainsAny(boot, " \n") {
		boot = "-"
	}
	if dir == "" || strings.ContainsAny(dir, " \n") {
		return fmt.Appendf(buf, "C %s\n", boot)
	}
	return fmt.Appendf(buf, "C %s %s\n", boot, dir)
}

// Whole returns the complete lines at the start of buf: everything up to
// and including its last newline. A line still being appended (or torn by
// a crash) is left for later.
func Whole(buf []byte) []byte {
	end := bytes.LastIndexByte(buf, '\n')
	return buf[:end+1]
}

// Parse reads one line without its newline. ok is false for a line that
// names nothing usable. A Put whose stamp or content is damaged comes back
// with its ID and no Content: the reader reloads that task from its file.
func Parse(line string) (r Record, ok bool) {
	kind, rest, _ := strings.Cut(line, " ")
	switch kind {
	case "M":
		m, err := strconv.ParseInt(rest, 10, 64)
		return Record{Kind: Mtime, Mtime: m}, err == nil
	case "I":
		f := strings.Fields(rest)
		if len(f) < 2 {
			return Record{}, false
		}
		m, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return Record{}, false
		}
		r := Record{Kind: Intent, Mtime: m}
		for _, s := range f[1:] {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return Record{}, false
			}
			r.IDs = append(r.IDs, n)
		}
		return r, true
	case "C":
		boot, dir, _ := strings.Cut(rest, " ")
		if boot == "" || strings.ContainsAny(dir, " ") || (dir == "" && strings.HasSuffix(rest, " ")) {
			return Record{}, false
		}
		if boot == "-" {
			boot = ""
		}
		return Record{Kind: Checkpoint, Boot: boot, Dir: dir}, true
	case "X":
		n, err := strconv.ParseInt(rest, 10, 64)
		return Record{Kind: Deleting, ID: n}, err == nil && n > 0
	case "D":
		id, rev, hasRev := strings.Cut(rest, " ")
		n, err := strconv.ParseInt(id, 10, 64)
		r := Record{Kind: Delete, ID: n}
		if hasRev {
			var rerr error
			rev, r.Prev, _ = strings.Cut(rev, " ")
			r.Rev, rerr = strconv.ParseInt(rev, 10, 64)
			err = errors.Join(err, rerr)
		}
		return r, err == nil && n > 0 && r.Rev >= 0 && (r.Prev == "" || validVersion(r.Prev))
	case "P":
		f := strings.SplitN(rest, " ", 5)
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 {
			return Record{}, false
		}
		r := Record{Kind: Put, ID: n}
		if len(f) == 5 {
			ino, e1 := strconv.ParseUint(f[1], 10, 64)
			size, e2 := strconv.ParseInt(f[2], 10, 64)
			mtime, e3 := strconv.ParseInt(f[3], 10, 64)
			content, prev := f[4], ""
			if !strings.HasPrefix(content, "{") { // an older version's record says no prev
				prev, content, _ = strings.Cut(content, " ")
			}
			if e1 == nil && e2 == nil && e3 == nil && content != "" && (prev == "" || validVersion(prev)) {
				r.Stamp, r.Content, r.Prev = Stamp{Ino: ino, Size: size, Mtime: mtime}, []byte(content), prev
			}
		}
		return r, true
	}
	return Record{}, false
}

// Change is the state one record leaves a task in: its content, or
// deleted.
type Change struct {
	Deleted bool
	Rev     int64  // when Deleted: the rev of the task deleted (0 if not said)
	Prev    string // the version the record replaced; "" if not said
	Content []byte // the task file, when not Deleted
	Stamp   Stamp  // the file written, when not Deleted
	End     int    // where the record (its M line) ends in the log
}

// Redo returns, for each task, the changes the whole records of log (whole
// lines, as Whole returns) made to it, in order. A record is the P and D
// lines of one write ended by its M line; lines of a write whose M never
// came (the append was torn, or the writer died in it) are dropped when
// the next I or C line starts another write, and never count. A P line
// whose content was damaged makes its record count for nothing, since it
// cannot be replayed.
func Redo(log []byte) map[int64][]Change {
	history := map[int64][]Change{}
	var group map[int64]Change
	damaged := false
	pos := 0
	for line := range strings.Lines(string(log)) {
		pos += len(line)
		r, ok := Parse(strings.TrimSuffix(line, "\n"))
		if !ok {
			if group != nil {
				damaged = true
			}
			continue
		}
		switch r.Kind {
		case Intent, Checkpoint:
			group, damaged = nil, false
		case Put, Delete:
			if group == nil {
				group = map[int64]Change{}
			}
			if r.Kind == Delete {
				group[r.ID] = Change{Deleted: true, Prev: r.Prev}
			} else if r.Content == nil {
				damaged = true
			} else {
				group[r.ID] = Change{Content: r.Content, Stamp: r.Stamp, Prev: r.Prev}
			}
		case Mtime:
			if !damaged {
				for id, c := range group {
					c.End = pos
					history[id] = append(history[id], c)
				}
			}
			group, damaged = nil, false
		}
	}
	return history
}

// LastCheckpoint returns the offset of the last whole C line of the log
// held in the first size bytes of r and the record it holds, or ok false
// if it has none. It reads backwards a chunk at a time into one buffer:
// a long log without a recent checkpoint (one written without group
// commit has none) costs a read of it, not a copy of it in memory.
func LastCheckpoint(r io.ReaderAt, size int64) (off int64, rec Record, ok bool, err error) {
	return lastCheckpoint(r, size, 1<<20)
}

func lastCheckpoint(r io.ReaderAt, size int64, chunk int64) (int64, Record, bool, error) {
	// A window holds the byte before its first candidate (to tell a line's
	// start) and the byte after its last (a "C " across its end).
	buf := make([]byte, min(size, chunk+2))
	for hi := size; hi > 0; {
		lo := max(0, hi-chunk)
		start, end := max(0, lo-1), min(size, hi+1)
		b := buf[:end-start]
		if _, err := r.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, Record{}, false, err
		}
		for j := len(b); ; {
			i := bytes.LastIndex(b[:j], []byte("C "))
			if i < 0 {
				break
			}
			j = i + 1 // next, the ones before i ("C C " holds two)
			p := start + int64(i)
			if p < lo || p >= hi || (p > 0 && b[i-1] != '\n') {
				continue // another window's, or inside a line
			}
			line, whole, err := lineAt(r, p, size)
			if err != nil {
				return 0, Record{}, false, err
			}
			if rec, ok := Parse(line); whole && ok && rec.Kind == Checkpoint {
				return p, rec, true, nil
			}
		}
		hi = lo
	}
	return 0, Record{}, false, nil
}

// lineAt reads the line that starts at off in the first size bytes of r,
// without its newline, and whether it is whole (a newline ends it).
func lineAt(r io.ReaderAt, off, size int64) (string, bool, error) {
	var line []byte
	piece := make([]byte, 256) // a checkpoint's line fits
	for off < size {
		n := int(min(int64(len(piece)), size-off))
		if _, err := r.ReadAt(piece[:n], off); err != nil && !errors.Is(err, io.EOF) {
			return "", false, err
		}
		if nl := bytes.IndexByte(piece[:n], '\n'); nl >= 0 {
			return string(append(line, piece[:nl]...)), true, nil
		}
		line, off = append(line, piece[:n]...), off+int64(n)
	}
	return "", false, nil
}

// Package changelog is the record format of a task directory's change log:
// one line per change, appended by every writer under the directory lock,
// read by every other process to learn what changed without reading the
// task files. To a reader a torn or garbled line (a writer killed in
// mid-append) costs a reload of the task it names, or a rescan, never a
// wrong answer; the files stay the source of truth, and every write is
// durable in them before its record is appended. Log is a store's hold
// on the file (log.go): what it has read, and how it appends.
//
// The lines:
//
//	I <mtime> <id>...                  a write of these tasks is about to commit; the directory's mtime before it
//	P <id> <ino> <size> <mtime> <task JSON>   task id was written, as this
//	D <id>                             task id was deleted
//	M <mtime>                          the directory's mtime after a write: the end of its record
//
// A writer appends I before its commit point and P, D and M after it. A
// reader that finds an I not followed by the P or D of each id it names
// (the writer died, or its append failed) reloads those tasks from their
// files; one whose own view of the directory's mtime differs from the I's
// rescans the directory. So a record lost after the commit point never
// leaves a reader stale. Readers of older versions skip I lines.
//
// Earlier versions, which used the log as a redo log for group commit,
// also wrote C (checkpoint) and X (deletion) lines, and P and D lines that
// named the version they replaced; they parse, and the extra fields are
// ignored.
package changelog

import (
	"bytes"
	"fmt"
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
	// Older is a line of an earlier version that says nothing a reader
	// uses now (a checkpoint, an announced deletion).
	Older Kind = 'C'
)

// Stamp identifies one version of a file: a replaced file has a new inode.
type Stamp struct {
	Ino   uint64
	Size  int64
	Mtime int64 // nanoseconds
}

// Record is one line of the log.
type Record struct {
	Kind    Kind
	ID      int64 // Put, Delete
	Stamp   Stamp // Put, when Content is set
	Content []byte
	Mtime   int64   // Mtime, Intent
	IDs     []int64 // Intent
}

// AppendPut appends the record of a task file written with content (JSON
// on one line) and stamp.
func AppendPut(buf []byte, id int64, st Stamp, content []byte) []byte {
	buf = fmt.Appendf(buf, "P %d %d %d %d ", id, st.Ino, st.Size, st.Mtime)
	return append(append(buf, content...), '\n')
}

// AppendDelete appends the record of a removed task file.
func AppendDelete(buf []byte, id int64) []byte { return fmt.Appendf(buf, "D %d\n", id) }

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
	case "C", "X":
		return Record{Kind: Older}, rest != ""
	case "D":
		id, _, _ := strings.Cut(rest, " ") // an earlier version's rev and version follow
		n, err := strconv.ParseInt(id, 10, 64)
		return Record{Kind: Delete, ID: n}, err == nil && n > 0
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
			content := f[4]
			if !strings.HasPrefix(content, "{") {
				// An earlier version's record names the version it
				// replaced before the content.
				_, content, _ = strings.Cut(content, " ")
			}
			if e1 == nil && e2 == nil && e3 == nil && strings.HasPrefix(content, "{") {
				r.Stamp, r.Content = Stamp{Ino: ino, Size: size, Mtime: mtime}, []byte(content)
			}
		}
		return r, true
	}
	return Record{}, false
}

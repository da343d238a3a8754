// The snapshot: a disposable copy of the decoded tasks with the stamp of
// the file each was read from, so that a cold open reads one file and
// stats the rest instead of reading every task file.

package taskgraph

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io/fs"
	"maps"
	"slices"
	"time"
	"unsafe"

	"github.com/taskgraph-dev/taskgraph/internal/atomicfile"
	"github.com/taskgraph-dev/taskgraph/internal/cachedir"
)

// The snapshot is cachedir.Name/snapshotName. It is a cache, never the
// truth: each task in it is used only while its file's stamp (inode,
// size, mtime) is the one recorded, so a task written since — by
// taskgraph, by hand, by the reference — is read from its file, and a
// file that is gone is gone. It is written outside the lock by whoever
// scanned, replaced atomically but not synced; one that is missing,
// damaged or not a regular file is ignored (and replaced when it can be).
// It lives in a directory of its own so that replacing it leaves the task
// directory's mtime, which every store watches, alone. Git ignores it.
const snapshotName = "snapshot"

// snapshotMagic starts a snapshot; the version changes with the encoding,
// and with what a read of a task file accepts (3: Rules.Bounded, UTF-8
// only), so that no snapshot hands out a task its file no longer gives.
const snapshotMagic = "taskgraph snapshot 6\n"

// snapshotMin is how many task files a scan must have read (not taken
// from the snapshot) before it writes a new one: below it, reading them
// costs less than writing the snapshot.
var snapshotMin = 256

// minSnapshotEntry is the fewest bytes an entry takes: a varint for each
// of its 23 numbers, lengths and counts.
const minSnapshotEntry = 23

// maxSnapshotSize bounds what is read of a snapshot.
const maxSnapshotSize = 1 << 31

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshotEntry is a task as the snapshot holds it.
type snapshotEntry struct {
	stamp stamp
	task  *Task
}

// encodeSnapshot renders the tasks of g with their stamps.
func encodeSnapshot(g *graph, stamps map[ID]stamp) []byte {
	e := snapEncoder{b: make([]byte, 0, 256*len(g.ids))}
	e.b = append(e.b, snapshotMagic...)
	n := 0
	for _, id := range g.ids {
		if _, ok := stamps[id]; ok && g.tasks[id] != nil {
			n++
		}
	}
	e.uint(uint64(n))
	for _, id := range g.ids {
		st, ok := stamps[id]
		t := g.tasks[id]
		if !ok || t == nil {
			continue
		}
		e.uint(uint64(id))
		e.uint(st.Ino)
		e.int(st.Size)
		e.int(st.Mtime)
		for _, s := range []string{t.Subject, t.Description, string(t.Status), t.Owner, t.PrevOwner, t.Key, t.Reason, t.Result} {
			e.str(s)
		}
		encodeList(&e, t.BlockedBy, func(id ID) { e.int(int64(id)) })
		encodeList(&e, t.Labels, e.str)
		e.int(int64(t.Priority))
		e.int(t.Rev)
		for _, tm := range []time.Time{t.CreatedAt, t.UpdatedAt, t.ClaimedAt, t.LeaseExpiresAt} {
			e.time(tm)
		}
		if t.Metadata == nil {
			e.str("")
		} else {
			data, _ := json.Marshal(t.Metadata) // it came from JSON: it goes back
			e.str(string(data))
		}
		if x := extrasOf(t); x.empty() {
			e.str("")
		} else {
			data, _ := json.Marshal(x) // plain values: it marshals
			e.str(string(data))
		}
		unknown := t.unknownFields()
		e.uint(uint64(len(unknown)))
		for _, k := range slices.Sorted(maps.Keys(unknown)) {
			e.str(k)
			e.str(string(unknown[k]))
		}
	}
	return binary.LittleEndian.AppendUint32(e.b, crc32.Checksum(e.b, castagnoli))
}

// snapExtras holds a task's notes, history and schedule in a snapshot, as
// JSON: rare enough not to need the compact form of the other fields.
type snapExtras struct {
	Notes       []Note        `json:"n,omitempty"`
	History     []Transition  `json:"h,omitempty"`
	NotBefore   time.Time     `json:"nb,omitzero"`
	Due         time.Time     `json:"d,omitzero"`
	MaxAttempts int           `json:"ma,omitempty"`
	Attempts    int           `json:"a,omitempty"`
	Backoff     time.Duration `json:"b,omitempty"`
	Parent      ID            `json:"p,omitempty"`
	MaxRuntime  time.Duration `json:"mr,omitempty"`
	Window      time.Duration `json:"pw,omitempty"`
	Keys        *taskKeys     `json:"k,omitempty"` // write keys (writekeys.go)
	Approval    bool          `json:"na,omitempty"`
	Via         string        `json:"cv,omitempty"`
	Links       []Link        `json:"ln,omitempty"`
	Check       string        `json:"ck,omitempty"`
	Acceptance  []string      `json:"ac,omitempty"`
}

func extrasOf(t *Task) snapExtras {
	x := t.extra()
	return snapExtras{t.Notes, t.History, t.NotBefore, t.Due, t.MaxAttempts, t.Attempts, t.Backoff, t.Parent, x.MaxRuntime, x.ProgressWindow, x.keys, x.NeedsApproval, x.CreatedVia, x.Links, x.Check, x.Acceptance}
}

func (x snapExtras) empty() bool {
	return len(x.Notes)+len(x.History) == 0 && x.NotBefore.IsZero() && x.Due.IsZero() && x.MaxAttempts == 0 && x.Attempts == 0 && x.Backoff == 0 && x.Parent == 0 &&
		x.MaxRuntime == 0 && x.Window == 0 && x.Keys == nil && !x.Approval && x.Via == "" && len(x.Links) == 0 && x.Check == "" && len(x.Acceptance) == 0
}

func (x snapExtras) apply(t *Task) {
	t.Notes, t.History = nilIfEmpty(x.Notes), nilIfEmpty(x.History)
	t.NotBefore, t.Due, t.MaxAttempts, t.Attempts, t.Backoff, t.Parent = x.NotBefore, x.Due, x.MaxAttempts, x.Attempts, x.Backoff, x.Parent
	if x.MaxRuntime != 0 || x.Window != 0 {
		setLiveness(t, x.MaxRuntime, x.Window)
	}
	if !x.Keys.empty() {
		t.editExtra().keys = x.Keys
	}
	if x.Approval || x.Via != "" || len(x.Links) > 0 {
		e := t.editExtra()
		e.NeedsApproval, e.CreatedVia, e.Links = x.Approval, x.Via, nilIfEmpty(x.Links)
	}
	if x.Check != "" || len(x.Acceptance) > 0 {
		setCheck(t, x.Check, x.Acceptance)
	}
}

// decodeSnapshot returns the entries of a snapshot, or an error if it is
// not one this code wrote whole. The strings of the tasks it returns are
// data's memory: data is handed over, and must never be written again.
func decodeSnapshot(data []byte) ([]snapshotEntry, error) {
	if len(data) < len(snapshotMagic)+4 || string(data[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errors.New("not a snapshot of this version")
	}
	body, sum := data[:len(data)-4], binary.LittleEndian.Uint32(data[len(data)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, errors.New("checksum mismatch")
	}
	// The strings of every task are slices of the body, seen as a string
	// rather than copied (ten megabytes at a hundred thousand tasks): no
	// one writes to data again (the caller hands it over, and nothing
	// here writes to it or lets a []byte of it out), so the strings
	// never change.
	d := snapDecoder{b: body[len(snapshotMagic):]}
	d.text = unsafe.String(unsafe.SliceData(d.b), len(d.b))
	n := d.uint()
	if n > uint64(len(d.b))/minSnapshotEntry {
		return nil, errors.New("bad count") // the slab below is sized by it
	}
	out := make([]snapshotEntry, 0, n)
	slab := make([]Task, n) // one allocation for every task
	for i := range n {
		var en snapshotEntry
		t := &slab[i]
		t.ID = ID(d.uint())
		en.stamp = stamp{Ino: d.uint(), Size: d.int(), Mtime: d.int()}
		for _, p := range []*string{&t.Subject, &t.Description, (*string)(&t.Status), &t.Owner, &t.PrevOwner, &t.Key, &t.Reason, &t.Result} {
			*p = d.str()
		}
		t.BlockedBy = decodeList(&d, func() ID { return ID(d.int()) })
		t.Labels = decodeList(&d, d.str)
		t.Priority = Priority(d.int())
		t.Rev = d.int()
		for _, p := range []*time.Time{&t.CreatedAt, &t.UpdatedAt, &t.ClaimedAt, &t.LeaseExpiresAt} {
			*p = d.time()
		}
		if meta := d.str(); meta != "" && d.err == nil {
			if err := json.Unmarshal([]byte(meta), &t.Metadata); err != nil {
				return nil, err
			}
		}
		if extras := d.str(); extras != "" && d.err == nil {
			var x snapExtras
			if err := json.Unmarshal([]byte(extras), &x); err != nil {
				return nil, err
			}
			x.apply(t)
		}
		if k := d.uint(); k > 0 && k <= uint64(len(d.b)) {
			x := t.editExtra()
			x.unknown = make(map[string]json.RawMessage, k)
			for range k {
				key := d.str()
				x.unknown[key] = json.RawMessage(d.str())
			}
		}
		if d.err != nil {
			return nil, d.err
		}
		if t.ID <= 0 || t.ID > MaxID || !t.Status.Valid() || !t.Priority.Valid() {
			return nil, errors.New("a task out of range")
		}
		en.task = t
		out = append(out, en)
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, errors.New("trailing or truncated data")
	}
	return out, nil
}

// snapEncoder appends the snapshot's primitives: varints, and strings
// and lists prefixed by their length (+1, so that 0 stands for nil).
type snapEncoder struct{ b []byte }

func (e *snapEncoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *snapEncoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *snapEncoder) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }

// encodeList appends a list, nil kept apart from empty, each element by
// put.
func encodeList[T any](e *snapEncoder, list []T, put func(T)) {
	if list == nil {
		e.uint(0)
		return
	}
	e.uint(uint64(len(list)) + 1)
	for _, v := range list {
		put(v)
	}
}

// time keeps a time as decoding its file gave it: the zero time; a UTC
// time as nanoseconds; any other as its text, parsed again.
func (e *snapEncoder) time(t time.Time) {
	switch {
	case t.IsZero():
		e.uint(0)
	case t.Location() == time.UTC:
		e.uint(1)
		e.int(t.UnixNano())
	default:
		e.uint(2)
		e.str(t.Format(time.RFC3339Nano))
	}
}

// snapDecoder reads what snapEncoder wrote; the first problem sticks in
// err and every later read returns zero values.
type snapDecoder struct {
	b    []byte
	text string // b's bytes as a string, from the start of b at the decode's start
	err  error
}

var errTruncated = errors.New("truncated")

func (d *snapDecoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *snapDecoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *snapDecoder) str() string {
	n := d.uint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errTruncated
		return ""
	}
	at := len(d.text) - len(d.b)
	s := d.text[at : at+int(n)]
	d.b = d.b[n:]
	return s
}

// decodeList reads what encodeList wrote, each element by get.
func decodeList[T any](d *snapDecoder, get func() T) []T {
	n := d.uint()
	if n == 0 || d.err != nil || n-1 > uint64(len(d.b)) {
		if n != 0 {
			d.err = errTruncated
		}
		return nil
	}
	list := make([]T, n-1)
	for i := range list {
		list[i] = get()
	}
	return list
}

func (d *snapDecoder) time() time.Time {
	switch d.uint() {
	case 0:
		return time.Time{}
	case 1:
		return time.Unix(0, d.int()).UTC()
	case 2:
		t, err := time.Parse(time.RFC3339Nano, d.str())
		if err != nil && d.err == nil {
			d.err = err
		}
		return t
	}
	if d.err == nil {
		d.err = errors.New("bad time")
	}
	return time.Time{}
}

// loadSnapshot fills an empty cache from the snapshot, if there is a
// usable one: the scan that follows stats every task file and reads only
// those whose stamp differs. It reports whether it loaded one.
func (s *FileStore) loadSnapshot() bool {
	cache, err := cachedir.Open(s.root)
	if err != nil {
		return false
	}
	defer cache.Close()
	d, err := cache.Open(".")
	if err != nil {
		return false
	}
	defer d.Close()
	fi, data, err := readFile(newDirFS(cache, d), cache, cachedir.Name, snapshotName, maxSnapshotSize)
	if fi == nil || err != nil {
		return false
	}
	entries, err := decodeSnapshot(data) // data is theirs: it is not used again here
	if err != nil {
		return false
	}
	ids := make([]ID, len(entries))
	tasks := make([]*Task, len(entries))
	for i, en := range entries {
		ids[i], tasks[i] = en.task.ID, en.task
	}
	if len(s.stamps) == 0 {
		s.stamps = make(map[ID]stamp, len(entries)) // sized once rather than grown
	}
	s.hub.change(s.g, ids, func() {
		s.g.load(tasks) // in id order, as encodeSnapshot wrote them
		for _, en := range entries {
			s.stamps[en.task.ID] = en.stamp
		}
	})
	return true
}

// writeSnapshot replaces the snapshot with the cache, if the last scans
// read enough files to make it worth it. It runs after the lock is
// released; a failure (a read-only directory, a full disk, a cache
// directory that is a file) costs only the next cold open's time.
func (s *FileStore) writeSnapshot() {
	if s.snapshotLoads < snapshotMin {
		return
	}
	s.snapshotLoads = 0
	if err := s.root.Mkdir(cachedir.Name, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return
	}
	cache, err := cachedir.Open(s.root)
	if err != nil {
		return
	}
	defer cache.Close()
	if d, err := cache.Open("."); err == nil {
		// What a writer killed mid-write left (another's write in
		// progress, removed too, just fails).
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, n := range names {
			if atomicfile.IsTempOf(n, snapshotName) {
				_ = cache.Remove(n)
			}
		}
	}
	_ = atomicfile.WriteNoSync(cache, snapshotName, encodeSnapshot(s.g, s.stamps), s.cfg.filePerm)
}

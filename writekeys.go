// Write keys: a write made with a key (WithWriteKey) records the key in
// the files it writes, in the same rename (or journal) that commits the
// change, so that a retry whose answer was lost — across a restart of
// the process that made the first attempt — can ask the store whether
// the first attempt happened (KeyRecorder), and is never applied twice.

package taskgraph

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// WriteKeyWindow is how long a store that records write keys
// (KeyRecorder) keeps them: a write's key is recalled for at least this
// long after the write. A retry must come within it.
const WriteKeyWindow = 10 * time.Minute

// maxTaskKeys bounds the keys a task keeps: past it, the oldest go first,
// and the task records that keys of the window were lost (keysLost), so
// that a key not found is then not taken for a write that never
// happened.
const maxTaskKeys = 64

// maxWriteKeyLen bounds a key: the hub passes a digest of 22 bytes.
const maxWriteKeyLen = 64

// writeKeyCtx is the context key of WithWriteKey.
type writeKeyCtx struct{}

// WithWriteKey returns ctx carrying key, a write's idempotency key (at
// most 64 bytes of letters, digits, '-' and '_'; anything else is
// ignored): a store that records keys (KeyRecorder) writes it into every
// task file the write changes, in the same commit, and RecallWrite finds
// it for WriteKeyWindow. The hub passes a digest of the client's key,
// its token and its request. Other stores ignore it.
func WithWriteKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, writeKeyCtx{}, key)
}

// WriteKeyOf returns the key WithWriteKey put in ctx, or "" if none (or
// one that is not a valid key): what a store that records keys records.
func WriteKeyOf(ctx context.Context) string {
	key, _ := ctx.Value(writeKeyCtx{}).(string)
	if len(key) > maxWriteKeyLen {
		return ""
	}
	for _, c := range []byte(key) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return ""
		}
	}
	return key
}

// KeyRecorder is implemented by stores that record write keys with the
// writes they guard (see WithWriteKey), in what the write itself
// commits: FileStore in the task files it writes, pgstore in the write's
// transaction. MemStore does not: what it remembers ends with the
// process.
type KeyRecorder interface {
	// RecallWrite says whether a write with key was committed within
	// WriteKeyWindow, and what it wrote.
	RecallWrite(ctx context.Context, key string) (WriteRecord, error)
}

// WriteRecord is what a store recalls of a keyed write (KeyRecorder).
type WriteRecord struct {
	// Found: a write with the key was committed, at At.
	Found bool
	// Unsure: the key was not found, but the store forgot keys of the
	// window early (a task written more than 64 times in it): the write
	// may have happened. False when Found.
	Unsure bool
	At     time.Time
	// Tasks are the tasks of the write's answer, in its order (a plan's,
	// in input order; none for a delete), and Revs the Rev each had
	// right after it: the task's current Rev is the same if nothing
	// wrote it since.
	Tasks []ID
	Revs  []int64
	// Refused: the write changed the graph and returned an error (a
	// claim that failed its task because the lapse used its last
	// attempt): its answer is not the tasks.
	Refused bool
}

// keyRecord is a write's key as a task file keeps it ("writeKeys"): the
// key, when, the task's rev after the write, the task's place in the
// write's answer (or that it is not in it), and whether the write was
// refused.
type keyRecord struct {
	Key     string    `json:"key"`
	At      time.Time `json:"at"`
	Rev     int64     `json:"rev"`
	Index   int       `json:"i,omitempty"`
	Side    bool      `json:"side,omitempty"` // written, but not in the answer (a blocker edge of another task)
	Refused bool      `json:"refused,omitempty"`
}

// taskKeys are the write keys a task file keeps: the last WriteKeyWindow's,
// at most maxTaskKeys, and when the newest it dropped early was written.
type taskKeys struct {
	Keys []keyRecord `json:"keys,omitempty"`
	Lost time.Time   `json:"lost,omitzero"`
}

func (k *taskKeys) empty() bool { return k == nil || len(k.Keys) == 0 && k.Lost.IsZero() }

// recordKey records the key in ctx, if any, in every task p writes, and
// drops from them the keys past the window. It runs on every plan
// (checked), before its files are encoded. A task that holds the key
// already was written by a write with it (another attempt, through
// another process): this one is refused, and applies nothing twice.
func recordKey(ctx context.Context, p *plan, now time.Time) error {
	key := WriteKeyOf(ctx)
	var index map[ID]int // a plan's tasks' places in its answer
	if key != "" && len(p.ids) > 0 {
		index = make(map[ID]int, len(p.ids))
		for i, id := range p.ids {
			index[id] = i
		}
	}
	for _, t := range p.put {
		old := t.extra().keys
		if key == "" && old == nil {
			continue
		}
		var k taskKeys
		if old != nil {
			k = *old
			k.Keys = slices.DeleteFunc(slices.Clone(k.Keys), func(r keyRecord) bool { return !r.At.After(now.Add(-WriteKeyWindow)) })
			if !k.Lost.After(now.Add(-WriteKeyWindow)) {
				k.Lost = time.Time{}
			}
		}
		if key != "" && old != nil && slices.ContainsFunc(old.Keys, func(r keyRecord) bool { return r.Key == key }) {
			return fmt.Errorf("taskgraph: task %d was written by a write with this key already, by another attempt; this one was not applied (re-read): %w", t.ID, ErrUnknownOutcome)
		}
		if key != "" {
			r := keyRecord{Key: key, At: now, Rev: t.Rev, Refused: p.after != nil}
			if i, ok := index[t.ID]; ok {
				r.Index = i
			} else {
				r.Side = len(p.ids) > 0 || t.ID != p.result
			}
			k.Keys = append(k.Keys, r)
		}
		if n := len(k.Keys) - maxTaskKeys; n > 0 {
			k.Lost = k.Keys[n-1].At
			k.Keys = slices.Delete(k.Keys, 0, n)
		}
		x := t.editExtra()
		x.keys = nil
		if !k.empty() {
			x.keys = &k
		}
		t.tidy()
	}
	return nil
}

// recall finds key in g: the write-key half of RecallWrite.
func (g *graph) recall(key string, now time.Time) WriteRecord {
	var r WriteRecord
	type hit struct {
		id    ID
		index int
	}
	var hits []hit
	cut := now.Add(-WriteKeyWindow)
	for id, t := range g.tasks {
		k := t.extra().keys
		if k == nil {
			continue
		}
		if k.Lost.After(cut) {
			r.Unsure = true
		}
		for _, rec := range k.Keys {
			if rec.Key != key || key == "" {
				continue
			}
			r.Found, r.At, r.Refused = true, rec.At, rec.Refused
			if !rec.Side {
				hits = append(hits, hit{id, rec.Index})
				r.Revs = append(r.Revs, rec.Rev)
			}
		}
	}
	if !r.Found {
		return WriteRecord{Unsure: r.Unsure}
	}
	r.Unsure = false
	order := make([]int, len(hits))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return hits[a].index - hits[b].index })
	revs := r.Revs
	r.Tasks, r.Revs = make([]ID, len(hits)), make([]int64, len(hits))
	for i, j := range order {
		r.Tasks[i], r.Revs[i] = hits[j].id, revs[j]
	}
	return r
}

// RecallWrite says whether a write made with key (WithWriteKey) was
// committed within WriteKeyWindow, from the task files it wrote.
func (s *FileStore) RecallWrite(ctx context.Context, key string) (WriteRecord, error) {
	var r WriteRecord
	err := s.read(ctx, nil, func(g *graph) error {
		r = g.recall(key, s.now())
		return nil
	})
	return r, err
}

var _ KeyRecorder = (*FileStore)(nil)

// decodeWriteKeys reads the "writeKeys" field of a task file into t, as
// bounded as a write leaves it: past maxTaskKeys the oldest are dropped
// and counted lost; a key that is not one is refused.
func decodeWriteKeys(t *Task, raw map[string]json.RawMessage) error {
	v, ok := raw["writeKeys"]
	if !ok || string(v) == "null" {
		return nil
	}
	var k taskKeys
	if err := json.Unmarshal(v, &k); err != nil {
		return fmt.Errorf(`field "writeKeys" is not {keys: [{key, at, rev}], lost}: %v`, err)
	}
	for _, r := range k.Keys {
		if r.Key == "" || WriteKeyOf(WithWriteKey(context.Background(), r.Key)) != r.Key || r.Index < 0 {
			return fmt.Errorf(`field "writeKeys" holds %q, not a write key`, r.Key)
		}
	}
	if n := len(k.Keys) - maxTaskKeys; n > 0 {
		k.Lost = k.Keys[n-1].At
		k.Keys = k.Keys[n:]
	}
	if !k.empty() {
		t.editExtra().keys = &k
	}
	return nil
}

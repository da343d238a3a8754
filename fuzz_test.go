package taskgraph

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzDecodeTask: the task-file decoder never panics, names the problem
// when it refuses, and its fast path agrees with the field-by-field one.
// Whatever it accepts survives an encode/decode round trip unchanged.
func FuzzDecodeTask(f *testing.F) {
	f.Add([]byte(`{"id": 1, "subject": "Setup project", "description": "", "status": "pending", "blockedBy": [], "owner": ""}`))
	f.Add([]byte(`{"id": 1, "subject": "x", "status": "in_progress", "blockedBy": [2, 3], "owner": "a", "rev": 4, "metadata": {"k": [1, "v"]}, "createdAt": "2026-12-02T10:00:00Z"}`))
	f.Add([]byte(`{"id": 1, "ID": 2, "subject": "x", "status": "pending", "x-extra": {"a": 1}}`))
	f.Add([]byte(`{"id": 1, "subject": "x", "status": "done"}`))
	f.Add([]byte(`{"id": 1.0, "subject": "x", "status": "pending", "blockedBy": ["2"]}`))
	f.Add([]byte(`{"id": 1, "sub\u006aect": "x", "status": "pending"}`))
	f.Add([]byte(`{"id": 1, "subject": `))
	f.Add([]byte(`{"id": 1, "subject": "x", "status": "failed", "owner": "a", "key": "k", "priority": 0, "labels": ["b", "a", "b"], "reason": "r", "result": ""}`))
	f.Add([]byte(`{"id": 1, "subject": "x", "status": "cancelled", "priority": 7, "labels": [null]}`))
	f.Add([]byte(`{"id": 1, "subject": "x", "status": "completed", "priority": null, "labels": null, "key": null, "result": "ok"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		task, err := decodeTask(1, data)
		if err != nil {
			require.NotEmpty(t, err.Error())
			require.Nil(t, task)
			return
		}
		slow, err := decodeSlow(1, data)
		require.NoError(t, err, "the fast path accepted what the slow path refuses")
		require.Equal(t, normal(slow), normal(task), "fast and slow paths disagree")

		enc, err := encodeTask(task)
		want, werr := jsonTaskFile(task)
		require.Equal(t, werr, err, "encodeTask and encoding/json disagree")
		require.Equal(t, string(want), string(enc), "encodeTask and encoding/json disagree")
		if err != nil {
			return // metadata that JSON cannot encode again, e.g. huge floats
		}
		again, err := decodeTask(1, enc)
		require.NoError(t, err, "re-reading what we wrote: %s", enc)
		require.Equal(t, normal(task), normal(again))
	})
}

// normal makes decoded tasks comparable: times by instant.
func normal(t *Task) Task {
	c := t.clone()
	for _, p := range []*time.Time{&c.CreatedAt, &c.UpdatedAt, &c.ClaimedAt, &c.LeaseExpiresAt} {
		*p = p.UTC()
	}
	if len(c.BlockedBy) == 0 {
		c.BlockedBy = nil
	}
	if c.unknownFields() != nil { // compare unknown values as JSON, not as layout
		u := map[string]json.RawMessage{}
		for k, v := range c.unknownFields() {
			var b bytes.Buffer
			if json.Compact(&b, v) != nil {
				b.Write(v)
			}
			u[k] = b.Bytes()
		}
		c.Extra.unknown = u
	}
	return c
}

// modelBoard is the deliberately simple reference model of the resolver.
// A pending task waits on its blockers — in place of a blocker completed
// out of order (Rules.OutOfOrder), on that one's own blockers that are not
// completed — and is ready when it waits on nothing. Its cause is the
// lowest failed or cancelled task it reaches through blockers that are
// pending or completed out of order: relaxed until nothing changes.
func modelBoard(tasks []Task) (ready, blocked, stranded, inProgress, completed, ended []ID, cause map[ID]ID, cyclic bool) {
	status := map[ID]Status{}
	blockers := map[ID][]ID{}
	for _, t := range tasks {
		status[t.ID] = t.Status
		blockers[t.ID] = t.BlockedBy
	}
	outOfOrder := func(id ID) bool {
		if status[id] != Completed {
			return false
		}
		for _, b := range blockers[id] {
			if status[b] != Completed {
				return true
			}
		}
		return false
	}
	waitsOn := func(t Task) []ID {
		var w []ID
		for _, b := range t.BlockedBy {
			if status[b] != Completed {
				w = append(w, b)
				continue
			}
			for _, bb := range blockers[b] {
				if status[bb] != Completed {
					w = append(w, bb)
				}
			}
		}
		return w
	}
	cause = map[ID]ID{}
	for changed := true; changed; {
		changed = false
		for _, t := range tasks {
			if t.Status != Pending && !outOfOrder(t.ID) {
				continue
			}
			for _, b := range t.BlockedBy {
				c := ID(0)
				switch {
				case status[b] == Failed || status[b] == Cancelled:
					c = b
				case status[b] == Pending || outOfOrder(b):
					c = cause[b]
				}
				if c != 0 && (cause[t.ID] == 0 || c < cause[t.ID]) {
					cause[t.ID], changed = c, true
				}
			}
		}
	}
	for _, t := range tasks {
		switch t.Status {
		case InProgress:
			inProgress = append(inProgress, t.ID)
		case Completed:
			completed = append(completed, t.ID)
		case Failed, Cancelled:
			ended = append(ended, t.ID)
		default:
			switch {
			case len(waitsOn(t)) == 0:
				ready = append(ready, t.ID)
			case cause[t.ID] != 0:
				stranded = append(stranded, t.ID)
			default:
				blocked = append(blocked, t.ID)
			}
		}
	}
	// Cyclic iff repeatedly removing tasks with no remaining existing
	// blockers does not remove everything.
	left := map[ID][]ID{}
	for _, t := range tasks {
		left[t.ID] = t.BlockedBy
	}
	for changed := true; changed; {
		changed = false
		for id, bs := range left {
			free := true
			for _, b := range bs {
				if _, ok := left[b]; ok {
					free = false
				}
			}
			if free {
				delete(left, id)
				changed = true
			}
		}
	}
	return ready, blocked, stranded, inProgress, completed, ended, cause, len(left) > 0
}

// graphFromBytes builds up to 16 tasks with ids 1..n from fuzz input; an
// edge may name a missing id (up to 18).
func graphFromBytes(data []byte) []Task {
	if len(data) == 0 {
		return nil
	}
	n := int(data[0]%16) + 1
	tasks := make([]Task, n)
	statuses := []Status{Pending, Pending, InProgress, Completed, Failed, Cancelled}
	for i := range tasks {
		tasks[i] = Task{ID: ID(i + 1), Status: Pending}
	}
	for i := 1; i+1 < len(data); i += 2 {
		a, b := int(data[i]%byte(n)), ID(data[i+1]%18)+1
		switch {
		case data[i]&0x80 != 0:
			tasks[a].Status = statuses[data[i+1]%byte(len(statuses))]
		case b != tasks[a].ID && !slices.Contains(tasks[a].BlockedBy, b):
			tasks[a].BlockedBy = append(tasks[a].BlockedBy, b)
		}
	}
	return tasks
}

// FuzzResolve checks Resolve, FindCycle and TopoOrder against the model on
// random graphs, with missing ids and hand-made cycles.
func FuzzResolve(f *testing.F) {
	f.Add([]byte{4, 1, 1, 2, 1, 3, 2, 3, 3})
	f.Add([]byte{3, 0, 2, 1, 3, 2, 1})
	f.Add([]byte{8, 0x81, 3, 5, 17, 2, 9})
	f.Add([]byte{6, 0x80, 4, 1, 0, 2, 1, 0x83, 5, 3, 2, 4, 3, 4, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		tasks := graphFromBytes(data)
		ready, blocked, stranded, inProgress, completed, ended, cause, cyclic := modelBoard(tasks)
		b := Resolve(tasks)
		idsOf := func(ts []Task) []ID {
			var out []ID
			for _, t := range ts {
				out = append(out, t.ID)
			}
			return out
		}
		assert.Equal(t, ready, idsOf(b.Ready), "ready")
		assert.Equal(t, blocked, idsOf(b.Blocked), "blocked")
		assert.Equal(t, inProgress, idsOf(b.InProgress), "in progress")
		assert.Equal(t, completed, idsOf(b.Completed), "completed")
		assert.Equal(t, stranded, idsOf(b.Stranded), "stranded")
		assert.Equal(t, ended, idsOf(slices.SortedFunc(slices.Values(slices.Concat(b.Failed, b.Cancelled)), func(a, b Task) int { return int(a.ID - b.ID) })), "failed or cancelled")
		for _, id := range stranded {
			assert.Equal(t, cause[id], b.StrandedBy[id], "the cause of %d", id)
		}
		assert.Len(t, b.StrandedBy, len(stranded))

		cycle := FindCycle(tasks)
		require.Equal(t, cyclic, cycle != nil, "cycle verdict")
		if cycle != nil {
			// Every step a -> b of the path is an edge: b is blocked by a.
			byID := map[ID]Task{}
			for _, t := range tasks {
				byID[t.ID] = t
			}
			require.Equal(t, cycle[0], cycle[len(cycle)-1])
			for i := 0; i+1 < len(cycle); i++ {
				assert.Contains(t, byID[cycle[i+1]].BlockedBy, cycle[i], "path %v", cycle)
			}
		}
		order, err := TopoOrder(tasks)
		if cyclic {
			assert.ErrorIs(t, err, ErrCycle)
			return
		}
		require.NoError(t, err)
		pos := map[ID]int{}
		for i, id := range order {
			pos[id] = i
		}
		require.Len(t, order, len(tasks))
		for _, task := range tasks {
			for _, b := range task.BlockedBy {
				if p, ok := pos[b]; ok {
					assert.Less(t, p, pos[task.ID], "%d before %d", b, task.ID)
				}
			}
		}
	})
}

// FuzzMergeTaskFiles: the merge driver and the decoders it runs never
// hang or panic, on any three versions of a task file. A version a store
// cannot read is refused, not merged. A version x that it reads merges
// with itself into x as git commits it (CleanTaskFile), as base and both
// sides and as two sides that both added it, and that result is a fixed
// point; any merge the driver returns decodes, within the bounds every
// store reads.
func FuzzMergeTaskFiles(f *testing.F) {
	r := rand.New(rand.NewPCG(38, 4))
	for i := range 40 {
		a := randomTask(r, 1, i%2 == 0, true)
		b := a.clone()
		b.Subject, b.Status, b.Owner, b.UpdatedAt = "changed", InProgress, "w", a.UpdatedAt.Add(time.Minute)
		b.Notes = append(b.Notes, Note{At: a.UpdatedAt, Author: "w", Text: "tried"})
		base, _ := encodeTask(&a)
		theirs, _ := encodeTask(&b)
		f.Add(base, base, theirs)
		f.Add([]byte(nil), base, theirs)
	}
	claimed := []byte(`{"id": 1, "subject": "x", "status": "in_progress", "owner": "a", "claimedAt": "2026-01-01T05:00:00+05:00", "updatedAt": "2026-01-01T05:00:00+05:00"}`)
	f.Add(claimed, claimed, claimed)
	f.Add([]byte(`{"id": 1, "subject": "x", "status": "pending"}`), []byte("{\"id\": 1, \"subject\": \"caf\xe9\", \"status\": \"pending\"}"), []byte(`{"id": 1, "subject": "y", "status": "pending"}`))
	f.Add([]byte(`{"id": 1, "subject": "x", "status": "pending", "maxAttempts": 9223372036854775807, "attempts": 9223372036854775805}`), []byte(`{"id": 1, "subject": "x", "status": "pending"}`), []byte(`{"id": 1, "subject": "x", "status": "failed"}`))
	f.Add([]byte(`{"id": 1, "subject": "x", "status": "pending", "labels": ["a"], "blockedBy": [2]}`), []byte(`{"id": 1, "subject": "x", "status": "pending", "labels": ["a", "b"], "blockedBy": [2, 3], "x-extra": 1}`), []byte(`{"id": 1, "subject": "x", "status": "completed", "labels": [], "metadata": {"k": 1}}`))
	const name = ".tasks/task_1.json"
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		done := make(chan struct{})
		var merged []byte
		var err error
		go func() {
			defer close(done)
			merged, _, err = MergeTaskFiles(name, base, ours, theirs)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the merge hangs on\nbase: %q\nours: %q\ntheirs: %q", base, ours, theirs)
		}
		_, errO := decodeTask(1, ours)
		_, errT := decodeTask(1, theirs)
		if errO != nil || errT != nil {
			require.Error(t, err, "a side the store cannot read is merged")
		}
		if err == nil {
			got, derr := decodeTask(1, merged)
			require.NoError(t, derr, "the merge does not decode:\n%s", merged)
			again, _, err := MergeTaskFiles(name, merged, merged, merged)
			require.NoError(t, err)
			require.Equal(t, string(merged), string(again), "a merge is a fixed point")
			require.NoError(t, Rules.Bounded(got))
		}

		for _, x := range [][]byte{base, ours, theirs} {
			task, err := decodeTask(1, x)
			if err != nil {
				continue
			}
			if _, err := encodeTask(task); err != nil {
				continue // metadata that JSON cannot encode again: CleanTaskFile keeps it as it is
			}
			clean := CleanTaskFile(name, x)
			if len(clean) > MaxTaskSize {
				continue // written out in full, no longer a task file: the merge refuses it
			}
			for _, three := range [][3][]byte{{x, x, x}, {nil, x, x}, {clean, clean, clean}} {
				got, conflicts, err := MergeTaskFiles(name, three[0], three[1], three[2])
				require.NoError(t, err, "%s", x)
				require.Empty(t, conflicts, "%s", x)
				require.Equal(t, string(clean), string(got), "merge(x, x, x) is x as git commits it")
			}
		}
	})
}

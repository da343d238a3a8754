package taskgraph

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func file(t *testing.T, task Task) []byte {
	t.Helper()
	if task.ID == 0 {
		task.ID = 7
	}
	if task.Status == "" {
		task.Status = Pending
	}
	if task.CreatedAt.IsZero() {
		task.CreatedAt = t0
	}
	data, err := encodeTask(&task)
	require.NoError(t, err)
	return data
}

func merged(t *testing.T, base, ours, theirs []byte) (*Task, []string) {
	t.Helper()
	out, conflicts, err := MergeTaskFiles(".tasks/task_7.json", base, ours, theirs)
	require.NoError(t, err)
	task, err := decodeTask(7, out)
	require.NoError(t, err, "the merge is a valid task file:\n%s", out)
	assert.NotContains(t, string(out), `"rev"`, "clean: no version")
	assert.NotContains(t, string(out), `"leaseExpiresAt"`, "clean: no lease")
	return task, conflicts
}

func TestMergeTextTakesTheSideThatChangedItOrTheLaterWrite(t *testing.T) {
	base := Task{Subject: "s", Description: "d", UpdatedAt: t0}
	ours := base
	ours.Subject, ours.UpdatedAt = "ours", t0.Add(time.Minute)
	theirs := base
	theirs.Description, theirs.UpdatedAt = "theirs", t0.Add(2*time.Minute)
	got, conflicts := merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Empty(t, conflicts)
	assert.Equal(t, "ours", got.Subject, "only ours changed it")
	assert.Equal(t, "theirs", got.Description, "only theirs changed it")
	assert.Equal(t, t0.Add(2*time.Minute), got.UpdatedAt)

	theirs.Subject = "theirs, later"
	got, conflicts = merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Empty(t, conflicts)
	assert.Equal(t, "theirs, later", got.Subject, "both changed it: the later write")
	got, _ = merged(t, file(t, base), file(t, theirs), file(t, ours))
	assert.Equal(t, "theirs, later", got.Subject, "whichever side it is on")

	theirs.UpdatedAt = ours.UpdatedAt
	got, conflicts = merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Equal(t, "ours", got.Subject, "a tie keeps ours")
	require.Len(t, conflicts, 1)
	assert.Contains(t, conflicts[0], "the subject")
}

func TestMergeEdgesAndLabelsAsSets(t *testing.T) {
	base := Task{BlockedBy: []ID{1, 2}, Labels: []string{"a", "b"}}
	ours := base
	ours.BlockedBy, ours.Labels = []ID{1, 2, 3}, []string{"b"}
	theirs := base
	theirs.BlockedBy, theirs.Labels = []ID{2, 4}, []string{"a", "b", "c"}
	got, conflicts := merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Empty(t, conflicts)
	assert.Equal(t, []ID{2, 3, 4}, got.BlockedBy, "1 removed by theirs, 3 and 4 added")
	assert.Equal(t, []string{"b", "c"}, got.Labels, "a removed by ours, c added by theirs")
}

func TestMergeNotesAndHistoryAsLogs(t *testing.T) {
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	base := Task{Notes: []Note{{At: at(1), Author: "a", Text: "one"}},
		History: []Transition{{At: at(1), Event: HistoryNoted, By: "a"}}}
	ours, theirs := base, base
	ours.Notes = append(slices.Clone(base.Notes), Note{At: at(3), Author: "b", Text: "ours"})
	ours.History = append(slices.Clone(base.History), Transition{At: at(3), Event: HistoryNoted, By: "b"})
	theirs.Notes = append(slices.Clone(base.Notes), Note{At: at(2), Author: "c", Text: "theirs"})
	theirs.History = append(slices.Clone(base.History), Transition{At: at(2), Event: HistoryClaimed, By: "c", Detail: "lease 1h0m0s"})
	got, conflicts := merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Empty(t, conflicts)
	assert.Equal(t, []Note{base.Notes[0], theirs.Notes[1], ours.Notes[1]}, got.Notes, "every note once, in time order")
	assert.Equal(t, []Transition{base.History[0], theirs.History[1], ours.History[1]}, got.History)

	// Both sides as long as a task's may be: the merge keeps the bounds.
	for i := range MaxHistory - 2 {
		ours.History = append(ours.History, Transition{At: at(10 + 2*i), Event: HistoryReleased})
		theirs.History = append(theirs.History, Transition{At: at(11 + 2*i), Event: HistoryReleased})
	}
	for i := range MaxNotes - 2 {
		ours.Notes = append(ours.Notes, Note{At: at(10 + 2*i), Author: "b", Text: "n"})
	}
	got, _ = merged(t, file(t, base), file(t, ours), file(t, theirs))
	require.Len(t, got.History, MaxHistory)
	assert.Equal(t, HistoryEarlier, got.History[0].Event)
	assert.Equal(t, 3+2*(MaxHistory-2)-(MaxHistory-1), got.History[0].Count, "the summary counts what it folded")
	assert.Len(t, got.Notes, MaxNotes)
}

func TestMergeStateFollowsTheWorkflow(t *testing.T) {
	base := Task{UpdatedAt: t0}
	claimed := Task{Status: InProgress, Owner: "alice", ClaimedAt: t0.Add(time.Minute), UpdatedAt: t0.Add(3 * time.Minute),
		LeaseExpiresAt: t0.Add(time.Hour), Rev: 9}
	done := Task{Status: Completed, Owner: "bob", ClaimedAt: t0.Add(time.Minute), Result: "shipped", UpdatedAt: t0.Add(2 * time.Minute)}
	got, conflicts := merged(t, file(t, base), file(t, claimed), file(t, done))
	assert.Empty(t, conflicts)
	assert.Equal(t, Completed, got.Status, "further along the workflow, though written earlier")
	assert.Equal(t, "bob", got.Owner)
	assert.Equal(t, "shipped", got.Result)
	assert.Zero(t, got.Rev)

	failed := Task{Status: Failed, Owner: "carol", Reason: "flaky", UpdatedAt: t0.Add(5 * time.Minute)}
	got, conflicts = merged(t, file(t, base), file(t, done), file(t, failed))
	assert.Equal(t, Failed, got.Status, "two different ends: the later is kept")
	assert.Equal(t, "flaky", got.Reason)
	assert.Empty(t, got.Result, "the state is taken whole")
	require.Len(t, conflicts, 1)
	assert.Contains(t, conflicts[0], `completed ("shipped") here and failed ("flaky") on the other side`)

	other := claimed
	other.Owner, other.UpdatedAt = "dave", t0.Add(time.Hour)
	got, conflicts = merged(t, file(t, base), file(t, claimed), file(t, other))
	assert.Equal(t, "dave", got.Owner)
	require.Len(t, conflicts, 1)
	assert.Contains(t, conflicts[0], "alice holds it here and dave on the other side")

	// A reopen on one side, nothing on the other: the reopen.
	reopened := Task{Status: Pending, UpdatedAt: t0.Add(time.Hour)}
	got, conflicts = merged(t, file(t, failed), file(t, failed), file(t, reopened))
	assert.Empty(t, conflicts)
	assert.Equal(t, Pending, got.Status)
}

func TestMergeMetadataAndUnknownFieldsKeyByKey(t *testing.T) {
	base := Task{Metadata: map[string]any{"a": 1.0, "b": "x"}}
	ours := base
	ours.Metadata = map[string]any{"a": 2.0, "b": "x"}
	theirs := base
	theirs.Metadata = map[string]any{"a": 1.0, "c": true}
	baseFile := file(t, base)
	oursFile := []byte(strings.Replace(string(file(t, ours)), "\n}\n", ",\n  \"x-ours\": 1\n}\n", 1))
	got, conflicts := merged(t, baseFile, oursFile, file(t, theirs))
	assert.Empty(t, conflicts)
	assert.Equal(t, map[string]any{"a": 2.0, "c": true}, got.Metadata, "a changed by ours, b removed and c added by theirs")
	assert.Equal(t, json.RawMessage("1"), got.unknownFields()["x-ours"])
}

func TestMergeTwoTasksUnderOneIDIsAConflict(t *testing.T) {
	ours := Task{Subject: "ours", CreatedAt: t0}
	theirs := Task{Subject: "theirs", CreatedAt: t0.Add(time.Second)}
	got, conflicts := merged(t, nil, file(t, ours), file(t, theirs))
	assert.Equal(t, "ours", got.Subject)
	require.Len(t, conflicts, 1)
	assert.Contains(t, conflicts[0], "two different tasks got id 7")
	assert.Contains(t, conflicts[0], "git show :3:.tasks/task_7.json")

	// Both sides added the same task (a cherry-pick): merged.
	same := Task{Subject: "same", CreatedAt: t0, UpdatedAt: t0}
	later := same
	later.Description, later.UpdatedAt = "more", t0.Add(time.Minute)
	got, conflicts = merged(t, nil, file(t, same), file(t, later))
	assert.Empty(t, conflicts)
	assert.Equal(t, "more", got.Description)
}

func TestMergeMetaTakesTheHigherMark(t *testing.T) {
	out, conflicts, err := MergeTaskFiles(".tasks/.taskgraph.meta", []byte(`{"highWater": 3}`), []byte(`{"highWater": 5}`), []byte(`{"highWater": 482193000004}`))
	require.NoError(t, err)
	assert.Empty(t, conflicts)
	assert.JSONEq(t, `{"highWater": 482193000004}`, string(out))
}

func TestMergeRefusesWhatItCannotRead(t *testing.T) {
	_, _, err := MergeTaskFiles(".tasks/task_7.json", nil, []byte("{"), file(t, Task{}))
	assert.ErrorContains(t, err, "our version")
	_, _, err = MergeTaskFiles(".tasks/notes.txt", nil, nil, nil)
	assert.ErrorContains(t, err, "not a task file")
}

func TestCleanTaskFile(t *testing.T) {
	data := file(t, Task{Status: InProgress, Owner: "alice", ClaimedAt: t0, LeaseExpiresAt: t0.Add(time.Hour), Rev: 12, UpdatedAt: t0})
	out := CleanTaskFile("task_7.json", data)
	assert.NotContains(t, string(out), "rev")
	assert.NotContains(t, string(out), "leaseExpiresAt")
	assert.Contains(t, string(out), `"owner": "alice"`)
	assert.Equal(t, out, CleanTaskFile("task_7.json", out), "cleaning is idempotent")

	renewed := file(t, Task{Status: InProgress, Owner: "alice", ClaimedAt: t0, LeaseExpiresAt: t0.Add(2 * time.Hour), Rev: 13, UpdatedAt: t0})
	assert.Equal(t, out, CleanTaskFile("task_7.json", renewed), "a renewal leaves nothing for git to see")

	for _, raw := range [][]byte{[]byte("{garbage"), {}, []byte(`{"id": 8, "subject": "wrong id", "status": "pending", "blockedBy": [], "owner": ""}`)} {
		assert.Equal(t, raw, CleanTaskFile("task_7.json", raw), "what it cannot read passes unchanged")
	}
	assert.Equal(t, data, CleanTaskFile(".taskgraph.meta", data))
}

func TestMergeMetaLimits(t *testing.T) {
	base := `{"highWater": 0, "limits": {"gpu": 2, "db": 1, "old": 4}}`
	ours := `{"highWater": 0, "limits": {"gpu": 3, "db": 1, "ci": 2}}`    // gpu raised, old removed, ci added
	theirs := `{"highWater": 0, "limits": {"gpu": 1, "db": 5, "old": 4}}` // gpu lowered, db raised
	out, conflicts, err := MergeTaskFiles(".tasks/.taskgraph.meta", []byte(base), []byte(ours), []byte(theirs))
	require.NoError(t, err)
	assert.Empty(t, conflicts)
	assert.JSONEq(t, `{"highWater": 0, "limits": {"gpu": 1, "db": 5, "ci": 2}}`, string(out),
		"gpu: both changed, the lower; db and ci: the side that changed them; old: removed by ours")
	_, _, err = MergeTaskFiles(".tasks/.taskgraph.meta", []byte(base), []byte(`{"highWater": 0, "limits": {"Bad Label": 1}}`), []byte(theirs))
	assert.Error(t, err, "a limit that is not one is not merged")
}

func TestMergeScheduleAndParent(t *testing.T) {
	base := Task{Parent: 3, MaxAttempts: 3, Backoff: time.Second, UpdatedAt: t0}
	ours := base
	ours.Due, ours.UpdatedAt = t0.Add(48*time.Hour), t0.Add(time.Minute)
	theirs := base
	theirs.MaxAttempts, theirs.NotBefore, theirs.Parent, theirs.UpdatedAt = 5, t0.Add(time.Hour), 4, t0.Add(2*time.Minute)
	got, conflicts := merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Empty(t, conflicts)
	assert.True(t, got.Due.Equal(t0.Add(48*time.Hour)), "ours changed the due time")
	assert.True(t, got.NotBefore.Equal(t0.Add(time.Hour)), "theirs deferred it")
	assert.Equal(t, 5, got.MaxAttempts)
	assert.Equal(t, ID(4), got.Parent)
	assert.Equal(t, time.Second, got.Backoff)

	// Attempts move with the state: a failure with attempts left is the
	// further step of the workflow than a claim made on the other side.
	failed := base
	failed.Status, failed.Attempts, failed.UpdatedAt = Failed, 3, t0.Add(time.Minute)
	claimed := base
	claimed.Status, claimed.Owner, claimed.UpdatedAt = InProgress, "b", t0.Add(2*time.Minute)
	got, _ = merged(t, file(t, base), file(t, failed), file(t, claimed))
	assert.Equal(t, Failed, got.Status)
	assert.Equal(t, 3, got.Attempts)
}

// TestMergeLiveness: MaxRuntime and ProgressWindow merge as every other
// value: the side that changed one wins, both changed it differently the
// later write; a side that cleared both leaves no Extra; unknown fields
// beside them are kept. The clean filter keeps them (they do not move on
// a renewal).
func TestMergeLiveness(t *testing.T) {
	base := Task{UpdatedAt: t0, Extra: &Extra{MaxRuntime: time.Hour}}
	ours := base
	ours.Extra, ours.UpdatedAt = &Extra{MaxRuntime: 2 * time.Hour}, t0.Add(time.Minute)
	theirs := base
	theirs.Extra, theirs.UpdatedAt = &Extra{MaxRuntime: time.Hour, ProgressWindow: 30 * time.Minute}, t0.Add(2*time.Minute)
	oursFile := []byte(strings.Replace(string(file(t, ours)), "\n}\n", ",\n  \"x-ours\": 1\n}\n", 1))
	got, conflicts := merged(t, file(t, base), oursFile, file(t, theirs))
	assert.Empty(t, conflicts)
	require.NotNil(t, got.Extra)
	assert.Equal(t, 2*time.Hour, got.Extra.MaxRuntime, "only ours changed it")
	assert.Equal(t, 30*time.Minute, got.Extra.ProgressWindow, "only theirs set it")
	assert.Equal(t, json.RawMessage("1"), got.unknownFields()["x-ours"])

	theirs.Extra = &Extra{MaxRuntime: 3 * time.Hour}
	got, _ = merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Equal(t, 3*time.Hour, got.Extra.MaxRuntime, "both changed it: the later write")

	theirs.Extra = nil
	got, _ = merged(t, file(t, base), file(t, base), file(t, theirs))
	assert.Nil(t, got.Extra, "cleared on one side, untouched on the other: no Extra")

	claimed := Task{Status: InProgress, Owner: "ann", ClaimedAt: t0, LeaseExpiresAt: t0.Add(time.Minute), Rev: 4,
		Extra: &Extra{MaxRuntime: time.Hour, ProgressWindow: time.Minute}}
	clean, err := decodeTask(7, CleanTaskFile(".tasks/task_7.json", file(t, claimed)))
	require.NoError(t, err)
	assert.Equal(t, claimed.Extra, clean.Extra, "the clean filter keeps the limits")
	assert.True(t, clean.LeaseExpiresAt.IsZero(), "and drops the lease, as before")
}

// TestMergeMetaLiveness: the labels' liveness defaults in the meta file
// merge label by label: a change on one side is kept, a change on both
// keeps the stricter (shorter) limit of each, and a removal on one side
// loses to a change on the other.
func TestMergeMetaLiveness(t *testing.T) {
	base := []byte(`{"highWater": 3, "liveness": {"a": {"maxRuntime": "1h"}, "b": {"progressWindow": "10m"}, "c": {"maxRuntime": "2h"}}}`)
	ours := []byte(`{"highWater": 5, "liveness": {"a": {"maxRuntime": "30m"}, "b": {"progressWindow": "10m"}, "c": {"maxRuntime": "1h"}}}`)
	theirs := []byte(`{"highWater": 4, "liveness": {"a": {"maxRuntime": "45m", "progressWindow": "5m"}, "c": {"maxRuntime": "2h"}, "d": {"maxRuntime": "3h"}}}`)
	out, conflicts, err := MergeTaskFiles(".tasks/"+metaFileName, base, ours, theirs)
	require.NoError(t, err)
	assert.Empty(t, conflicts)
	m, err := parseMetaFile(out)
	require.NoError(t, err)
	assert.Equal(t, ID(5), m.HighWater)
	assert.Equal(t, map[string]metaLiveness{
		"a": {MaxRuntime: "30m", ProgressWindow: "5m"}, // both changed: the stricter of each
		"c": {MaxRuntime: "1h"},                        // only ours changed it
		"d": {MaxRuntime: "3h"},                        // theirs added it
	}, m.Liveness, "b: removed by theirs, unchanged by ours")
}

// TestMergeChecks: the merge driver keeps a task's check and acceptance
// items: a change on one side is kept, a change on both takes the later
// write's, and the liveness limits beside them merge on their own.
func TestMergeChecks(t *testing.T) {
	base := Task{UpdatedAt: t0, Extra: &Extra{Check: "test", Acceptance: []string{"tests pass"}}}
	ours := base
	ours.Extra, ours.UpdatedAt = &Extra{Check: "test-all", Acceptance: []string{"tests pass"}, MaxRuntime: time.Hour}, t0.Add(time.Minute)
	theirs := base
	theirs.Extra, theirs.UpdatedAt = &Extra{Check: "test", Acceptance: []string{"tests pass", "docs updated"}}, t0.Add(2*time.Minute)
	got, conflicts := merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Empty(t, conflicts)
	require.NotNil(t, got.Extra)
	assert.Equal(t, "test-all", got.Extra.Check, "only ours changed it")
	assert.Equal(t, []string{"tests pass", "docs updated"}, got.Extra.Acceptance, "only theirs changed them")
	assert.Equal(t, time.Hour, got.Extra.MaxRuntime)

	theirs.Extra = &Extra{Check: "lint", Acceptance: []string{"tests pass"}}
	got, _ = merged(t, file(t, base), file(t, ours), file(t, theirs))
	assert.Equal(t, "lint", got.Extra.Check, "both changed it: the later write")

	got, _ = merged(t, file(t, Task{UpdatedAt: t0}), file(t, Task{UpdatedAt: t0}), file(t, base))
	assert.Equal(t, base.Extra, got.Extra, "added on one side")
	got, _ = merged(t, file(t, base), file(t, base), file(t, Task{UpdatedAt: t0.Add(time.Minute)}))
	assert.Nil(t, got.Extra, "removed on one side, untouched on the other")
}

// TestCheckFieldsBoundedOnRead: a task file holding a check or
// acceptance items past the bounds the writes hold them to is corrupt,
// as any value out of range, and never rewritten.
func TestCheckFieldsBoundedOnRead(t *testing.T) {
	for _, field := range []string{
		`"check": "go test ./..."`,
		`"check": 7`,
		`"acceptance": "one"`,
		`"acceptance": [""]`,
		`"acceptance": [` + strings.Repeat(`"a", `, MaxAcceptance) + `"a"]`,
	} {
		data := []byte(`{"id": 1, "subject": "s", "description": "", "status": "pending", "owner": "", "blockedBy": [], ` + field + `}`)
		_, err := decodeTask(1, data)
		assert.Error(t, err, field)
	}
	good, err := decodeTask(1, []byte(`{"id": 1, "subject": "s", "description": "", "status": "pending", "owner": "", "blockedBy": [], "check": "test", "acceptance": ["it works"]}`))
	require.NoError(t, err)
	assert.Equal(t, &Extra{Check: "test", Acceptance: []string{"it works"}}, good.Extra)
}

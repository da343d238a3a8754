package hub

import (
	"errors"
	"strconv"
	"testing"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
)

// A hub that forgot a key before its window passed (past maxKeys) no
// longer trusts a retry of an unknown key to be a first attempt: it is an
// unknown outcome from then on. A key past its window is forgotten too.
func TestKeysForgetSafely(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	k := newKeys()
	k.now = func() time.Time { return now }
	who := Identity{Name: "a", Role: Agent}
	var fp [32]byte
	run := func(key string) {
		t.Helper()
		e, runs, err := k.begin(who, key, fp, false, false, false)
		if err != nil || !runs {
			t.Fatalf("begin %s: %v %v", key, runs, err)
		}
		k.finish(e, &answer{status: 200, body: []byte("{}")})
	}
	run("first")
	now = now.Add(KeyWindow + time.Second)
	e, runs, err := k.begin(who, "first", fp, true, true, false)
	if err != nil || !runs {
		t.Fatalf("a key past its window is forgotten, and a retry on the same hub runs: %v", err)
	}
	k.finish(e, nil)
	if k.lost {
		t.Fatal("forgetting past the window loses nothing the window promised")
	}
	for i := range maxKeys + 1 {
		run(strconv.Itoa(i))
	}
	if !k.lost {
		t.Fatal("past maxKeys a key within its window was forgotten")
	}
	_, _, err = k.begin(who, "0", fp, true, true, false)
	if !errors.Is(err, tg.ErrUnknownOutcome) {
		t.Fatalf("a retry of a forgotten key: %v, want ErrUnknownOutcome", err)
	}
}

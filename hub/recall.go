// Keys the store remembers: in front of a store that records write keys
// with the writes they guard (tg.KeyRecorder: FileStore, pgstore), a
// retry the hub does not remember — it restarted — is answered from the
// store: as the first attempt was answered if the store recorded its key,
// by running it if the store says it never happened.

package hub

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"

	tg "github.com/taskgraph-dev/taskgraph"
)

// shape is what a write answers, for rebuilding its answer from the
// tasks the store recorded under its key.
type shape int

const (
	unrecorded shape = iota // the store records nothing: the hub's memory alone
	oneTask                 // the task (Create, Update, Claim, ClaimNext, …)
	taskList                // the tasks, in order (CreatePlan)
	completion              // a tg.Completion (Complete)
	noBody                  // 204 (Delete, Load)
)

// shapes gives the shape of each write the store records keys for. The
// limits and liveness defaults are not in task files: a retry of one the
// hub does not remember stays an unknown outcome.
var shapes = map[string]shape{
	"POST /v1/tasks":               oneTask,
	"PATCH /v1/tasks/{id}":         oneTask,
	"POST /v1/tasks/{id}/claim":    oneTask,
	"POST /v1/claim-next":          oneTask,
	"POST /v1/tasks/{id}/renew":    oneTask,
	"POST /v1/tasks/{id}/fail":     oneTask,
	"POST /v1/tasks/{id}/release":  oneTask,
	"POST /v1/tasks/{id}/notes":    oneTask,
	"POST /v1/tasks/{id}/cancel":   oneTask,
	"POST /v1/tasks/{id}/reopen":   oneTask,
	"POST /v1/plans":               taskList,
	"POST /v1/tasks/{id}/complete": completion,
	"DELETE /v1/tasks/{id}":        noBody,
	"POST /v1/load":                noBody,
}

// storeKey is the key a write is recorded under in the store: a digest
// of the client's key and the request (fingerprint, which names the
// token), so that one token's keys never meet another's, and a key
// reused for another request is another key.
func storeKey(key string, fp [32]byte) string {
	h := sha256.New()
	h.Write(fp[:])
	h.Write([]byte(key))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// recaller returns the store's memory of keys for writes of shape sh, or
// nil if the hub has only its own.
func (s *Server) recaller(sh shape) tg.KeyRecorder {
	if sh == unrecorded {
		return nil
	}
	kr, _ := s.store.(tg.KeyRecorder)
	return kr
}

// recall answers a retry the hub does not remember from the store: the
// first attempt's answer if the store recorded the key; nil if the store
// is sure the write never happened (the caller runs it); an unknown
// outcome if it cannot tell.
func (s *Server) recall(ctx context.Context, kr tg.KeyRecorder, sh shape, key string) *answer {
	rec, err := kr.RecallWrite(ctx, key)
	switch {
	case err != nil:
		return errorAnswer(fmt.Errorf("hub: a retry of a write this hub does not remember, and the store could not say whether it happened (%v): %w", err, &unknownOutcomeError{}))
	case rec.Unsure:
		return errorAnswer(fmt.Errorf("hub: a retry of a write this hub does not remember, and the store forgot keys of the last %v early (a task written more than 64 times in it): %w", tg.WriteKeyWindow, &unknownOutcomeError{}))
	case !rec.Found:
		return nil
	}
	s.recalled.Add(1)
	changed := func(why string) *answer {
		return errorAnswer(fmt.Errorf("hub: this write happened (the store recorded its key at %s), but %s, so its answer is gone; re-read: %w",
			rec.At.UTC().Format("15:04:05.000"), why, &unknownOutcomeError{}))
	}
	if rec.Refused {
		return changed("it was refused after changing the graph (a claim that used the task's last attempt)")
	}
	tasks := make([]tg.Task, len(rec.Tasks))
	for i, id := range rec.Tasks {
		t, err := s.store.Get(ctx, id)
		if err != nil || t.Rev != rec.Revs[i] {
			return changed(fmt.Sprintf("task %d changed since", id))
		}
		tasks[i] = t
	}
	switch sh {
	case oneTask:
		if len(tasks) != 1 {
			return changed("the store recorded no task for its answer")
		}
		return jsonAnswer(http.StatusOK, tasks[0])
	case taskList:
		return jsonAnswer(http.StatusOK, tasks)
	case completion:
		if len(tasks) != 1 {
			return changed("the store recorded no task for its answer")
		}
		c := tg.Completion{Task: tasks[0]}
		for _, d := range tasks[0].Blocks {
			if dt, err := s.store.Get(ctx, d); err == nil && ready(ctx, s.store, dt) {
				c.Unblocked = append(c.Unblocked, dt)
			}
		}
		return jsonAnswer(http.StatusOK, c)
	}
	return &answer{status: http.StatusNoContent}
}

// ready says whether t is pending with every blocker completed: the
// Unblocked of a completion rebuilt from the store, as of the retry.
func ready(ctx context.Context, st Store, t tg.Task) bool {
	if t.Status != tg.Pending {
		return false
	}
	for _, b := range t.BlockedBy {
		if bt, err := st.Get(ctx, b); err != nil || bt.Status != tg.Completed {
			return false
		}
	}
	return true
}

// goneOnRetry turns the answer of a delete run again on a retry into an
// unknown outcome when the task is not there: the first attempt may have
// deleted it (a plain delete writes no file to record its key in).
func goneOnRetry(a *answer) *answer {
	if a.status == http.StatusNotFound {
		return errorAnswer(fmt.Errorf("hub: a retry of a delete, and the task is gone: the first attempt may have deleted it (re-read): %w", &unknownOutcomeError{tg.ErrNotFound}))
	}
	return a
}

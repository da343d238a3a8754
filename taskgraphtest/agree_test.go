package taskgraphtest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

func memStore(t *testing.T, now func() time.Time) tg.Store { return tg.NewMemStore(tg.WithClock(now)) }

func TestAgreeMemStore(t *testing.T) {
	Agree(t, memStore)
}

func TestAgreeOnAnyBytes(t *testing.T) {
	for _, in := range [][]byte{nil, {0}, {255, 255, 255}, []byte("go test fuzz v1")} {
		AgreeOn(t, in, memStore)
	}
}

// liar is a MemStore whose one method lies.
type liar struct {
	*tg.MemStore
	claimNext func(tg.Task, error) (tg.Task, error)
}

func (l liar) ClaimNext(ctx context.Context, owner string, opts ...tg.ClaimOption) (tg.Task, error) {
	return l.claimNext(l.MemStore.ClaimNext(ctx, owner, opts...))
}

// sameText has the text of the error it hides, but matches only the
// sentinel is, if any.
type sameText struct{ err, is error }

func (e sameText) Error() string        { return e.err.Error() }
func (e sameText) Is(target error) bool { return e.is != nil && target == e.is }

func TestAgreeFailsOnDisagreement(t *testing.T) {
	for _, c := range []struct {
		name string
		want string // a regexp for the store's line
		lie  func(tg.Task, error) (tg.Task, error)
	}{
		{"other text", regexp.QuoteMeta(`error "no ready task!" matching [ErrNoReady]`), func(task tg.Task, err error) (tg.Task, error) {
			if errors.Is(err, tg.ErrNoReady) {
				return task, fmt.Errorf("%w!", err)
			}
			return task, err
		}},
		{"no sentinel", regexp.QuoteMeta(`error "no ready task" matching []`), func(task tg.Task, err error) (tg.Task, error) {
			if errors.Is(err, tg.ErrNoReady) {
				return task, sameText{err: err}
			}
			return task, err
		}},
		{"other sentinel", `error ".*" matching \[ErrNotFound\]`, func(task tg.Task, err error) (tg.Task, error) {
			if errors.Is(err, tg.ErrInvalid) {
				return task, sameText{err: err, is: tg.ErrNotFound}
			}
			return task, err
		}},
		{"other time", `ClaimedAt:\S+\.\d{3}001Z`, func(task tg.Task, err error) (tg.Task, error) {
			task.ClaimedAt = task.ClaimedAt.Add(time.Microsecond)
			return task, err
		}},
		{"other blockers", regexp.QuoteMeta(`BlockedBy:[0]`), func(task tg.Task, err error) (tg.Task, error) {
			if err == nil && len(task.BlockedBy) == 0 {
				task.BlockedBy = []tg.ID{0}
			}
			return task, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := agree(t, agreeInput(1), agreeSteps, func(t *testing.T, now func() time.Time) tg.Store {
				return liar{tg.NewMemStore(tg.WithClock(now)), c.lie}
			})
			require.Error(t, err)
			var d *disagreement
			require.ErrorAs(t, err, &d)
			assert.Contains(t, d.op, "ClaimNext(")
			assert.GreaterOrEqual(t, d.step, 0)
			assert.Contains(t, err.Error(), fmt.Sprintf("step %d, %s: the stores disagree", d.step, d.op))
			assert.Regexp(t, `\n    store:    .*`+c.want, err.Error())
			t.Log(err)
		})
	}
}

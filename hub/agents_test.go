package hub_test

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// 64 agents, each with its own token and its own client, work a graph of
// 1,000 tasks with dependencies through one hub in front of a FileStore
// (taskgraph.Work: claims with leases, renewals, waits on the hub's
// events): every task is completed exactly once, by the agent whose log
// has it, and never before its blockers.
func TestManyAgentsOverHTTP(t *testing.T) {
	const agents, tasks = 64, 1000
	store := openFile(t)
	r := rand.New(rand.NewPCG(41, 64))
	plan := make([]tg.NewTask, tasks)
	for i := range plan {
		plan[i] = tg.NewTask{Subject: "task", Key: "t" + itoa(i)}
		for range r.IntN(3) {
			if i > 0 {
				plan[i].After = append(plan[i].After, "t"+itoa(r.IntN(i)))
			}
		}
	}
	_, err := store.CreatePlan(ctx, plan)
	require.NoError(t, err)

	tokens := &hub.MemTokens{}
	api := hub.NewServer(store, tokens)
	ts := httptest.NewServer(api)
	t.Cleanup(func() { store.Close() })
	t.Cleanup(ts.Close)
	t.Cleanup(func() { api.Close() })

	wctx, cancel := context.WithTimeout(ctx, raceSlowdown*time.Minute) // about 11 s without the race detector
	defer cancel()
	var mu sync.Mutex
	doneBy := map[tg.ID]string{}
	dup := []tg.ID{}
	var wg sync.WaitGroup
	errs := make([]error, agents)
	for a := range agents {
		name := "agent-" + itoa(a)
		tok, err := tokens.Add(ctx, name, hub.Agent)
		require.NoError(t, err)
		c, err := hub.NewClient(ts.URL, tok)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			errs[a] = tg.Work(wctx, c, name, func(ctx context.Context, task tg.Task) error {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := doneBy[task.ID]; ok {
					dup = append(dup, task.ID)
				}
				doneBy[task.ID] = name
				return nil
			}, tg.WorkLease(time.Minute))
		}()
	}
	wg.Wait()
	for a, err := range errs {
		require.NoError(t, err, "agent %d", a)
	}
	assert.Empty(t, dup, "no task worked twice")
	require.Len(t, doneBy, tasks)
	all, err := store.List(ctx)
	require.NoError(t, err)
	byID := map[tg.ID]tg.Task{}
	for _, task := range all {
		byID[task.ID] = task
	}
	for _, task := range all {
		require.Equal(t, tg.Completed, task.Status, "task %d", task.ID)
		assert.Equal(t, doneBy[task.ID], task.Owner, "task %d completed by the agent that worked it", task.ID)
		for _, b := range task.BlockedBy {
			assert.False(t, byID[b].UpdatedAt.After(task.ClaimedAt), "task %d claimed before its blocker %d completed", task.ID, b)
		}
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i < 10 {
		return digits[i : i+1]
	}
	return itoa(i/10) + digits[i%10:i%10+1]
}

package hub_test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/hub"
)

// BenchmarkHub measures what the hub adds over loopback to a FileStore of
// 10,000 tasks, operation by operation: each case runs on the store
// itself ("direct") and through a client of a hub in front of it.
//
//	go test -run '^$' -bench Hub -benchtime 2000x ./hub
func BenchmarkHub(b *testing.B) {
	const n = 10_000
	dir := b.TempDir()
	store, err := tg.Open(dir)
	require.NoError(b, err)
	defer store.Close()
	plan := make([]tg.NewTask, n)
	for i := range plan {
		plan[i] = tg.NewTask{Subject: fmt.Sprint("task ", i), Key: fmt.Sprint("k", i)}
	}
	_, err = store.CreatePlan(ctx, plan)
	require.NoError(b, err)
	tokens := &hub.MemTokens{}
	tok, err := tokens.Add(ctx, "bench", hub.Admin)
	require.NoError(b, err)
	api := hub.NewServer(store, tokens, hub.WithRate(0, 0))
	defer api.Close()
	ts := httptest.NewServer(api)
	defer ts.Close()
	client, err := hub.NewClient(ts.URL, tok)
	require.NoError(b, err)
	defer client.Close()

	for _, s := range []struct {
		name  string
		store tg.Store
	}{{"direct", store}, {"hub", client}} {
		b.Run("Get/"+s.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := s.store.Get(ctx, tg.ID(1+i%n)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("Update/"+s.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				d := fmt.Sprint("edit ", i)
				if _, err := s.store.Update(ctx, tg.ID(1+i%n), tg.Patch{Description: &d}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("ClaimNext+Complete/"+s.name, func(b *testing.B) {
			for b.Loop() {
				t, err := s.store.ClaimNext(ctx, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.store.Complete(ctx, t.ID, "bench"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

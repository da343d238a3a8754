package taskgraph_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	tg "github.com/taskgraph-dev/taskgraph"
)

// Leases with an injected clock: no sleeping.
func TestLeaseExpiryWithClock(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	for name, s := range map[string]tg.Store{
		"file": openStore(t, t.TempDir(), tg.WithClock(clock)),
		"mem":  tg.NewMemStore(tg.WithClock(clock)),
	} {
		t.Run(name, func(t *testing.T) {
			a, err := s.Create(ctx, tg.NewTask{Subject: "leased"})
			require.NoError(t, err)
			b, err := s.Create(ctx, tg.NewTask{Subject: "fresh"})
			require.NoError(t, err)
			got, err := s.Claim(ctx, a.ID, "alice", tg.WithLease(time.Minute))
			require.NoError(t, err)
			assert.Equal(t, now.Add(time.Minute), got.LeaseExpiresAt)

			advance(59 * time.Second)
			_, err = s.Claim(ctx, a.ID, "bob")
			assert.ErrorIs(t, err, tg.ErrClaimed, "not expired yet")
			_, err = s.Renew(ctx, a.ID, "alice", time.Minute)
			require.NoError(t, err)
			advance(59 * time.Second)
			_, err = s.Claim(ctx, a.ID, "bob")
			assert.ErrorIs(t, err, tg.ErrClaimed, "renewed")

			advance(2 * time.Second)
			next, err := s.ClaimNext(ctx, "bob")
			require.NoError(t, err)
			assert.Equal(t, b.ID, next.ID, "never-claimed ready tasks come before expired leases")
			next, err = s.ClaimNext(ctx, "carol", tg.WithLease(time.Hour))
			require.NoError(t, err)
			assert.Equal(t, a.ID, next.ID, "then the expired lease")
			assert.Equal(t, "alice", next.PrevOwner)
			_, err = s.Complete(ctx, a.ID, "alice")
			assert.ErrorIs(t, err, tg.ErrClaimed, "alice lost the task")
			_, err = s.Complete(ctx, a.ID, "carol")
			require.NoError(t, err)
		})
	}
}

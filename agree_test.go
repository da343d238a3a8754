package taskgraph_test

import (
	"math/rand/v2"
	"testing"
	"time"

	tg "github.com/taskgraph-dev/taskgraph"
	"github.com/taskgraph-dev/taskgraph/taskgraphtest"
)

// openAgree returns a FileStore on the driver's clock, in a new directory.
func openAgree(opts ...tg.Option) taskgraphtest.NewStoreWithClock {
	return func(t *testing.T, now func() time.Time) tg.Store {
		s, err := tg.Open(t.TempDir(), append(opts, tg.WithClock(now))...)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}

// FuzzStoresAgree runs one operation sequence decoded from the input on a
// FileStore and a MemStore: same results, same errors.
func FuzzStoresAgree(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 1, 2, 9, 3, 1, 2, 8, 4, 1, 7, 3, 5, 2, 6})
	f.Add([]byte{0, 1, 0, 2, 8, 1, 9, 2, 8, 3, 10, 1, 11, 2})
	newStore := openAgree(tg.WithoutSync())
	f.Fuzz(func(t *testing.T, ops []byte) {
		taskgraphtest.AgreeOn(t, ops, newStore)
	})
}

func TestAgreeFileStore(t *testing.T) {
	taskgraphtest.Agree(t, openAgree(tg.WithoutSync()))
}

// TestAgreeFileStoreSync is a shorter run with every fsync made.
func TestAgreeFileStoreSync(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ops := make([]byte, 2000)
	for i := range ops {
		ops[i] = byte(r.Uint32())
	}
	taskgraphtest.AgreeOn(t, ops, openAgree())
}

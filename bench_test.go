//go:build !windows

package taskgraph_test

import (
	"fmt"
	"testing"

	tg "github.com/taskgraph/taskgraph"
)

// Hot-path benchmarks for benchstat comparisons in review. The full
// comparison against the durable-write floor is go run ./bench.

func benchStore(b *testing.B, n int, opts ...tg.Option) *tg.FileStore {
	b.Helper()
	dir := b.TempDir()
	s := openStore(b, dir, append([]tg.Option{tg.WithoutSync()}, opts...)...)
	for i := 1; i <= n; i++ {
		var by []tg.ID
		if i > 1 {
			by = []tg.ID{tg.ID(i - 1)}
		}
		if _, err := s.Create(ctx, tg.NewTask{Subject: fmt.Sprint("task ", i), BlockedBy: by}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkGet(b *testing.B) {
	s := benchStore(b, 1000)
	b.ResetTimer()
	for i := range b.N {
		if _, err := s.Get(ctx, tg.ID(1+i%1000)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBoard1000(b *testing.B) {
	s := benchStore(b, 1000)
	b.ResetTimer()
	for range b.N {
		if _, err := s.Board(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClaimComplete(b *testing.B) {
	s := benchStore(b, 0)
	b.ResetTimer()
	for range b.N {
		t, err := s.Create(ctx, tg.NewTask{Subject: "x"})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Claim(ctx, t.ID, "b"); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Complete(ctx, t.ID, "b"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkColdOpen1000(b *testing.B) {
	s := benchStore(b, 1000)
	dir := s.Dir()
	b.ResetTimer()
	for range b.N {
		fresh, err := tg.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fresh.Board(ctx); err != nil {
			b.Fatal(err)
		}
		fresh.Close()
	}
}

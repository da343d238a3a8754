package graphpath

import (
	"slices"
	"testing"
)

func TestJoin(t *testing.T) {
	// 1 -> 2 -> 3 -> 4 -> 5, the searches meeting at 3.
	fwd := map[int]int{1: 1, 2: 1, 3: 2}
	bwd := map[int]int{5: 5, 4: 5, 3: 4}
	if got, want := Join(fwd, bwd, 1, 5, 3), []int{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("Join = %v, want %v", got, want)
	}
	// Meeting at an end.
	if got, want := Join(map[int]int{1: 1}, map[int]int{2: 2, 1: 2}, 1, 2, 1), []int{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("Join = %v, want %v", got, want)
	}
}

// Package slicesx holds the slice helper the standard library's slices
// package lacks: Map.
package slicesx

// Map returns f applied to each element of s, in order: a slice of
// len(s), empty but not nil for an empty s (so that JSON writes [] for it).
func Map[S ~[]E, E, T any](s S, f func(E) T) []T {
	out := make([]T, len(s))
	for i, e := range s {
		out[i] = f(e)
	}
	return out
}

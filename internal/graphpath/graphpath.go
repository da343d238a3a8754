// Package graphpath holds the one piece of path finding that the file
// store's and pgstore's cycle checks share: both search from the two ends
// of a proposed edge at once (so that an edge near either end of a long
// chain stays cheap) and, when the searches meet, read the path off the
// predecessor maps each side built.
package graphpath

import "slices"

// Join returns the path from -> … -> m -> … -> to on which a forward search
// from from and a backward search from to met at m. fwd maps each node the
// forward search reached to its predecessor (from maps to itself); bwd maps
// each node the backward search reached to its successor towards to.
func Join[ID comparable](fwd, bwd map[ID]ID, from, to, m ID) []ID {
	var path []ID
	for n := m; ; n = fwd[n] {
		path = append(path, n)
		if n == from {
			break
		}
	}
	slices.Reverse(path)
	for n := m; n != to; {
		n = bwd[n]
		path = append(path, n)
	}
	return path
}

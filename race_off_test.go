//go:build !race

package taskgraph

// raceSlowdown scales time limits in tests: the race detector slows code
// down several times.
const raceSlowdown = 1

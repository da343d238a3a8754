//go:build race

package hub_test

// raceSlowdown scales time limits in tests: the race detector slows code
// down several times.
const raceSlowdown = 10

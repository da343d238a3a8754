//go:build !race

package hub_test

// raceSlowdown scales time limits in tests: 1 without the race detector.
const raceSlowdown = 1

//go:build !race

package node

// raceOn: the test binary runs under the race detector (race_on_test.go).
const raceOn = false

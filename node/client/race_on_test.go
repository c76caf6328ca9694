//go:build race

package client

// raceOn: the test binary runs under the race detector, which allocates
// beside every allocation it watches: allocation counts do not hold.
const raceOn = true

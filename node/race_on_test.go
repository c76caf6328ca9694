//go:build race

package node

// raceOn: the test binary runs under the race detector. With
// testing.Short() (the race pass of make test) TestMain leaves out the
// tests of raceLeftOut, whose statements the rest of the pass covers; the
// full pass runs them.
const raceOn = true

//go:build race

package node

// raceOn: the test binary runs under the race detector. With
// testing.Short() (the race pass of make test) the heaviest network tests
// skip themselves where others of the same subsystem give the race
// detector the same paths (raceShort); the full pass runs them.
const raceOn = true

//go:build !race

package client

const raceOn = false

//go:build !riffletest

package mix

import "github.com/riffle-net/riffle/internal/group"

// dhMemoOn is false: every party computes its own layer keys. Only a
// riffletest build keeps a memo (dhmemo_riffletest.go).
func dhMemoOn() bool { return false }

func dhPair(u, y []byte) *[2 * group.ElementSize]byte { return nil }

func dhMemoTake(*[2 * group.ElementSize]byte, *[group.ElementSize]byte) bool { return false }

func dhMemoPut(*[2 * group.ElementSize]byte, *[group.ElementSize]byte) {}

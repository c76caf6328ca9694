package blame

import "github.com/riffle-net/riffle/mix"

// Setup blame (docs/protocol.md §4.2 step 3, §8 step 1): where the walk
// back of a share fault starts.

// WalkStart returns the server whose output position the walk of a share
// fault starts from, and that position (§4.2 step 3, §8 step 1). A U at
// server s's input position p is at S_{s-1}'s output p; a pseudonym at the
// last server's output q is there, and S_{m-1}'s own route comes first.
// A start of -1 means the position is already an input slot (a U opened
// by S_0).
func WalkStart(se *mix.ShareError) (int, int) {
	if se.Pseudonym {
		return se.Server, se.Position
	}
	return se.Server - 1, se.Position
}

// DupWalkStart is the server whose output the walk of a position starts
// from (as WalkStart): −1 when the position is already a slot.
func DupWalkStart(se *mix.ShareError, m int) int {
	if se.Pseudonym {
		return m - 1
	}
	return se.Server - 1
}

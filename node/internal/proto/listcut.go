package proto

import (
	"bytes"
	"encoding/binary"
	"sort"

	"github.com/riffle-net/riffle/internal/wire"
)

// tagListStart is the domain tag of the round-robin start q_0 (§5.3).
const tagListStart = "riffle/v3/request-list-start"

// ListStart is q_0 = H(epoch id ‖ round) mod n of the round-robin cut of
// a round's request list (docs/protocol.md §5.3): a public start nobody
// chooses, n the round's output positions.
func ListStart(epoch [32]byte, round uint32, n int) int {
	if n <= 0 {
		return 0
	}
	var rb [4]byte
	binary.BigEndian.PutUint32(rb[:], round)
	h := TaggedHash(tagListStart, epoch[:], rb[:])
	return int(binary.BigEndian.Uint64(h[:8]) % uint64(n))
}

// RoundRobinCut returns, sorted by byte order, the ids a round's request
// list holds (§5.3): output positions take turns from q0 on, each turn
// taking the position's first requested id (in its payload's order) that
// is in held and not taken yet, until maxRows ids are taken or no
// position has one left. So no pseudonym can push another's requests out
// by asking for many ids: each gets its turn before any gets a second.
//
// A position's ids that are never taken do not change what is taken, so
// running the cut over a subset of the ids held anywhere that contains
// the list gives the list again: that is how a holder checks a proposal
// (omittedHeld) without knowing what the other servers hold.
func RoundRobinCut(q0 int, byPos [][][32]byte, held func([32]byte) bool, maxRows int) [][32]byte {
	n := len(byPos)
	next := make([]int, n) // per position, the index of its next candidate
	taken := map[[32]byte]bool{}
	var out [][32]byte
	for len(out) < maxRows {
		progress := false
		for t := 0; t < n && len(out) < maxRows; t++ {
			q := (q0 + t) % n
			ids := byPos[q]
			for next[q] < len(ids) {
				id := ids[next[q]]
				next[q]++
				if !taken[id] && held(id) {
					taken[id] = true
					out = append(out, id)
					progress = true
					break
				}
			}
		}
		if !progress {
			break
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][:], out[j][:]) < 0 })
	return out
}

// ListPairs returns a request list's (output position, entry) pairs
// (§6.3 v3): for each position in order, each listed id its payload
// requested, once, by entry index. Every server computes them from the
// payloads it published, so a proposal's pairs are checked like its ids.
func ListPairs(byPos [][][32]byte, entries []wire.ListEntry) []wire.ListPair {
	at := make(map[[32]byte]uint32, len(entries))
	for i, le := range entries {
		at[le.ID] = uint32(i)
	}
	var out []wire.ListPair
	for q, ids := range byPos {
		var mine []uint32
		seen := map[uint32]bool{}
		for _, id := range ids {
			if i, ok := at[id]; ok && !seen[i] {
				seen[i] = true
				mine = append(mine, i)
			}
		}
		sort.Slice(mine, func(a, b int) bool { return mine[a] < mine[b] })
		for _, i := range mine {
			out = append(out, wire.ListPair{Pos: uint32(q), Entry: i})
		}
	}
	return out
}

// SamePairs reports whether a and b are the same pairs.
func SamePairs(a, b []wire.ListPair) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package manifests

import (
	"testing"

	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestManifestCaps (§6.4 v3): the index takes at most 4 manifest chunks of
// one pseudonym in an epoch, by round r at most min(4 × publishers, the
// byte ceiling's share of r + 1 rounds of R), one pseudonym at a time in
// turns, in round order whatever order the rounds are published in; what
// the budget leaves waits for later rounds, and what the epoch's end
// still leaves is dropped.
func TestManifestCaps(t *testing.T) {
	t.Parallel()
	cand := func(pos int, tag byte) Cand {
		return Cand{Pos: pos, ID: [32]byte{tag, byte(pos)}, Data: []byte{1}}
	}
	// The defaults: a ceiling of 256 chunks per 256 rounds, one a round.
	mc := Caps{R: 256, B: 256 << 10}
	if proto.IndexCeiling(mc.B) != 256 {
		t.Fatalf("ceiling %d chunks", proto.IndexCeiling(mc.B))
	}
	// Round 1 is published before round 0: it waits.
	if got := mc.Add(1, []Cand{cand(7, 1), cand(3, 1)}); len(got) != 0 {
		t.Fatalf("round 1 taken before round 0: %v", got)
	}
	// Round 0 takes one (its budget), round 1 one more: position 7, the
	// next after 3 in turn, though 3's second came first.
	got := mc.Add(0, []Cand{cand(3, 0)})
	if len(got) != 2 || got[0].Round != 0 || got[1].Round != 1 || len(got[0].Cands) != 1 || len(got[1].Cands) != 1 || got[1].Cands[0].Pos != 7 {
		t.Fatalf("rounds 0 and 1: %+v", got)
	}
	// Position 3's second waited, its bytes dropped (read back from the
	// store); round 2 takes it.
	if q := mc.queue[3]; len(q) != 1 || q[0].Data != nil {
		t.Fatalf("queue of 3: %+v", q)
	}
	got = mc.Add(2, nil)
	if len(got[0].Cands) != 1 || got[0].Cands[0].ID != cand(3, 1).ID {
		t.Fatalf("round 2: %+v", got)
	}
	// Round 3 takes position 3's third; rounds 4 and 5 have nothing.
	for r := uint32(3); r <= 5; r++ {
		var cs []Cand
		if r == 3 {
			cs = append(cs, cand(3, 3))
		}
		mc.Add(r, cs)
	}
	// A crowd in round 6: 70 positions, and position 3's fourth. The
	// budget of round r is r + 1 (the ceiling's share): everyone's
	// first goes before 3's fourth.
	many := []Cand{cand(3, 6)}
	for pos := 79; pos >= 10; pos-- {
		many = append(many, cand(pos, 9))
	}
	got = mc.Add(6, many)
	if mc.total != 7 || len(got[0].Cands) != 3 || got[0].Cands[0].Pos != 10 {
		t.Fatalf("%d taken by round 6, want 7: %+v", mc.total, got)
	}
	var order []int
	for r := uint32(7); r < 80; r++ {
		var cs []Cand
		if r == 7 {
			cs = append(cs, cand(3, 7)) // a fifth: dropped
		}
		for _, c := range mc.Add(r, cs)[0].Cands {
			order = append(order, c.Pos)
		}
	}
	if len(order) != 68 || order[0] != 13 || order[len(order)-1] != 3 || mc.perPos[3] != proto.ManifestsPerPseudonym {
		t.Fatalf("order %v; position 3 has %d", order, mc.perPos[3])
	}
	// A round after a gap waits until the epoch ends, then gets its
	// budget; what is left is dropped.
	if got := mc.Add(90, []Cand{cand(99, 1), cand(98, 1)}); len(got) != 0 {
		t.Fatal("round after a gap taken")
	}
	if got := mc.Flush(); len(got) != 1 || got[0].Round != 90 || len(got[0].Cands) != 2 || len(mc.queue) != 0 {
		t.Fatalf("flush %+v", got)
	}
}

// TestManifestCapsShortEpochs: epochs ended early take the ceiling's
// share of the rounds they ran, so ending epochs early never multiplies
// the index's growth per round: with 200 publishers flooding every round,
// an epoch of r rounds takes at most ceiling·r/R + 1, at every r.
func TestManifestCapsShortEpochs(t *testing.T) {
	const R, b = 256, 256 << 10
	for _, r := range []uint32{1, 2, 7, 64, 255, 256} {
		mc := Caps{R: R, B: b}
		taken := 0
		for x := uint32(0); x < r; x++ {
			var cs []Cand
			for pos := 0; pos < 200; pos++ {
				cs = append(cs, Cand{Pos: pos, ID: [32]byte{byte(x), byte(pos)}})
			}
			for _, mr := range mc.Add(x, cs) {
				taken += len(mr.Cands)
			}
		}
		for _, mr := range mc.Flush() {
			taken += len(mr.Cands)
		}
		bound := proto.IndexCeiling(b)*int(r)/R + 1
		if taken > bound || taken < int(r) {
			t.Fatalf("an epoch of %d rounds took %d, bound %d", r, taken, bound)
		}
	}
	// The cap grows with the publishers, c each, up to the ceiling.
	if proto.IndexCap(1, b) != proto.ManifestsPerPseudonym || proto.IndexCap(200, b) != proto.IndexCeiling(b) || proto.IndexCap(10, proto.MinChunkSize) != 10*proto.ManifestsPerPseudonym {
		t.Fatal("indexCap")
	}
}

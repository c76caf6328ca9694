package blame

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestEquivocationNeverFrames (the rev42b review's G6): m = 5, S_1 and
// S_4 corrupt, S_0 the honest aborter; the honest views split on part 4
// (S_0 and S_2 lack it, S_3 not: a residual disagreement the root relays
// do not cover). All in: S_0 {4}, S_1 {4}, S_2 {4}, S_3 {}, S_4 {}: S_4
// charged. S_1 then signs {}. With a signer's word the parts all its
// attestations lack (a2fe7e6), part 4 lost its backing and the honest S_0
// was charged. Now the second is pivotal (the two words judge apart) and
// charges S_1, proven corrupt by its two signatures: never an honest one.
func TestEquivocationNeverFrames(t *testing.T) {
	f := newFive(t)
	as := []wire.Attest{f.sign(0, 1<<4), f.sign(1, 1<<4), f.sign(2, 1<<4), f.sign(3, 0), f.sign(4, 0)}
	for _, kind := range []uint8{wire.EvAbort, wire.EvVoid} {
		before := f.judge(t, kind, as...)
		if before != f.chain[4] {
			t.Fatalf("kind %d: all in: charged %q, want S_4", kind, before.ShortString())
		}
		after := f.judge(t, kind, append(append([]wire.Attest{}, as...), f.sign(1, 0))...)
		if after != before && after != f.chain[1] {
			t.Errorf("kind %d: S_1's second attestation (taking part 4 back) moved the charge from S_4 to %q, not the equivocator S_1", kind, after.ShortString())
		}
	}
}

package blame

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestEquivocationAddsNoEarlierPart (the rev42b review's G2): m = 5,
// S_1 and S_2 corrupt. S_2 withholds its part from everyone; S_1 its
// part from S_0 and S_3 only. With every attestation in (S_0 {1,2}, S_1
// {2}, S_2 {}, S_3 {1,2}, S_4 {2}), S_2 is charged. Then S_2 hands the
// chain a second attestation lacking part 1. With a signer's word every
// part any of its attestations lacks (5666d7b), part 1 was backed and the
// charge moved to S_1 (with S_1 honest and its part late at S_0 and S_3,
// onto an honest server). Now the second, pivotal, charges S_2 itself.
func TestEquivocationAddsNoEarlierPart(t *testing.T) {
	f := newFive(t)
	as := []wire.Attest{f.sign(0, 1<<1|1<<2), f.sign(1, 1<<2), f.sign(2, 0), f.sign(3, 1<<1|1<<2), f.sign(4, 1<<2)}
	for _, kind := range []uint8{wire.EvAbort, wire.EvVoid} {
		before := f.judge(t, kind, as...)
		if before != f.chain[2] {
			t.Fatalf("kind %d: all in: charged %q, want S_2", kind, before.ShortString())
		}
		after := f.judge(t, kind, append(append([]wire.Attest{}, as...), f.sign(2, 1<<1))...)
		if after != before {
			t.Errorf("kind %d: S_2's second attestation (lacking part 1) moved the charge from S_2 to %q (S_1: %v)", kind, after.ShortString(), after == f.chain[1])
		}
	}
}

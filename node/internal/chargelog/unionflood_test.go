package chargelog

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestUnionFloodKeepsEvidence (the rev42b review's G4 and G2, m = 7,
// S_1, S_2, S_3 corrupt): S_3 withholds its part from all, S_1 its part
// from S_4 and S_5. Honest: S_0 {3}, S_4 {1,3}, S_5 {1,3}, S_6 {3};
// corrupt first words {}: S_3 charged. The corrupt hand an honest server
// 186 further attestations of one bit each, then two lacking part 1.
// Before, each was kept (up to 65 a signer): the record passed the
// wire's 192 and no longer decoded, the next message replaced it and its
// honest attestations, and S_3's charge went to nobody. Now a further
// attestation is kept only if it changes a word within a group's chain
// (seventeen a signer at most): the record decodes with every honest
// attestation, and charges S_3 or a pivotal equivocator, never an honest
// server or nobody.
func TestUnionFloodKeepsEvidence(t *testing.T) {
	ss := signers(t, 7)
	epoch := [32]byte{9}
	const num, round = 4, 5
	ctx := blame.Context{Epoch: epoch, Final: true}
	for _, s := range ss {
		ctx.Chain = append(ctx.Chain, s.id)
	}
	a := &wire.Abort{Epoch: epoch, Number: num, Round: round, Kind: wire.AbortNoPub, Signer: []byte(ss[0].id), Reason: []byte("no publication")}
	a.Sig, _ = proto.Sign(ss[0].priv, proto.AbortDigest(a))
	item := a.Marshal()
	att := func(by int, bits uint64) wire.Attest {
		x := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: num, Kind: wire.AbortNoPub, Round: round}, Lacking: bits, Signer: uint16(by)}
		x.Sig, _ = proto.Sign(ss[by].priv, blame.AttestDigest(&x))
		return x
	}
	base := []wire.Attest{att(0, 1<<3), att(4, 1<<1|1<<3), att(5, 1<<1|1<<3), att(6, 1<<3), att(1, 0), att(2, 0), att(3, 0)}
	var A Log
	A.Init(t.TempDir(), nil, nil)
	for _, l := range []*Log{&A} {
		if _, err := l.LogCharge(&wire.Charge{Kind: wire.EvAbort, Number: num, Item: item, Attests: base}, ctx); err != nil {
			t.Fatal(err)
		}
	}
	charged := func(l *Log) string {
		for _, r := range l.Records(false) {
			return r.Peer
		}
		return "?"
	}
	if charged(&A) != ss[3].id.String() {
		t.Fatalf("all in: want S_3")
	}
	// Bits that back nothing (at most 3 of 6 for any part but 1 and 3),
	// each a new bit: kept, one message within the wire's bound each.
	var flood []wire.Attest
	for _, by := range []int{1, 2, 3} {
		for b := 0; b < 64; b++ {
			if b == 1 || b == 3 {
				continue // the tipping bit, and S_3's part
			}
			flood = append(flood, att(by, 1<<uint(b)))
		}
	}
	for i := 0; i < len(flood); i += 50 {
		ev := &wire.Charge{Kind: wire.EvAbort, Number: num, Item: item, Attests: flood[i:min(i+50, len(flood))]}
		if _, err := A.LogCharge(ev, ctx); err != nil {
			t.Fatal(err)
		}
		var h wire.Charge
		herr := h.Unmarshal(A.HeldCharge(ev))
		t.Logf("A after %d flood attestations: charges %q, held evidence decodes: %v (%d attestations)", min(i+50, len(flood)), charged(&A), herr, len(h.Attests))
	}
	tip := &wire.Charge{Kind: wire.EvAbort, Number: num, Item: item, Attests: []wire.Attest{att(2, 1<<1), att(3, 1<<1)}}
	if _, err := A.LogCharge(tip, ctx); err != nil {
		t.Fatal(err)
	}
	name := map[string]string{"": "nobody"}
	for i, s := range ss {
		name[s.id.String()] = []string{"S_0", "S_1", "S_2", "S_3", "S_4", "S_5", "S_6"}[i]
	}
	var h wire.Charge
	herr := h.Unmarshal(A.HeldCharge(tip))
	t.Logf("A after the last two: charges %s, evidence %d attestations (decodes: %v)", name[charged(&A)], len(h.Attests), herr)
	if herr != nil || len(h.Attests) < len(base) {
		t.Errorf("A's record does not decode (%v) or lost attestations (%d held)", herr, len(h.Attests))
	}
	if c := name[charged(&A)]; c != "S_1" && c != "S_2" && c != "S_3" {
		t.Errorf("A's record charges %s, want a corrupt server (S_3, or a pivotal equivocator)", c)
	}
}

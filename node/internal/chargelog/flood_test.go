package chargelog

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestUnchargedFloodEvictsOnlyItsSigner (the rev41a review's case): S_0
// aborted round 5 for its missing publication; its evidence charges nobody
// yet (S_1's attestation to come). The corrupt S_2 then hands the log
// SeenKeep aborts of its own that charge nobody yet, each its own slot.
// Before, evidence that charged nobody shared one pool of SeenKeep, and
// S_2's flood evicted S_0's record; now each signer has its own budget.
func TestUnchargedFloodEvictsOnlyItsSigner(t *testing.T) {
	ss := signers(t, 3)
	epoch := [32]byte{4}
	ctx := blame.Context{Epoch: epoch, Final: true}
	for _, s := range ss {
		ctx.Chain = append(ctx.Chain, s.id)
	}
	abort := func(by int, round uint32) *wire.Charge {
		a := &wire.Abort{Epoch: epoch, Number: 4, Round: round, Kind: wire.AbortNoPub, Signer: []byte(ss[by].id), Reason: []byte("no publication")}
		a.Sig, _ = proto.Sign(ss[by].priv, proto.AbortDigest(a))
		return &wire.Charge{Kind: wire.EvAbort, Number: 4, Item: a.Marshal()}
	}
	attest := func(by int, round uint32, bits uint64) wire.Attest {
		x := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: 4, Kind: wire.AbortNoPub, Round: round}, Lacking: bits, Signer: uint16(by)}
		x.Sig, _ = proto.Sign(ss[by].priv, blame.AttestDigest(&x))
		return x
	}
	var l Log
	l.Init(t.TempDir(), nil, nil)
	honest := abort(0, 5)
	honest.Attests = []wire.Attest{attest(0, 5, 1<<2)}
	if _, err := l.LogCharge(honest, ctx); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := blame.ChargeOf(honest, ctx); p != "" {
		t.Fatalf("S_0's abort charged %s on its own attestation, want nobody yet", p)
	}
	for i := range SeenKeep {
		ev := abort(2, 6+uint32(i))
		ev.Attests = []wire.Attest{attest(2, 6+uint32(i), 1<<1)}
		if _, err := l.LogCharge(ev, ctx); err != nil {
			t.Fatal(err)
		}
	}
	key := blame.ChargeKey(honest)
	held, mine := false, 0
	for _, r := range l.Records(false) {
		held = held || r.Key == key
		if r.Key != key {
			mine++
		}
	}
	if !held {
		t.Errorf("S_2's %d uncharged aborts evicted S_0's pending evidence", SeenKeep)
	}
	if mine > Keep {
		t.Errorf("%d uncharged records of S_2 kept, want at most %d", mine, Keep)
	}
}

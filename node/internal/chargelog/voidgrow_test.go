package chargelog

import (
	"testing"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestUnchargedVoidsBounded (the rev42b review's G1): one void that
// charges nobody yet a number, sixty numbers. Before, uncharged records
// were budgeted by claimant and a void's was its slot, one an epoch:
// none was ever pruned (60 held). Now voids that charge nobody share one
// pool of SeenKeep: a void carries the whole chain's signatures, so no
// corrupt minority floods it.
func TestUnchargedVoidsBounded(t *testing.T) {
	ss := signers(t, 3)
	var l Log
	l.Init(t.TempDir(), nil, nil)
	const epochs = 60
	for n := uint64(1); n <= epochs; n++ {
		epoch := [32]byte{byte(n), byte(n >> 8), 7}
		ctx := blame.Context{Epoch: epoch, Final: true}
		for _, s := range ss {
			ctx.Chain = append(ctx.Chain, s.id)
		}
		rl := &wire.RoundList{Epoch: epoch, Round: 3, Flags: wire.ListVoid}
		dg := proto.ListDigest(rl)
		for _, s := range ss {
			sig, _ := proto.Sign(s.priv, dg)
			rl.Sigs = append(rl.Sigs, sig)
		}
		at := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: n, Kind: wire.AbortNoPub, Round: 3}, Lacking: 1 << 1, Signer: 0}
		at.Sig, _ = proto.Sign(ss[0].priv, blame.AttestDigest(&at))
		ev := &wire.Charge{Kind: wire.EvVoid, Number: n, Item: rl.Marshal(), Attests: []wire.Attest{at}}
		if p, why, err := blame.ChargeOf(ev, ctx); err != nil || p != "" {
			t.Fatalf("void of %d charged %q (%s, %v), want nobody yet", n, p, why, err)
		}
		if _, err := l.LogCharge(ev, ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := len(l.Records(false))
	t.Logf("%d epochs with one uncharged void each: %d records held", epochs, got)
	if got > SeenKeep {
		t.Errorf("%d uncharged void records held after %d epochs, want at most %d (a bound)", got, epochs, SeenKeep)
	}
}

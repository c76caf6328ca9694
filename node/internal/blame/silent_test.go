package blame

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestSilentChargesPrimary: a primary's receipt of slot 2's onion of
// round 3 (S_1, of five) with the others' attestations that S_1 gave them
// no account of round 3 (wire.EvSilent) charges S_1 once more than half of
// the four others attest it (three), and nobody with two; S_1's own
// attestation and a second copy of one signer's count for nothing; a
// corrupt signer's second, different attestation is charged to it only
// where it is pivotal. A forged, tampered or replayed receipt (of
// another epoch; under another number; its attestations of another
// round) is refused whole and charges nobody.
func TestSilentChargesPrimary(t *testing.T) {
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range 5 {
		priv, err := newKey()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		privs, chain = append(privs, priv), append(chain, id)
	}
	epoch := [32]byte{7}
	ctx := Context{Epoch: epoch, Chain: chain, Final: true}
	receipt := func(by int, ep [32]byte, round uint32) wire.OnionReceipt {
		r := wire.OnionReceipt{Epoch: ep, Round: round, Slot: 2, Server: 1, Digest: [32]byte{0xd1}}
		r.Sig, _ = proto.Sign(privs[by], proto.OnionReceiptDigest(&r))
		return r
	}
	attest := func(by int, round uint32, bits uint64) wire.Attest {
		a := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: 9, Kind: wire.AttestSilent, Round: round}, Lacking: bits, Signer: uint16(by)}
		a.Sig, _ = proto.Sign(privs[by], AttestDigest(&a))
		return a
	}
	silent := func(r wire.OnionReceipt, as ...wire.Attest) *wire.Charge {
		return &wire.Charge{Kind: wire.EvSilent, Number: 9, Item: r.Marshal(), Attests: as}
	}
	const s1 = 1 << 1
	good := receipt(1, epoch, 3)
	for _, c := range []struct {
		name string
		ev   *wire.Charge
		want peer.ID
	}{
		{"three of the four others", silent(good, attest(0, 3, s1), attest(2, 3, s1), attest(4, 3, s1|1<<3)), chain[1]},
		{"two of the four others", silent(good, attest(0, 3, s1), attest(2, 3, s1), attest(3, 3, 0)), ""},
		{"two others and the primary itself", silent(good, attest(0, 3, s1), attest(2, 3, s1), attest(1, 3, s1)), ""},
		{"two others, one of them twice", silent(good, attest(0, 3, s1), attest(2, 3, s1), attest(2, 3, s1)), ""},
		{"no attestation", silent(good), ""},
		{"a corrupt minority's", silent(good, attest(3, 3, s1), attest(4, 3, s1), attest(0, 3, 0), attest(2, 3, 0)), ""},
		{"a pivotal second attestation", silent(good, attest(0, 3, s1), attest(2, 3, s1), attest(3, 3, 0), attest(3, 3, s1)), chain[3]},
		{"a second attestation not pivotal", silent(good, attest(0, 3, s1), attest(2, 3, s1), attest(4, 3, s1), attest(3, 3, 0), attest(3, 3, s1)), chain[1]},
	} {
		p, why, err := ChargeOf(c.ev, ctx)
		if err != nil || p != c.want {
			t.Errorf("%s: charged %q (%v), want %q", c.name, p, err, c.want)
		} else {
			t.Logf("%s: %s", c.name, why)
		}
	}
	tampered := good
	tampered.Digest[0] ^= 1
	backing := []wire.Attest{attest(0, 3, s1), attest(2, 3, s1), attest(4, 3, s1)}
	otherNumber := silent(good, backing...)
	otherNumber.Number = 10
	for _, c := range []struct {
		name string
		ev   *wire.Charge
	}{
		{"a tampered receipt", silent(tampered, backing...)},
		{"a receipt signed by another server under S_1's position", silent(receipt(2, epoch, 3), backing...)},
		{"a receipt of another epoch", silent(receipt(1, [32]byte{8}, 3), backing...)},
		{"a receipt of another round than its attestations", silent(receipt(1, epoch, 4), backing...)},
		{"attestations of another number", otherNumber},
		{"an attestation of another kind", silent(good, attest(0, 3, s1), attest(2, 3, s1), func() wire.Attest {
			a := wire.Attest{AttestReq: wire.AttestReq{Epoch: epoch, Number: 9, Kind: wire.AbortNoPub, Round: 3}, Lacking: s1, Signer: 4}
			a.Sig, _ = proto.Sign(privs[4], AttestDigest(&a))
			return a
		}())},
		{"a forged attestation", silent(good, attest(0, 3, s1), attest(2, 3, s1), func() wire.Attest { a := attest(4, 3, s1); a.Signer = 3; return a }())},
		{"a truncated item", &wire.Charge{Kind: wire.EvSilent, Number: 9, Item: good.Marshal()[:50], Attests: backing}},
	} {
		if p, _, err := ChargeOf(c.ev, ctx); err == nil || p != "" {
			t.Errorf("%s: charged %v (%v), want refused", c.name, p, err)
		}
	}
	if p, _, err := ChargeOf(silent(good, backing...), Context{Epoch: epoch, Chain: chain}); err == nil || p != "" {
		t.Errorf("under no final certificate: charged %v (%v), want refused", p, err)
	}
	// One record a primary and round, whichever receipt shows it: two
	// receipts' attestations are joined.
	other := good
	other.Slot = 5
	other.Sig, _ = proto.Sign(privs[1], proto.OnionReceiptDigest(&other))
	a, b := silent(good, backing[:2]...), silent(other, backing[2])
	if EvidenceSlot(a) == "" || EvidenceSlot(a) != EvidenceSlot(b) || ChargeKey(a) != ChargeKey(b) || ChargeKey(a) == "" {
		t.Errorf("slots %q %q, keys %q %q", EvidenceSlot(a), EvidenceSlot(b), ChargeKey(a), ChargeKey(b))
	}
	if got := ReplayCharges([][]byte{a.Marshal(), b.Marshal()}, func(uint64) (Context, bool) { return ctx, true }); len(got) != 1 || len(got[chain[1]]) != 1 {
		t.Errorf("replayed charges %v, want S_1 once (the two receipts' attestations joined)", got)
	}
}

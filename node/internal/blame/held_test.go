package blame

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestHeldChargesPrimary: a primary's receipt of slot 2's onion of round 3
// and its dry statement of the same slot and round charge it (EvHeld),
// the same whoever carries them; a tampered or mismatched pair, or one
// signed by another server, is refused whole and charges nobody.
func TestHeldChargesPrimary(t *testing.T) {
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range 3 {
		priv, err := newKey()
		if err != nil {
			t.Fatal(err)
		}
		id, _ := peer.IDFromPrivateKey(priv)
		privs, chain = append(privs, priv), append(chain, id)
	}
	epoch := [32]byte{7}
	ctx := Context{Epoch: epoch, Chain: chain, Final: true}
	receipt := func(by int, pos uint16, round, slot uint32) wire.OnionReceipt {
		r := wire.OnionReceipt{Epoch: epoch, Round: round, Slot: slot, Server: pos, Digest: [32]byte{0xd1}}
		r.Sig, _ = proto.Sign(privs[by], proto.OnionReceiptDigest(&r))
		return r
	}
	dry := func(by int, pos uint16, round, slot uint32) wire.Dry {
		d := wire.Dry{Epoch: epoch, Round: round, Slot: slot, Server: pos}
		d.Sig, _ = proto.Sign(privs[by], proto.DryDigest(&d))
		return d
	}
	held := func(r wire.OnionReceipt, d wire.Dry) *wire.Charge {
		return &wire.Charge{Kind: wire.EvHeld, Number: 9, Item: wire.HeldItem(&r, &d)}
	}
	if p, why, err := ChargeOf(held(receipt(1, 1, 3, 2), dry(1, 1, 3, 2)), ctx); err != nil || p != chain[1] {
		t.Fatalf("receipt and dry of one slot: charged %v (%v), want the primary S_1", p, err)
	} else {
		t.Logf("charged S_1: %s", why)
	}
	tampered := receipt(1, 1, 3, 2)
	tampered.Digest[0] ^= 1
	wrongEpoch := receipt(1, 1, 3, 2)
	wrongEpoch.Epoch[0] ^= 1
	wrongEpoch.Sig, _ = proto.Sign(privs[1], proto.OnionReceiptDigest(&wrongEpoch))
	for _, c := range []struct {
		name string
		ev   *wire.Charge
	}{
		{"a tampered receipt", held(tampered, dry(1, 1, 3, 2))},
		{"a receipt signed by another server under S_1's position", held(receipt(2, 1, 3, 2), dry(1, 1, 3, 2))},
		{"a dry statement signed by another server under S_1's position", held(receipt(1, 1, 3, 2), dry(0, 1, 3, 2))},
		{"a receipt of another round", held(receipt(1, 1, 4, 2), dry(1, 1, 3, 2))},
		{"a receipt of another slot", held(receipt(1, 1, 3, 5), dry(1, 1, 3, 2))},
		{"two servers' statements", held(receipt(1, 1, 3, 2), dry(2, 2, 3, 2))},
		{"a receipt of another epoch", held(wrongEpoch, dry(1, 1, 3, 2))},
		{"a position outside the chain", held(receipt(1, 7, 3, 2), dry(1, 7, 3, 2))},
		{"attestations added", func() *wire.Charge {
			ev := held(receipt(1, 1, 3, 2), dry(1, 1, 3, 2))
			ev.Attests = []wire.Attest{{}}
			return ev
		}()},
		{"a truncated item", &wire.Charge{Kind: wire.EvHeld, Number: 9, Item: wire.HeldItem(&wire.OnionReceipt{}, &wire.Dry{})[:50]}},
	} {
		if p, _, err := ChargeOf(c.ev, ctx); err == nil || p != "" {
			t.Errorf("%s: charged %v (%v), want refused", c.name, p, err)
		}
	}
	// One record a primary and epoch, named by what was signed.
	a, b := held(receipt(1, 1, 3, 2), dry(1, 1, 3, 2)), held(receipt(1, 1, 4, 6), dry(1, 1, 4, 6))
	if EvidenceSlot(a) == "" || EvidenceSlot(a) != EvidenceSlot(b) || ChargeKey(a) == ChargeKey(b) || ChargeKey(a) == "" {
		t.Errorf("slots %q %q, keys %q %q", EvidenceSlot(a), EvidenceSlot(b), ChargeKey(a), ChargeKey(b))
	}
	if got := ReplayCharges([][]byte{a.Marshal(), b.Marshal()}, func(uint64) (Context, bool) { return ctx, true }); len(got) != 1 || len(got[chain[1]]) != 1 {
		t.Errorf("replayed charges %v, want S_1 once", got)
	}
}

package blame

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestForwardChargesPrimary: a primary's receipt of an onion and its
// forward root of the round without that onion charge the primary on the
// two signatures alone; a root that holds the onion, another round's or
// primary's, a tampered or forged signature, attestations added, or a
// root out of slot order charge nobody (refused whole).
func TestForwardChargesPrimary(t *testing.T) {
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
	root := func(by int, pos uint16, round uint32, xs ...wire.AccountEntry) wire.ForwardRoot {
		f := wire.ForwardRoot{Epoch: epoch, Round: round, Server: pos, Entries: xs}
		f.Sig, _ = proto.Sign(privs[by], proto.ForwardRootDigest(&f))
		return f
	}
	other := wire.AccountEntry{Slot: 5, Digest: [32]byte{0xd5}}
	fwd := func(r wire.OnionReceipt, f wire.ForwardRoot) *wire.Charge {
		return &wire.Charge{Kind: wire.EvForward, Number: 9, Item: wire.ForwardItem(&r, &f)}
	}
	for _, c := range []struct {
		name string
		f    wire.ForwardRoot
	}{
		{"the slot left out", root(1, 1, 3, other)},
		{"the slot with another onion", root(1, 1, 3, wire.AccountEntry{Slot: 2, Digest: [32]byte{0xee}}, other)},
	} {
		if p, why, err := ChargeOf(fwd(receipt(1, 1, 3, 2), c.f), ctx); err != nil || p != chain[1] {
			t.Fatalf("%s: charged %v (%v), want the primary S_1", c.name, p, err)
		} else {
			t.Logf("%s: charged S_1: %s", c.name, why)
		}
	}
	tampered := root(1, 1, 3, other)
	tampered.Entries[0].Digest[0] ^= 1
	for _, c := range []struct {
		name string
		ev   *wire.Charge
	}{
		{"a root that holds the onion", fwd(receipt(1, 1, 3, 2), root(1, 1, 3, wire.AccountEntry{Slot: 2, Digest: [32]byte{0xd1}}, other))},
		{"a tampered root", fwd(receipt(1, 1, 3, 2), tampered)},
		{"a root signed by another server under S_1's position", fwd(receipt(1, 1, 3, 2), root(2, 1, 3, other))},
		{"a root of another round", fwd(receipt(1, 1, 3, 2), root(1, 1, 4, other))},
		{"another primary's root", fwd(receipt(1, 1, 3, 2), root(2, 2, 3, other))},
		{"a root out of slot order", fwd(receipt(1, 1, 3, 2), root(1, 1, 3, other, wire.AccountEntry{Slot: 4}))},
		{"a position outside the chain", fwd(receipt(1, 7, 3, 2), root(1, 7, 3, other))},
		{"attestations added", func() *wire.Charge {
			ev := fwd(receipt(1, 1, 3, 2), root(1, 1, 3, other))
			ev.Attests = []wire.Attest{{}}
			return ev
		}()},
		{"a truncated item", &wire.Charge{Kind: wire.EvForward, Number: 9, Item: wire.ForwardItem(&wire.OnionReceipt{}, &wire.ForwardRoot{})[:50]}},
	} {
		if p, _, err := ChargeOf(c.ev, ctx); err == nil || p != "" {
			t.Errorf("%s: charged %v (%v), want refused", c.name, p, err)
		}
	}
	// One record a primary and epoch, named by what was signed.
	a, b := fwd(receipt(1, 1, 3, 2), root(1, 1, 3, other)), fwd(receipt(1, 1, 4, 6), root(1, 1, 4, other))
	if EvidenceSlot(a) == "" || EvidenceSlot(a) != EvidenceSlot(b) || ChargeKey(a) == ChargeKey(b) || ChargeKey(a) == "" {
		t.Errorf("slots %q %q, keys %q %q", EvidenceSlot(a), EvidenceSlot(b), ChargeKey(a), ChargeKey(b))
	}
	if got := ReplayCharges([][]byte{a.Marshal(), b.Marshal()}, func(uint64) (Context, bool) { return ctx, true }); len(got) != 1 || len(got[chain[1]]) != 1 {
		t.Errorf("replayed charges %v, want S_1 once", got)
	}
}

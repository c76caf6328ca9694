package blame

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// TestAccountChargesPrimary: a primary's receipt of an onion and its
// final account of the round without that onion charge the primary on
// the two signatures alone; an account signed before the end, one that
// holds the onion, another round's or primary's, a tampered or forged
// signature, attestations added, or a truncated item charge nobody
// (refused whole).
func TestAccountChargesPrimary(t *testing.T) {
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
	account := func(by int, pos uint16, round uint32, ended bool, xs ...wire.AccountEntry) wire.Account {
		a := wire.Account{Epoch: epoch, Round: round, Server: pos, Ended: ended, Entries: xs}
		a.Sig, _ = proto.Sign(privs[by], proto.AccountDigest(&a))
		return a
	}
	other := wire.AccountEntry{Slot: 5, Digest: [32]byte{0xd5}}
	acc := func(r wire.OnionReceipt, a wire.Account) *wire.Charge {
		return &wire.Charge{Kind: wire.EvAccount, Number: 9, Item: wire.AccountItem(&r, &a)}
	}
	for _, c := range []struct {
		name string
		a    wire.Account
	}{
		{"the slot left out", account(1, 1, 3, true, other)},
		{"no entry at all", account(1, 1, 3, true)},
		{"the slot with another onion", account(1, 1, 3, true, wire.AccountEntry{Slot: 2, Digest: [32]byte{0xee}}, other)},
	} {
		if p, why, err := ChargeOf(acc(receipt(1, 1, 3, 2), c.a), ctx); err != nil || p != chain[1] {
			t.Fatalf("%s: charged %v (%v), want the primary S_1", c.name, p, err)
		} else {
			t.Logf("%s: charged S_1: %s", c.name, why)
		}
	}
	tampered := account(1, 1, 3, true, other)
	tampered.Entries[0].Digest[0] ^= 1
	for _, c := range []struct {
		name string
		ev   *wire.Charge
	}{
		{"an account signed before the end", acc(receipt(1, 1, 3, 2), account(1, 1, 3, false, other))},
		{"an account that holds the onion", acc(receipt(1, 1, 3, 2), account(1, 1, 3, true, wire.AccountEntry{Slot: 2, Digest: [32]byte{0xd1}}, other))},
		{"a tampered account", acc(receipt(1, 1, 3, 2), tampered)},
		{"an account signed by another server under S_1's position", acc(receipt(1, 1, 3, 2), account(2, 1, 3, true, other))},
		{"an account of another round", acc(receipt(1, 1, 3, 2), account(1, 1, 4, true, other))},
		{"another primary's account", acc(receipt(1, 1, 3, 2), account(2, 2, 3, true, other))},
		{"a position outside the chain", acc(receipt(1, 7, 3, 2), account(1, 7, 3, true, other))},
		{"attestations added", func() *wire.Charge {
			ev := acc(receipt(1, 1, 3, 2), account(1, 1, 3, true, other))
			ev.Attests = []wire.Attest{{}}
			return ev
		}()},
		{"a truncated item", &wire.Charge{Kind: wire.EvAccount, Number: 9, Item: wire.AccountItem(&wire.OnionReceipt{}, &wire.Account{})[:50]}},
	} {
		if p, _, err := ChargeOf(c.ev, ctx); err == nil || p != "" {
			t.Errorf("%s: charged %v (%v), want refused", c.name, p, err)
		}
	}
	// One record a primary and epoch, named by what was signed.
	a, b := acc(receipt(1, 1, 3, 2), account(1, 1, 3, true, other)), acc(receipt(1, 1, 4, 6), account(1, 1, 4, true, other))
	if EvidenceSlot(a) == "" || EvidenceSlot(a) != EvidenceSlot(b) || ChargeKey(a) == ChargeKey(b) || ChargeKey(a) == "" {
		t.Errorf("slots %q %q, keys %q %q", EvidenceSlot(a), EvidenceSlot(b), ChargeKey(a), ChargeKey(b))
	}
	if got := ReplayCharges([][]byte{a.Marshal(), b.Marshal()}, func(uint64) (Context, bool) { return ctx, true }); len(got) != 1 || len(got[chain[1]]) != 1 {
		t.Errorf("replayed charges %v, want S_1 once", got)
	}
}

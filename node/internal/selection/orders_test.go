package selection

import (
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestOrdersChecked (§3 v3 "signed orders"): the primaries' orders as
// signed pass; an order reordered, repeating a key, of another epoch,
// signed by another primary, or a registration the orders do not list,
// is refused; a reply to the close must carry its own order of exactly
// its registrations.
func TestOrdersChecked(t *testing.T) {
	id := [32]byte{9}
	var privs []crypto.PrivKey
	var chain []peer.ID
	for range 2 {
		priv, _, err := crypto.GenerateEd25519Key(nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := peer.IDFromPrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		privs, chain = append(privs, priv), append(chain, p)
	}
	regs := [][]wire.Forwarded{}
	orders := make([]wire.Order, 2)
	for p := range 2 {
		var l []wire.Forwarded
		var keys [][32]byte
		for i := range 3 {
			k := [32]byte{byte(p), byte(i), 1}
			l, keys = append(l, wire.Forwarded{Primary: uint16(p), Reg: wire.Register{RegKey: k}}), append(keys, k)
		}
		o, err := SignOrder(privs[p], id, p, keys)
		if err != nil {
			t.Fatal(err)
		}
		regs, orders[p] = append(regs, l), o
	}
	all := append(append([]wire.Forwarded(nil), regs[0]...), regs[1]...)
	rank, err := CheckOrders(orders, id, chain, all)
	if err != nil || rank[[32]byte{1, 2, 1}] != 2 {
		t.Fatalf("the signed orders: %v, rank %v", err, rank)
	}
	refused := func(what, want string, os []wire.Order, lists ...[]wire.Forwarded) {
		t.Helper()
		if _, err := CheckOrders(os, id, chain, lists...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", what, err, want)
		}
	}
	clone := func() []wire.Order {
		os := append([]wire.Order(nil), orders...)
		for i := range os {
			os[i].Keys = append([][32]byte(nil), os[i].Keys...)
		}
		return os
	}
	os := clone()
	os[0].Keys[0], os[0].Keys[1] = os[0].Keys[1], os[0].Keys[0]
	refused("reordered", "not signed by it", os, all)
	os = clone()
	os[1].Keys[1] = os[1].Keys[0]
	os[1], _ = SignOrder(privs[1], id, 1, os[1].Keys)
	refused("a key twice", "repeats a key", os, all)
	os = clone()
	os[0], _ = SignOrder(privs[1], id, 0, os[0].Keys)
	refused("signed by another", "not signed by it", os, all)
	os = clone()
	os[1], _ = SignOrder(privs[1], [32]byte{8}, 1, os[1].Keys)
	refused("another epoch", "another epoch", os, all)
	extra := append(all, wire.Forwarded{Primary: 1, Reg: wire.Register{RegKey: [32]byte{7}}})
	refused("unlisted", "not in its signed order", orders, extra)
	refused("one order short", "carries 1 orders for 2 servers", orders[:1], all)

	rl := wire.RegList{Regs: regs[1], Orders: orders[1:]}
	if _, err := OrderOfReply(&rl, id, 1, chain); err != nil {
		t.Fatalf("a reply with its own order: %v", err)
	}
	rl.Regs = append([]wire.Forwarded(nil), regs[1]...)
	rl.Regs[0], rl.Regs[1] = rl.Regs[1], rl.Regs[0]
	if _, err := OrderOfReply(&rl, id, 1, chain); err == nil || !strings.Contains(err.Error(), "differs from its list") {
		t.Fatalf("a reply in another order than its signed one: %v", err)
	}
}

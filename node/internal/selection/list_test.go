package selection

import (
	"errors"
	"strings"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// TestDistinct (§4.1): no registration or X25519 key twice in the
// chosen slots, nor one key as both.
func TestDistinct(t *testing.T) {
	r := func(k, x byte) wire.Register { return wire.Register{RegKey: [32]byte{k}, XKey: [32]byte{x}} }
	if err := Distinct([]wire.Register{r(1, 2), r(3, 4)}); err != nil {
		t.Fatal(err)
	}
	for _, regs := range [][]wire.Register{{r(1, 2), r(1, 4)}, {r(1, 2), r(3, 2)}, {r(1, 2), r(2, 4)}, {r(5, 5)}} {
		if err := Distinct(regs); err == nil {
			t.Errorf("%v taken", regs)
		}
	}
}

// TestCheckListSigned: every registration of the list, chosen or in
// Rest, must carry its primary's signature, after the orders' check.
func TestCheckListSigned(t *testing.T) {
	priv, _, err := crypto.GenerateEd25519Key(nil)
	if err != nil {
		t.Fatal(err)
	}
	p0, err := peer.IDFromPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	id := [32]byte{3}
	o, err := SignOrder(priv, id, 0, [][32]byte{{1}, {2}})
	if err != nil {
		t.Fatal(err)
	}
	rl := &wire.RegList{Regs: []wire.Forwarded{{Reg: wire.Register{RegKey: [32]byte{1}}}}, Rest: []wire.Forwarded{{Reg: wire.Register{RegKey: [32]byte{2}}}}, Orders: []wire.Order{o}}
	all := func(*wire.Forwarded) error { return nil }
	regs, prims, err := CheckList(rl, id, []peer.ID{p0}, all)
	if err != nil || len(regs) != 1 || regs[0].RegKey != ([32]byte{1}) || len(prims) != 1 {
		t.Fatalf("a signed list: %v, %d chosen", err, len(regs))
	}
	forgedRest := func(f *wire.Forwarded) error {
		if f.Reg.RegKey == ([32]byte{2}) {
			return errors.New("forged")
		}
		return nil
	}
	if _, _, err := CheckList(rl, id, []peer.ID{p0}, forgedRest); err == nil || !strings.Contains(err.Error(), "unselected registration 0") {
		t.Fatalf("a forged unselected registration: %v", err)
	}
	if _, _, err := CheckList(rl, id, []peer.ID{"other"}, all); err == nil || !strings.Contains(err.Error(), "not signed by it") {
		t.Fatalf("an order signed by another server: %v", err)
	}
}

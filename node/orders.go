package node

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// A primary's signed order (docs/protocol.md §3 v3). At the close each
// primary signs the whole list of the registrations it took, in its
// admission order (admission.go), and the leader passes every primary's
// order on in its list: a leader that reorders a primary's list, shortens
// it or passes off another list as the primary's breaks the signature, and
// every server checks it.

const tagOrder = "riffle/v3/order"

// orderDigest is what a primary signs for its order.
func orderDigest(o *wire.Order) [32]byte {
	return taggedHash(tagOrder, o.Epoch[:], o.Signed())
}

// signOrder is this primary's signed order of its registrations of e.
// Call with s.mu held (e.order fixed).
func (s *Server) signOrder(e *sepoch) (wire.Order, error) {
	o := wire.Order{Epoch: e.v.ID, Primary: uint16(e.pos), Keys: append([][32]byte(nil), e.order...)}
	sig, err := sign(s.priv, orderDigest(&o))
	if err != nil {
		return o, err
	}
	o.Sig = sig
	return o, nil
}

// checkOrder checks that o is primary p's order of epoch id, signed by
// chain[p], with no key twice.
func checkOrder(o *wire.Order, id [32]byte, p int, chain []peer.ID) error {
	if o.Epoch != id {
		return fmt.Errorf("node: order of primary %d is of another epoch", p)
	}
	if int(o.Primary) != p || p >= len(chain) {
		return fmt.Errorf("node: order at place %d names primary %d", p, o.Primary)
	}
	if err := verifyPeerSig(chain[p], orderDigest(o), o.Sig); err != nil {
		return fmt.Errorf("node: order of primary %d not signed by it: %w", p, err)
	}
	seen := make(map[[32]byte]bool, len(o.Keys))
	for _, k := range o.Keys {
		if seen[k] {
			return fmt.Errorf("node: order of primary %d repeats a key", p)
		}
		seen[k] = true
	}
	return nil
}

// checkOrders checks the leader's list's orders: one per chain server in
// chain order, each signed by its primary, and every registration of the
// list (regs, then rest) listed in its primary's order. It returns the
// place of each registration key in its primary's order.
func checkOrders(orders []wire.Order, id [32]byte, chain []peer.ID, lists ...[]wire.Forwarded) (map[[32]byte]int, error) {
	if len(orders) != len(chain) {
		return nil, fmt.Errorf("node: registration list carries %d orders for %d servers", len(orders), len(chain))
	}
	rank := map[[32]byte]int{}
	primaryOf := map[[32]byte]uint16{}
	for p := range orders {
		if err := checkOrder(&orders[p], id, p, chain); err != nil {
			return nil, err
		}
		for i, k := range orders[p].Keys {
			if _, ok := primaryOf[k]; ok {
				return nil, errors.New("node: two primaries' orders list one registration key")
			}
			rank[k], primaryOf[k] = i, uint16(p)
		}
	}
	for _, l := range lists {
		for i := range l {
			p, ok := primaryOf[l[i].Reg.RegKey]
			if !ok || p != l[i].Primary {
				return nil, fmt.Errorf("node: a registration of primary %d is not in its signed order", l[i].Primary)
			}
		}
	}
	return rank, nil
}

// orderOfReply takes a primary's signed order from its reply to the close:
// exactly one, its own, listing exactly the registrations of its reply in
// their order.
func orderOfReply(rl *wire.RegList, id [32]byte, p int, chain []peer.ID) (wire.Order, error) {
	if len(rl.Orders) != 1 {
		return wire.Order{}, fmt.Errorf("node: reply to the close of server %d carries %d orders", p, len(rl.Orders))
	}
	o := rl.Orders[0]
	if err := checkOrder(&o, id, p, chain); err != nil {
		return o, err
	}
	if len(o.Keys) != len(rl.Regs) {
		return o, fmt.Errorf("node: order of primary %d lists %d keys for %d registrations", p, len(o.Keys), len(rl.Regs))
	}
	for i := range rl.Regs {
		if rl.Regs[i].Reg.RegKey != o.Keys[i] {
			return o, fmt.Errorf("node: order of primary %d differs from its list at place %d", p, i)
		}
	}
	return o, nil
}

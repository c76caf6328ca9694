// Package selection is the client selection of docs/protocol.md §3 (v3)
// that every chain server recomputes: each primary's signed order of the
// registrations it took and the list's checks before any registration's
// proofs (orders.go), and the selection over the leader's list, which
// carries the chosen registrations in slot order, every primary's order
// and, in Rest, every registration of those orders it did not choose
// (selection.go). Pure functions of signed public data: no I/O, no lock,
// network-free tests. Package node's leader (leader.go) makes the list
// and its epoch handlers check it.
package selection

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// A primary's signed order (§3 v3). At the close each primary signs the
// whole list of the registrations it took, in its admission order
// (node/internal/intake), and the leader passes every primary's order on
// in its list: a leader that reorders a primary's list, shortens it or
// passes off another list as the primary's breaks the signature, and
// every server checks it.

// TagOrder is the domain tag of a primary's order.
const TagOrder = "riffle/v3/order"

// OrderDigest is what a primary signs for its order.
func OrderDigest(o *wire.Order) [32]byte {
	return proto.TaggedHash(TagOrder, o.Epoch[:], o.Signed())
}

// SignOrder is primary pos's signed order of its registrations of epoch
// id, in the admission order keys.
func SignOrder(priv crypto.PrivKey, id [32]byte, pos int, keys [][32]byte) (wire.Order, error) {
	o := wire.Order{Epoch: id, Primary: uint16(pos), Keys: append([][32]byte(nil), keys...)}
	sig, err := proto.Sign(priv, OrderDigest(&o))
	if err != nil {
		return o, err
	}
	o.Sig = sig
	return o, nil
}

// CheckOrder checks that o is primary p's order of epoch id, signed by
// chain[p], with no key twice.
func CheckOrder(o *wire.Order, id [32]byte, p int, chain []peer.ID) error {
	if o.Epoch != id {
		return fmt.Errorf("node: order of primary %d is of another epoch", p)
	}
	if int(o.Primary) != p || p >= len(chain) {
		return fmt.Errorf("node: order at place %d names primary %d", p, o.Primary)
	}
	if err := proto.VerifyPeerSig(chain[p], OrderDigest(o), o.Sig); err != nil {
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

// CheckOrders checks the leader's list's orders: one per chain server in
// chain order, each signed by its primary, and every registration of the
// list (regs, then rest) listed in its primary's order. It returns the
// place of each registration key in its primary's order.
func CheckOrders(orders []wire.Order, id [32]byte, chain []peer.ID, lists ...[]wire.Forwarded) (map[[32]byte]int, error) {
	if len(orders) != len(chain) {
		return nil, fmt.Errorf("node: registration list carries %d orders for %d servers", len(orders), len(chain))
	}
	rank := map[[32]byte]int{}
	primaryOf := map[[32]byte]uint16{}
	for p := range orders {
		if err := CheckOrder(&orders[p], id, p, chain); err != nil {
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

// OrderOfReply takes a primary's signed order from its reply to the close:
// exactly one, its own, listing exactly the registrations of its reply in
// their order.
func OrderOfReply(rl *wire.RegList, id [32]byte, p int, chain []peer.ID) (wire.Order, error) {
	if len(rl.Orders) != 1 {
		return wire.Order{}, fmt.Errorf("node: reply to the close of server %d carries %d orders", p, len(rl.Orders))
	}
	o := rl.Orders[0]
	if err := CheckOrder(&o, id, p, chain); err != nil {
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

// CheckList checks the leader's registration list before any
// registration's proofs: every primary's order (CheckOrders), and each
// registration, chosen or not, signed by its primary (signed: a leader
// cannot pass off a registration as a primary's, §8). It returns the
// chosen registrations and their primaries in slot order.
func CheckList(rl *wire.RegList, id [32]byte, chain []peer.ID, signed func(*wire.Forwarded) error) ([]wire.Register, []uint16, error) {
	if _, err := CheckOrders(rl.Orders, id, chain, rl.Regs, rl.Rest); err != nil {
		return nil, nil, err
	}
	regs := make([]wire.Register, len(rl.Regs))
	prims := make([]uint16, len(rl.Regs))
	for i := range rl.Regs {
		f := &rl.Regs[i]
		if err := signed(f); err != nil {
			return nil, nil, fmt.Errorf("node: slot %d: %w", i, err)
		}
		regs[i], prims[i] = f.Reg, f.Primary
	}
	// The unselected ones too: the selection is recomputed from them;
	// their proofs are not checked, as none of them takes a slot.
	for i := range rl.Rest {
		if err := signed(&rl.Rest[i]); err != nil {
			return nil, nil, fmt.Errorf("node: unselected registration %d: %w", i, err)
		}
	}
	return regs, prims, nil
}

// Distinct checks §4.1's rule on the chosen registrations: no key twice,
// registration or X25519, in any two slots.
func Distinct(regs []wire.Register) error {
	seen := map[[32]byte]bool{}
	for i := range regs {
		rk, xk := regs[i].RegKey, regs[i].XKey
		if seen[rk] || seen[xk] || rk == xk {
			return fmt.Errorf("node: slot %d repeats a registration or x25519 key", i)
		}
		seen[rk], seen[xk] = true, true
	}
	return nil
}

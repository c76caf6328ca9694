package node

import (
	"bytes"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/selection"
)

// signOrders adds to rl, for epoch id, the order of every primary of the
// chain whose keys are privs (chain order): the keys of rl's entries (Regs
// then Rest) of that primary, in list order, signed by it.
func signOrders(t testing.TB, rl *wire.RegList, id [32]byte, privs []crypto.PrivKey) {
	t.Helper()
	rl.Orders = make([]wire.Order, len(privs))
	for p := range privs {
		o := wire.Order{Epoch: id, Primary: uint16(p)}
		for _, l := range [][]wire.Forwarded{rl.Regs, rl.Rest} {
			for _, f := range l {
				if int(f.Primary) == p {
					o.Keys = append(o.Keys, f.Reg.RegKey)
				}
			}
		}
		sig, err := proto.Sign(privs[p], selection.OrderDigest(&o))
		if err != nil {
			t.Fatal(err)
		}
		o.Sig = sig
		rl.Orders[p] = o
	}
}

// leaderKeyBelow is a fresh peer key whose id sorts before s's.
func leaderKeyBelow(t testing.TB, s *Server) peerKey {
	for {
		k := newPeerKey(t.(*testing.T))
		if bytes.Compare([]byte(k.id), []byte(s.ID())) < 0 {
			return k
		}
	}
}

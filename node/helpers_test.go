package node

import (
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/transport"
)

// testParams keep end-to-end tests fast: 16 KiB chunks, 2 request slots.
func testParams(R int) Params {
	return Params{ChunkSize: 16 << 10, K: 2, W: 2, Rounds: uint32(R), MaxClients: MinClientCap, MaxRows: 64, RegWindowMs: 300, RoundLimitMs: 20000, RoundIntervalMs: MinRoundIntervalMs}
}

// newHost is a host of the network of the test (libp2p, or memnet in
// virtual time).
func newHost(t testing.TB, priv crypto.PrivKey, listen []string) (transport.Host, error) {
	if n := testNet(t); n != nil {
		return n.NewHost(priv, listen)
	}
	return transport.DefaultNetwork.NewHost(priv, listen)
}

// lp is the libp2p host under h.
func lp(h transport.Host) host.Host {
	l, ok := transport.Libp2pOf(h)
	if !ok {
		panic("not a libp2p host")
	}
	return l
}

// refusalOut reports whether p is left out of the chain of the next
// number certified here for its refusal budget.
func (s *Server) refusalOut(p peer.ID) bool {
	return s.refusalOutAt(p, s.cert.Next())
}

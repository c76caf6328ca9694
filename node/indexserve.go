package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/store"
)

// clientReplyRate is the slowest reading (bytes a second) a reply of the
// client protocols is sent at (transport.ReplyBound): a window of 0.6 MB,
// four pools of wire.MaxPoolPairs pairs with their records and
// descriptors, in 10 s on top of Tunables.ClientReply; a full index page
// (wire.IndexPageBytes) in 2 min; a rate far below a link any client has.
const clientReplyRate = 64 << 10

// The index served a page at a time is package internal/indexserve's;
// indexPeers is who a peer is, as it asks.
type indexPeers struct{ s *Server }

func (p indexPeers) Client(q peer.ID) bool               { return p.s.peers.Client(q) }
func (p indexPeers) Ranges(q peer.ID) (rng, wide string) { return p.s.peers.Ranges(q) }
func (p indexPeers) Group(q peer.ID) bool                { return p.s.members.GroupPeer(q) }
func (p indexPeers) Page() int                           { return p.s.hookCfg().IndexPage() }
func (p indexPeers) Manifests(to peer.ID, m []store.Manifest) []store.Manifest {
	return p.s.hookCfg().IndexReply(to, m)
}
func (p indexPeers) Closings(to peer.ID, r [][]byte) [][]byte {
	return p.s.hookCfg().IndexClosings(to, r)
}
func (p indexPeers) EnterServer(ctx context.Context, g *slots.Servers, q peer.ID) error {
	return p.s.peers.EnterServer(ctx, g, q)
}

package node

import (
	"context"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/store"
)

// clientReplyRate is the slowest reading (bytes a second) a reply of the
// client protocols is sent at (transport.ReplyBound): a window of 0.6 MB,
// four pools of wire.MaxPoolPairs pairs with their records and
// descriptors, in 10 s on top of Tunables.ClientReply; a full index page
// (wire.IndexPageBytes) in 2 min; a rate far below a link any client has.
const clientReplyRate = 64 << 10

// enterIndex takes an index slot for a page to from (package slots),
// a registered client of this server or not, by its address ranges.
func (s *Server) enterIndex(ctx context.Context, from peer.ID) error {
	rng, wide := s.addrRanges(from)
	return s.indexSlots.Enter(ctx, from, s.isClientPeer(from), rng, wide)
}

// enterServer takes a slot of g for from, a server of the group
// (groupPeer), until ctx ends: the certified chains' never want one.
func (s *Server) enterServer(ctx context.Context, g *slots.Servers, from peer.ID) error {
	chain := from == s.h.ID() || s.certPeer(from)
	rng := ""
	if !chain {
		rng = s.addrRange(from)
	}
	return g.Enter(ctx, from, chain, rng)
}

// onIndexReq answers one page of the index changes logged after the
// request's cursor (§7 v3). Any peer may ask: the index is public, and
// what one page costs is bounded by its fixed-size request (clientCaps),
// the page budget wire.IndexPageBytes and the slots above; the stream's
// deadline bounds the send. A cursor beyond the log gets an empty page
// ending at the log's end.
func (s *Server) onIndexReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.IndexReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := s.enterIndex(ctx, from); err != nil {
		return 0, nil, err
	}
	return s.indexReply(ctx, from, req.Cursor)
}

// onServerIndexReq answers, over the epoch protocol, a server of the
// group catching up (catchupFrom) with the page onIndexReq would give. It
// takes none of the clients' index slots, whose outsiders' share any
// peer may hold, so that such peers cannot keep a server from the
// records it lacks; a peer outside the group is refused before the
// request is parsed, and a server has one page at a time.
func (s *Server) onServerIndexReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	if !s.groupPeer(from) {
		return 0, nil, errors.New("node: index requests on the epoch protocol only from the group's servers")
	}
	var req wire.IndexReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	if err := s.enterServer(ctx, &s.indexSlots.Servers, from); err != nil {
		return 0, nil, err
	}
	return s.indexReply(ctx, from, req.Cursor)
}

// indexReply is the index page after cursor, to from.
func (s *Server) indexReply(ctx context.Context, from peer.ID, cursor uint64) (wire.Type, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	budget := wire.IndexPageBytes
	if p := s.hookIndexPage(); p > 0 {
		budget = p
	}
	ch, err := s.store.IndexSince(cursor, budget)
	if err != nil {
		return 0, nil, err
	}
	ch.Manifests = s.hookIndexReply(from, ch.Manifests)
	ch.Closings = s.hookIndexClosings(from, ch.Closings)
	return wire.TypeIndex, indexPage(ch).Marshal(), nil
}

// indexPage is a page of store changes as sent.
func indexPage(ch store.IndexChanges) *wire.Index {
	p := &wire.Index{Next: ch.Next, More: ch.More, Entries: indexToWire(ch.Entries)}
	for _, m := range ch.Manifests {
		p.Manifests = append(p.Manifests, m.Data)
	}
	p.Removed = append(p.Removed, ch.Removed...)
	p.Closings = ch.Closings
	return p
}

package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/signed"
	"github.com/riffle-net/riffle/node/transport"
)

// A server that lost its records (docs/protocol.md §3, "Lost records")
// signs nothing until the group's log moves past its window: the rule
// and its state are package internal/signed's (Amnesia); this is what its
// loop asks of the founders.

// foundersHoldNone asks every other founder for its certificates from
// number 1 and reports whether more than half of the founders other than
// this server answered with none (and none answered with any).
func (s *Server) foundersHoldNone(ctx context.Context) bool {
	var others []peer.ID
	for p := range s.who.Founders() {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	if len(others) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
	defer cancel()
	reps, _ := s.each(ctx, others, transport.Request{Proto: ProtoEpoch, Type: wire.TypeCertReq, Body: (&wire.CertReq{From: 1}).Marshal(), Timeout: transport.ShortTimeout})
	return signed.FoundersHoldNone(reps, len(others))
}

package node

import (
	"bytes"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Who is asking, checked before any costly work (§3 "before any costly
// check or any allocation sized by a message, a server checks who sent
// it"; docs/proto-node.md "Hostile peers and crashes").

// outsiderCap is the most a peer outside the roster (and outside every
// epoch chain held here) may send on the server protocols (epoch, round):
// nothing it may send there is legitimate, and reading a small body lets
// the refusal say why.
const outsiderCap = 4 << 10

// isServerPeer reports whether p is a live roster server or in the chain
// of an epoch this server holds.
func (s *Server) isServerPeer(p peer.ID) bool {
	if p == s.h.ID() || s.roster.get(p) != nil {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if e.ended {
			continue
		}
		for _, q := range e.v.Chain {
			if q == p {
				return true
			}
		}
	}
	return false
}

// serverCaps bounds a request on a server protocol by its sender: the cap
// of its type for a server peer, at most outsiderCap for anyone else.
func (s *Server) serverCaps(caps func(wire.Type) int) func(peer.ID, wire.Type) int {
	return func(from peer.ID, t wire.Type) int {
		c := caps(t)
		if c > outsiderCap && !s.isServerPeer(from) {
			return outsiderCap
		}
		return c
	}
}

// askedByLeader is the cheap check of a signed descriptor's sender, made
// before its descriptor is checked (up to m·2R element decodes and m key
// proofs): the sender is in the descriptor's group, the descriptor is of
// an epoch this server prepared (open) or holds (final), and the sender is
// the leader whose Prepare this server took (rotate.go).
func (s *Server) askedByLeader(from peer.ID, sd *wire.Signed) error {
	if len(sd.Desc.Group) == 0 {
		return errors.New("node: descriptor without servers")
	}
	inGroup := false
	for _, g := range sd.Desc.Group {
		inGroup = inGroup || bytes.Equal(g.PeerID, []byte(from))
	}
	if !inGroup {
		return errors.New("node: descriptor not from its leader")
	}
	id := proto.EpochID(&sd.Desc)
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.epochs[id]
	if e == nil || e.ended {
		e = nil
		if !sd.Final {
			e = s.prep[sd.Desc.Nonce]
		}
	}
	if e == nil {
		return errors.New("node: descriptor of an epoch not prepared or held here")
	}
	if e.leader != from {
		return errors.New("node: descriptor not from its leader")
	}
	return nil
}

// Each protocol's caps by type, from wire's message table at the server's
// ceilings (transport.Ceilings).
func rosterCaps(t wire.Type) int { return wire.RequestCap(wire.ProtoRoster, t, transport.Ceilings) }
func epochCaps(t wire.Type) int  { return wire.RequestCap(wire.ProtoEpoch, t, transport.Ceilings) }
func roundCaps(t wire.Type) int  { return wire.RequestCap(wire.ProtoRound, t, transport.Ceilings) }
func clientCaps(t wire.Type) int { return wire.RequestCap(wire.ProtoClient, t, transport.Ceilings) }
func pirCaps(t wire.Type) int    { return wire.RequestCap(wire.ProtoPIR, t, transport.Ceilings) }

// anyPeer is a protocol's caps by type alone, whoever sends.
func anyPeer(caps func(wire.Type) int) func(peer.ID, wire.Type) int {
	return func(_ peer.ID, t wire.Type) int { return caps(t) }
}

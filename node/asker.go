package node

import (
	"bytes"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/peers"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Who is asking, checked before any costly work (§3 "before any costly
// check or any allocation sized by a message, a server checks who sent
// it"; docs/proto-node.md "Hostile peers and crashes"), is package
// internal/peers's (Server.peers); this file is what it reads of the
// epochs, the check of a descriptor's sender and each protocol's caps.

// outsiderCap is peers.OutsiderCap by the name the tests use.
const outsiderCap = peers.OutsiderCap

// peerEpochs is what internal/peers (Server.peers: who is asking) reads
// of the running epochs.
type peerEpochs struct{ s *Server }

func (h peerEpochs) InChain(p peer.ID) bool {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	for _, e := range h.s.epochs {
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

func (h peerEpochs) Registered(p peer.ID) bool {
	h.s.mu.Lock()
	defer h.s.mu.Unlock()
	for _, e := range h.s.epochs {
		if !e.ended && e.reg.RegisteredBy(p) {
			return true
		}
	}
	return false
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

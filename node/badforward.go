package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/evidence"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/registry"
	"github.com/riffle-net/riffle/node/internal/roundblame"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// A forwarded registration whose proofs fail is evidence against its
// primary (docs/protocol.md §8 "After a blame"): the primary signed it
// (H("riffle/v3/forward", …)) and an honest primary verifies every
// registration before it signs, with the same checks every server runs.
// The server that finds one names the primary for good, as a round blame
// names a server, ends the epoch, and sends the signed registration
// (BadForward) to every other chain server, which checks the signature and
// the failure itself before it names anyone.

// nameForwarder names primary f.Primary of e for its signed registration f
// that does not verify (why), once an epoch: log, store record, the peer
// id out of every chain here, the epoch ended; send delivers the evidence
// to the other chain servers. Without s.mu.
func (s *Server) nameForwarder(e *sepoch, f *wire.Forwarded, why error, send bool) {
	v := e.v
	pos := int(f.Primary)
	p := v.Chain[pos]
	body := f.Marshal()
	s.mu.Lock()
	first := e.reg.NameOnce()
	if first {
		s.end(e, fmt.Sprintf("server %d forwarded a registration that does not verify", pos))
	}
	s.mu.Unlock()
	if !first {
		return
	}
	s.rb.Load()
	s.rb.Add(p)
	reason := fmt.Sprintf("it signed a forwarded registration that does not verify: %v", why)
	s.log.Warn("registration blame: culprit named; it is excluded from every chain here", "epoch", fmt.Sprintf("%x", v.ID[:6]),
		"culprit", fmt.Sprintf("server %d (%s)", pos, p), "evidence", reason, "forwarded", fmt.Sprintf("%x", body))
	if br, ok := s.store.(roundblame.Recorder); ok {
		rec := store.BlameRecord{Epoch: v.ID, Number: v.Desc.Number, Role: "server", Server: pos, PeerID: p.String(),
			Reason: reason, Evidence: [][]byte{body}, Time: time.Now().Unix()}
		if err := br.PutBlame(rec); err != nil {
			s.log.Error("registration blame: record not stored", "err", err)
		}
	}
	s.ref.Cause(v.ID) // the public cause of its epoch's end
	if !send {
		return
	}
	var others []peer.ID
	for i, q := range v.Chain {
		if q != s.h.ID() && i != pos {
			others = append(others, q)
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, evidence.Deadline)
	defer cancel()
	if err := deliverAll(ctx, others, s.cfg.Timing.EvidenceBackoff, s.cfg.Timing.EvidenceBackoffMax, func(ctx context.Context, q peer.ID) error {
		_, err := transport.Call(ctx, s.h, q, transport.Request{Proto: ProtoEpoch, Type: wire.TypeBadForward, Body: body, Timeout: transport.ShortTimeout})
		return err
	}); err != nil {
		s.log.Warn("registration evidence not delivered everywhere", "err", err)
	}
}

// onBadForward takes a chain server's evidence against a primary: named
// only if the primary's signature verifies and the registration does not.
func (s *Server) onBadForward(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var f wire.Forwarded
	if err := f.Unmarshal(body, proto.GenericLimits()); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	e := s.epochs[f.Reg.Epoch]
	s.mu.Unlock()
	if e == nil || e.v == nil {
		return 0, nil, errors.New("node: registration evidence for an unknown epoch")
	}
	if !slices.Contains(e.v.Chain, from) {
		return 0, nil, errors.New("node: registration evidence not from a chain server")
	}
	if err := registry.CheckForwardSigned(e.v, &f); err != nil {
		return 0, nil, err
	}
	_, err := proto.CheckRegister(e.v, &f.Reg)
	if err == nil {
		return 0, nil, errors.New("node: the forwarded registration verifies: no evidence")
	}
	s.nameForwarder(e, &f, err, false)
	return wire.TypeAck, ack, nil
}

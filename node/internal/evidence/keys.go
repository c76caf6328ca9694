package evidence

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Exclusion by long-term key (§8 "After a blame"). When a blame names a
// client's slot, its primary publishes the long-term key evidence it kept
// (wire.KeyEvidence); every server checks the signature against the
// slot's registration key in the final descriptor (CheckKeyEvidence) and,
// once it has named that slot itself, excludes the key for 1, 2, 4, …
// epochs on each repeat (ltkeys.Keys.Strike, on disk). The slots named
// and the evidence for them are blame.KeyNamed's (Ep.KeyNamed, its own
// lock).

// CheckKeyEvidence checks key evidence of the epoch of final v: a slot
// of the epoch, and the long-term signature over (epoch id, the slot's
// registration key).
func CheckKeyEvidence(v *proto.View, ev *wire.KeyEvidence) error {
	if int(ev.Slot) >= len(v.Desc.Clients) {
		return errors.New("node: key evidence for a slot beyond the epoch's")
	}
	if err := proto.VerifyLongTerm(ev.LTKey, ev.Epoch, v.Desc.Clients[ev.Slot].RegKey, ev.LTSig); err != nil {
		return fmt.Errorf("node: key evidence: %w", err)
	}
	return nil
}

// ClientNamed follows a blame that named client slot slot of ep here: the
// slot's primary publishes the long-term key evidence it kept, and every
// server that holds checked evidence for the slot excludes the key.
// Without the server's lock.
func (s *Service) ClientNamed(ep *Ep, slot int) {
	var own *wire.KeyEvidence
	s.h.Locked(func() { own = s.h.OwnKeyEvidence(ep, slot) })
	ev, isOwn := ep.KeyNamed.Name(slot, own)
	if ev == nil {
		return
	}
	body := ev.Marshal()
	s.excludeKey(ep, ev, body)
	if isOwn {
		if err := s.SendToChain(ep.Final.Chain, transport.ProtoRound, wire.TypeKeyEvidence, body, transport.ShortTimeout, Deadline, -1); err != nil {
			s.Log.Warn("long-term key evidence not delivered everywhere", "err", err)
		}
	}
}

// excludeKey applies checked key evidence of a slot named here.
func (s *Service) excludeKey(ep *Ep, ev *wire.KeyEvidence, body []byte) {
	v := ep.Final
	until := s.Keys.Strike(ev.LTKey, v.Desc.Number, body)
	// The slot is the culprit's own; no honest client is tied to it.
	s.Log.Warn("round blame: the culprit client's long-term key is excluded", "epoch", fmt.Sprintf("%x", v.ID[:6]),
		"culprit", fmt.Sprintf("client in slot %d", ev.Slot), "key", fmt.Sprintf("%x", ev.LTKey[:8]), "until", until, "evidence", fmt.Sprintf("%x", body))
}

// OnKeyEvidence takes a primary's long-term key evidence for a slot from
// a server of the epoch's chain: checked (CheckKeyEvidence), or refused
// and excluding nobody. The key is excluded once this server has itself
// named the slot.
func (s *Service) OnKeyEvidence(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ev wire.KeyEvidence
	if err := ev.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	ep, err := s.h.FinalEpoch(ev.Epoch)
	if err != nil {
		return 0, nil, err
	}
	if !proto.InChain(ep.Final.Chain, from) {
		return 0, nil, errors.New("node: key evidence not from a chain server")
	}
	if s.hooked() && s.Hooks.RefuseEvidence(wire.TypeKeyEvidence) {
		return 0, nil, errors.New("node: evidence refused (test hook)")
	}
	if err := CheckKeyEvidence(ep.Final, &ev); err != nil {
		return 0, nil, err
	}
	// Kept until this server's own verdict if it has not named the slot
	// (yet); applied at most once a slot.
	if !ep.KeyNamed.Evidence(ev) {
		return wire.TypeAck, ack, nil
	}
	s.excludeKey(ep, &ev, body)
	return wire.TypeAck, ack, nil
}

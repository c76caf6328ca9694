package node

import (
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Exclusion by long-term key (docs/protocol.md §8 "After a blame"). When a
// blame names a client's slot, its primary publishes the long-term key
// evidence it kept (KeyEvidence); every server checks the signature
// against the slot's registration key in the final descriptor and, once it
// has named that slot itself, excludes the key for 1, 2, 4, … epochs on
// each repeat, on disk (store bucket key-excluded). Every server refuses
// registrations from an excluded key when it is a primary. A primary also
// keeps a small record of its own clients' keys (key-seen): the last epoch
// each held its slot to the end unnamed, and how often its slot ran dry;
// the admission order (internal/intake) reads it. The records are package
// internal/ltkeys's (Keys, its own lock); an epoch's slots named and the
// evidence for them are blame.KeyNamed's (its own lock).

// recordClients notes, at an epoch's end, how each client of this primary
// ended it (§5.4: a dry slot lowers its key's priority; a clean epoch makes
// it a returning client). An epoch in which no round ran judges nobody. A
// slot ran dry when this primary signed it dry (held.go: its client left
// with its cover window spent, or S_0 asked for a round it could not fill),
// or, in an epoch that ended before its last round, when it holds no onion
// for the first round without a final list (a client that submits W rounds
// ahead has sent it long before) and its client did not hand over cover
// and leave.
func (s *Server) recordClients(e *sepoch) {
	s.mu.Lock()
	if e.final == nil || e.listHigh == 0 {
		s.mu.Unlock()
		return
	}
	type end struct {
		key [32]byte
		dry bool
	}
	var ends []end
	next, rounds := e.listHigh, e.final.Desc.Params.Rounds
	for i, c := range e.final.Desc.Clients {
		if int(c.Primary) != e.pos || e.keyNamed.Named(i) {
			continue
		}
		lt, ok := e.reg.LT(c.RegKey)
		if !ok {
			continue
		}
		sl := uint32(i)
		dry := e.dryEver(sl)
		if !dry && next < rounds && !e.handover.Departed[sl] && !e.handover.Has(sl, next) {
			x := e.rounds[next]
			if x == nil {
				dry = true
			} else {
				_, has := x.subs[sl]
				dry = !has
			}
		}
		ends = append(ends, end{lt.Key, dry})
	}
	number := e.final.Desc.Number
	s.mu.Unlock()
	for _, x := range ends {
		s.keys.NoteClientEnd(x.key, number, x.dry)
	}
}

// clientNamed follows a blame that named client slot slot of e here: the
// slot's primary publishes the long-term key evidence it kept, and every
// server that holds checked evidence for the slot excludes the key.
// Without s.mu.
func (s *Server) clientNamed(e *sepoch, slot int) {
	var own *wire.KeyEvidence
	s.mu.Lock()
	cl := e.final.Desc.Clients[slot]
	if lt, ok := e.reg.LT(cl.RegKey); ok && int(cl.Primary) == e.pos {
		own = &wire.KeyEvidence{Epoch: e.final.ID, Slot: uint32(slot), LTKey: lt.Key, LTSig: lt.Sig}
	}
	s.mu.Unlock()
	ev, isOwn := e.keyNamed.Name(slot, own)
	if ev == nil {
		return
	}
	body := ev.Marshal()
	s.excludeKey(e, ev, body)
	if isOwn {
		if err := s.sendEvidence(e, wire.TypeKeyEvidence, body, transport.ShortTimeout, -1); err != nil {
			s.log.Warn("long-term key evidence not delivered everywhere", "err", err)
		}
	}
}

// excludeKey applies checked key evidence of a slot named here.
func (s *Server) excludeKey(e *sepoch, ev *wire.KeyEvidence, body []byte) {
	until := s.keys.Strike(ev.LTKey, e.final.Desc.Number, body)
	// The slot is the culprit's own; no honest client is tied to it.
	s.log.Warn("round blame: the culprit client's long-term key is excluded", "epoch", fmt.Sprintf("%x", e.final.ID[:6]),
		"culprit", fmt.Sprintf("client in slot %d", ev.Slot), "key", fmt.Sprintf("%x", ev.LTKey[:8]), "until", until, "evidence", fmt.Sprintf("%x", body))
}

// onKeyEvidence takes a primary's long-term key evidence for a slot: the
// signature must verify over (epoch id, the slot's registration key of the
// final descriptor), or it is refused and excludes nobody. The key is
// excluded once this server has itself named the slot.
func (s *Server) onKeyEvidence(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ev wire.KeyEvidence
	if err := ev.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(ev.Epoch)
	if err != nil {
		return 0, nil, err
	}
	if !fromChain(e, from) {
		return 0, nil, errors.New("node: key evidence not from a chain server")
	}
	if s.hookRun().RefuseEvidence(wire.TypeKeyEvidence) {
		return 0, nil, errors.New("node: evidence refused (test hook)")
	}
	if int(ev.Slot) >= e.n() {
		return 0, nil, errors.New("node: key evidence for a slot beyond the epoch's")
	}
	if err := proto.VerifyLongTerm(ev.LTKey, ev.Epoch, e.final.Desc.Clients[ev.Slot].RegKey, ev.LTSig); err != nil {
		return 0, nil, fmt.Errorf("node: key evidence: %w", err)
	}
	// Kept until this server's own verdict if it has not named the slot
	// (yet); applied at most once a slot.
	if !e.keyNamed.Evidence(ev) {
		return wire.TypeAck, ack, nil
	}
	s.excludeKey(e, &ev, body)
	return wire.TypeAck, ack, nil
}

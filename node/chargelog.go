package node

import (
	"errors"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The evidence log (docs/protocol.md §3): evidence named by what was
// signed, one record a claimant's slot, merged, relayed to the chain and
// replayed into the same charges on every server.

// spreadCharge sends the evidence held here under ev's key to the servers
// of chain but this one and skip.
func (s *Server) spreadCharge(ev *wire.Charge, chain []peer.ID, skip peer.ID) {
	if d := s.hookRun().SpreadLate(); d > 0 {
		select {
		case <-s.ctx.Done():
			return
		case <-time.After(d):
		}
	}
	body := s.ref.HeldCharge(ev)
	if body == nil {
		return
	}
	var to []peer.ID
	for _, p := range chain {
		if p != s.h.ID() && p != skip {
			to = append(to, p)
		}
	}
	if len(to) > 0 {
		s.notifyAll(to, wire.TypeCharge, body)
	}
}

// noteChargeLocked logs ev of held epoch e, with this server's own
// attestation added while the evidence held here has none of it (own),
// and relays it to the chain if anything was new here: an abort held for
// the final descriptor is logged before this server can attest its round
// (holdPreFinalLocked). Call with s.mu held.
func (s *Server) noteChargeLocked(e *sepoch, ev *wire.Charge, own *wire.Attest, from peer.ID) {
	if own != nil && !s.attestHeld(ev, own) {
		ev.Attests = append(ev.Attests, *own)
	}
	ctx := chargeCtxLocked(&s.cert, e)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		grew, err := s.ref.LogCharge(ev, ctx)
		if err != nil {
			s.log.Warn("evidence refused", "number", ev.Number, "err", err)
			return
		}
		if grew {
			s.spreadCharge(ev, ctx.Chain, from)
		}
	}()
}

// attestHeld reports whether the evidence of ev's object held here has
// an attestation of own's signer and kind.
func (s *Server) attestHeld(ev *wire.Charge, own *wire.Attest) bool {
	b := s.ref.HeldCharge(ev)
	var held wire.Charge
	if b == nil || held.Unmarshal(b) != nil {
		return false
	}
	for _, a := range held.Attests {
		if a.Signer == own.Signer && a.Kind == own.Kind {
			return true
		}
	}
	return false
}

// chargeCtxLocked is e's blame.Context: from its number's certificate when
// kept here, else from e itself. Call with s.mu held.
func chargeCtxLocked(cs *certs.Certs, e *sepoch) blame.Context {
	if c, ok := cs.Of(e.v.Desc.Number); ok && c.Epoch == e.v.ID {
		if ctx, err := blame.CertContext(c); err == nil {
			return ctx
		}
	}
	return blame.Context{Epoch: e.v.ID, Chain: e.v.Chain, Final: e.final != nil}
}

// onCharge takes evidence from a server: for an epoch held here and a
// sender of its chain, as an abort or void of that epoch (the abort ends
// it); otherwise checked against the certificate of its number, from a
// roster server, recent enough to count, or held until that certificate
// comes (chargelog.Pend).
func (s *Server) onCharge(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ev wire.Charge
	if err := ev.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var id [32]byte
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		if err := a.Unmarshal(ev.Item); err != nil {
			return 0, nil, err
		}
		id = a.Epoch
		s.mu.Lock()
		e := s.epochs[a.Epoch]
		if e != nil && e.v != nil && proto.InChain(e.v.Chain, from) {
			defer s.mu.Unlock()
			return s.takeAbortLocked(e, from, &a, &ev)
		}
		s.mu.Unlock()
	case wire.EvVoid:
		var rl wire.RoundList
		if err := rl.Unmarshal(ev.Item, proto.GenericLimits()); err != nil {
			return 0, nil, err
		}
		id = rl.Epoch
		s.mu.Lock()
		e := s.epochs[rl.Epoch]
		if e != nil && e.final != nil && proto.InChain(e.v.Chain, from) && rl.Void() && !e.blames.Voided(rl.Round) {
			var own *wire.Attest
			if e.admit(rl.Round) == nil {
				own = s.roundAttestLocked(e, rl.Round)
			}
			s.noteChargeLocked(e, &ev, own, from)
			s.mu.Unlock()
			return wire.TypeAck, ack, nil
		}
		s.mu.Unlock()
	case wire.EvEquiv:
		final, _, err := blame.ParseEquiv(ev.Item)
		if err != nil {
			return 0, nil, err
		}
		id = final.Epoch
	case wire.EvHeld:
		r, _, err := wire.ParseHeld(ev.Item)
		if err != nil {
			return 0, nil, err
		}
		id = r.Epoch
	case wire.EvSilent:
		var r wire.OnionReceipt
		if err := r.Unmarshal(ev.Item); err != nil {
			return 0, nil, err
		}
		id = r.Epoch
	case wire.EvForward:
		r, _, err := wire.ParseForward(ev.Item, proto.GenericLimits())
		if err != nil {
			return 0, nil, err
		}
		id = r.Epoch
	}
	if s.roster.get(from) == nil {
		return 0, nil, errors.New("node: evidence from outside the roster")
	}
	c, ok := s.cert.Of(ev.Number)
	if !ok || c.Epoch != id {
		// Its certificate has not come (or not yet the one that names
		// its epoch): held for it, from a server of the group only.
		if s.groupPeer(from) && s.ref.Pend(from, id, &ev, s.cert.Top()) {
			// The certificate may have come meanwhile, its Rejudge
			// run: judge what waits for it.
			if c, ok := s.cert.Of(ev.Number); ok && c.Epoch == id {
				if ctx, err := blame.CertContext(c); err == nil {
					s.ref.Rejudge(ev.Number, ctx)
				}
			}
		}
		return wire.TypeAck, ack, nil
	}
	ctx, err := blame.CertContext(c)
	if err != nil {
		return wire.TypeAck, ack, nil
	}
	s.mu.Lock()
	old := ev.Number+2*uint64(len(ctx.Chain)) <= s.number
	s.mu.Unlock()
	if old {
		return wire.TypeAck, ack, nil // too old to leave anyone out
	}
	if _, err := s.ref.LogCharge(&ev, ctx); err != nil {
		return 0, nil, err
	}
	return wire.TypeAck, ack, nil
}

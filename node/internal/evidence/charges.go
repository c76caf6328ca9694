package evidence

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/certs"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The evidence log (§3): evidence named by what was signed, one record a
// claimant's slot, merged, relayed to the chain and replayed into the
// same charges on every server.

// ChargeCtx is ep's blame.Context: from its number's certificate when
// kept in cs, else from ep itself.
func ChargeCtx(cs *certs.Certs, ep *Ep) blame.Context {
	v := ep.V
	if c, ok := cs.Of(v.Desc.Number); ok && c.Epoch == v.ID {
		if ctx, err := blame.CertContext(c); err == nil {
			return ctx
		}
	}
	return blame.Context{Epoch: v.ID, Chain: v.Chain, Final: ep.Final != nil}
}

// NoteCharge logs ev of held epoch ep, with this server's own
// attestation added while the evidence held here has none of it (own),
// and relays it to the chain but from if anything was new here: an abort
// held for the final descriptor is logged before this server can attest
// its round (PreFinal). Call with the server's lock held.
func (s *Service) NoteCharge(ep *Ep, ev *wire.Charge, own *wire.Attest, from peer.ID) {
	if own != nil && !s.attestHeld(ev, own) {
		ev.Attests = append(ev.Attests, *own)
	}
	ctx := ChargeCtx(s.Certs, ep)
	s.h.Go(func() {
		grew, err := s.Ref.LogCharge(ev, ctx)
		if err != nil {
			s.Log.Warn("evidence refused", "number", ev.Number, "err", err)
			return
		}
		if grew {
			s.Spread(ev, ctx.Chain, from)
		}
	})
}

// Spread sends the evidence held here under ev's key to the servers of
// chain but this one and skip.
func (s *Service) Spread(ev *wire.Charge, chain []peer.ID, skip peer.ID) {
	if s.hooked() {
		if d := s.Hooks.SpreadLate(); d > 0 {
			select {
			case <-s.Ctx.Done():
				return
			case <-time.After(d):
			}
		}
	}
	body := s.Ref.HeldCharge(ev)
	if body == nil {
		return
	}
	if to := others(chain, s.Self, skip); len(to) > 0 {
		s.h.NotifyAll(to, wire.TypeCharge, body)
	}
}

// attestHeld reports whether the evidence of ev's object held here has
// an attestation of own's signer and kind.
func (s *Service) attestHeld(ev *wire.Charge, own *wire.Attest) bool {
	b := s.Ref.HeldCharge(ev)
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

// OnAbort handles an abort sent or relayed by a server of the epoch's
// chain: checked (sender, signer, number, signature), counted, relayed
// once to the rest of the chain, and the epoch ended. An abort of an
// epoch not held here, or handed on from outside its chain, is the
// evidence of a budget (OnCharge).
func (s *Service) OnAbort(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var a wire.Abort
	if err := a.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	var (
		typ   wire.Type
		rep   []byte
		err   error
		taken bool
	)
	s.h.Locked(func() {
		ep := s.h.Epoch(a.Epoch)
		if ep == nil || !proto.InChain(ep.V.Chain, from) {
			return
		}
		taken = true
		typ, rep, err = s.Take(ep, from, &a, nil)
	})
	if taken {
		return typ, rep, err
	}
	if peer.ID(a.Signer) == s.Self {
		return wire.TypeAck, ack, nil // counted when it was signed
	}
	return s.OnCharge(from, (&wire.Charge{Kind: wire.EvAbort, Number: a.Number, Item: a.Marshal()}).Marshal())
}

// EpochOf is the epoch the evidence ev is of, its item parsed.
func EpochOf(ev *wire.Charge) (id [32]byte, err error) {
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		err = a.Unmarshal(ev.Item)
		id = a.Epoch
	case wire.EvVoid:
		var rl wire.RoundList
		err = rl.Unmarshal(ev.Item, proto.GenericLimits())
		id = rl.Epoch
	case wire.EvEquiv:
		final, _, e := blame.ParseEquiv(ev.Item)
		if err = e; err == nil {
			id = final.Epoch
		}
	case wire.EvHeld:
		r, _, e := wire.ParseHeld(ev.Item)
		if err = e; err == nil {
			id = r.Epoch
		}
	case wire.EvSilent:
		var r wire.OnionReceipt
		err = r.Unmarshal(ev.Item)
		id = r.Epoch
	case wire.EvForward:
		r, _, e := wire.ParseForward(ev.Item, proto.GenericLimits())
		if err = e; err == nil {
			id = r.Epoch
		}
	case wire.EvAccount:
		r, _, e := wire.ParseAccountItem(ev.Item, proto.GenericLimits())
		if err = e; err == nil {
			id = r.Epoch
		}
	}
	return id, err
}

// OnCharge takes evidence from a server: for an epoch held here and a
// sender of its chain, as an abort or void of that epoch (the abort ends
// it); otherwise checked against the certificate of its number, from a
// roster server, recent enough to count, or held until that certificate
// comes (chargelog.Pend).
func (s *Service) OnCharge(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var ev wire.Charge
	if err := ev.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	id, err := EpochOf(&ev)
	if err != nil {
		return 0, nil, err
	}
	var (
		typ   wire.Type
		rep   []byte
		taken bool
	)
	switch ev.Kind {
	case wire.EvAbort:
		var a wire.Abort
		_ = a.Unmarshal(ev.Item)
		s.h.Locked(func() {
			if ep := s.h.Epoch(id); ep != nil && proto.InChain(ep.V.Chain, from) {
				taken = true
				typ, rep, err = s.Take(ep, from, &a, &ev)
			}
		})
	case wire.EvVoid:
		var rl wire.RoundList
		_ = rl.Unmarshal(ev.Item, proto.GenericLimits())
		s.h.Locked(func() {
			ep := s.h.Epoch(id)
			if ep != nil && ep.Final != nil && proto.InChain(ep.V.Chain, from) && rl.Void() && !s.h.Voided(ep, rl.Round) {
				s.NoteCharge(ep, &ev, s.h.AdmitAttest(ep, rl.Round), from)
				taken, typ, rep = true, wire.TypeAck, ack
			}
		})
	}
	if taken {
		return typ, rep, err
	}
	if !s.h.InRoster(from) {
		return 0, nil, errors.New("node: evidence from outside the roster")
	}
	c, ok := s.Certs.Of(ev.Number)
	if !ok || c.Epoch != id {
		// Its certificate has not come (or not yet the one that names
		// its epoch): held for it, from a server of the group only.
		if s.h.GroupPeer(from) && s.Ref.Pend(from, id, &ev, s.Certs.Top()) {
			// The certificate may have come meanwhile, its Rejudge
			// run: judge what waits for it.
			if c, ok := s.Certs.Of(ev.Number); ok && c.Epoch == id {
				if ctx, err := blame.CertContext(c); err == nil {
					s.Ref.Rejudge(ev.Number, ctx)
				}
			}
		}
		return wire.TypeAck, ack, nil
	}
	ctx, err := blame.CertContext(c)
	if err != nil {
		return wire.TypeAck, ack, nil
	}
	if ev.Number+2*uint64(len(ctx.Chain)) <= s.h.Number() {
		return wire.TypeAck, ack, nil // too old to leave anyone out
	}
	if _, err := s.Ref.LogCharge(&ev, ctx); err != nil {
		return 0, nil, err
	}
	return wire.TypeAck, ack, nil
}

// The evidence of a budget (§3): the aborts that leave a server out reach
// only the servers of the aborted epochs' chains, so a server outside them
// (out for its own budget, down, cut off) kept the server in its derived
// chain and disagreed with the others on the chain and the leader of the
// next numbers; where the leaders split so that neither side's timeout
// had a quorum, the group stayed at one number for good, and the budget
// window, counted in numbers, never ended (TestSwarm seed 809,
// TestBudgetDropEvidenceShared). A leader that leaves servers out for
// their budget therefore hands the signed aborts that count to its chain
// before the Prepare, and a server counts a fault abort from any roster
// server once it verifies against the certificate of its number: the
// signer's own signature is the evidence, whoever carries it.

// HandEvidence sends the budget's evidence for number n to the servers of
// chain, each abort once, all at once, within transport.ShortTimeout (as
// long as the Prepare may take); the replies do not matter (a server that
// did not take it refuses the Prepare, and the leader tries again).
func (s *Service) HandEvidence(ctx context.Context, chain []peer.ID, n uint64) {
	ev := s.Ref.BudgetEvidence(s.Self, func(p peer.ID) bool { return s.Ref.OutAt(p, n) })
	if len(ev) == 0 {
		return
	}
	to := others(chain, s.Self)
	ctx, cancel := context.WithTimeout(ctx, transport.ShortTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, b := range ev {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = s.h.Each(ctx, to, transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeCharge, Body: b, Timeout: transport.ShortTimeout})
		}()
	}
	wg.Wait()
}

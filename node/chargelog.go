package node

import (
	"encoding/hex"
	"errors"
	"slices"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// The evidence log (docs/protocol.md §3): evidence named by what was
// signed, one record a claimant's slot, merged, relayed to the chain and
// replayed into the same charges on every server.

// slotTaken reports whether recs hold evidence of slot with a key smaller
// than key.
func slotTaken(recs []refusal, slot, key string) bool {
	for i := range recs {
		if r := &recs[i]; r.Key < key && recordSlot(r) == slot {
			return true
		}
	}
	return false
}

// slotClosed reports whether evidence of kind for slot may not replace
// the record recs hold there, whatever its key: an equivocation charges
// its signer once an epoch whichever pair shows it, and a signer grinding
// pairs of ever smaller keys rewrote the refusals file once a pair
// (TestEquivocationGrindWritesOnce).
func slotClosed(recs []refusal, kind uint8, slot string) bool {
	return kind == wire.EvEquiv && slotTaken(recs, slot, "\xff")
}

// recordSlot is the blame.EvidenceSlot of a record's evidence.
func recordSlot(r *refusal) string {
	var ev wire.Charge
	if r.Ev == nil || ev.Unmarshal(r.Ev) != nil {
		return ""
	}
	return blame.EvidenceSlot(&ev)
}

// logCharge merges ev into the evidence held here and recomputes its
// charge (blame.ChargeOf in ctx); it reports whether the evidence held here
// grew. waived keeps the evidence uncounted (its epoch's cause is
// public). Never call with rs.mu held.
func (rs *refusalState) logCharge(ev *wire.Charge, ctx blame.Context, waived bool) (bool, error) {
	rs.loaded.Do(rs.loadRefusals)
	key := blame.ChargeKey(ev)
	slot := blame.EvidenceSlot(ev)
	rs.mu.Lock()
	var rec *refusal
	for i := range rs.recs {
		if rs.recs[i].Key == key {
			rec = &rs.recs[i]
		}
	}
	// One record a signer, epoch and kind of evidence: the smallest
	// key, the same on every server whatever the order, so that a
	// signer's flood of objects evicts nothing.
	if rec == nil && slot != "" && (slotTaken(rs.recs, slot, key) || slotClosed(rs.recs, ev.Kind, slot)) {
		rs.mu.Unlock()
		return false, nil
	}
	merged := &wire.Charge{Kind: ev.Kind, Number: ev.Number, Item: ev.Item}
	if rec != nil {
		if err := merged.Unmarshal(rec.Ev); err != nil {
			merged = &wire.Charge{Kind: ev.Kind, Number: ev.Number, Item: ev.Item}
		}
	} else if slot != "" {
		// It will replace its slot's record: keep what that one held.
		for i := range rs.recs {
			var old wire.Charge
			if r := &rs.recs[i]; recordSlot(r) == slot && r.Ev != nil && old.Unmarshal(r.Ev) == nil {
				blame.MergeAttests(merged, blame.SameClaim(merged, old.Attests))
			}
		}
	}
	grew := blame.MergeAttests(merged, ev.Attests)
	if rec != nil && !grew {
		rs.mu.Unlock()
		return false, nil
	}
	rs.mu.Unlock()
	var charged peer.ID
	var reason string
	// Judged in the context of the number's certificate held when the
	// record is written: one read before a replacement, whose rejudge
	// ran meanwhile, would overwrite the recomputed charge
	// (TestRejudgeRace). The loop leaves with rs.mu held; it ends since a
	// number's certificate only ever rises in rank (certOutranks), so its
	// context changes at most twice.
	for {
		// Checked outside the lock: signatures.
		var err error
		if charged, reason, err = blame.ChargeOf(merged, ctx); err != nil {
			return false, err
		}
		rs.mu.Lock()
		cur, ok := rs.certCtx(ev.Number)
		if !ok || sameContext(cur, ctx) {
			break
		}
		rs.mu.Unlock()
		ctx = cur
	}
	defer rs.mu.Unlock()
	rec = nil
	for i := range rs.recs {
		if rs.recs[i].Key == key {
			rec = &rs.recs[i]
		}
	}
	if rec == nil && slot != "" {
		if slotTaken(rs.recs, slot, key) || slotClosed(rs.recs, ev.Kind, slot) {
			return false, nil
		}
		// Checked: it replaces its slot's record of a larger key.
		for i := range rs.recs {
			if r := &rs.recs[i]; recordSlot(r) == slot {
				r.Key, rec = key, r
			}
		}
	}
	if rec == nil {
		rs.recs = append(rs.recs, refusal{Key: key, Number: ev.Number, Window: uint64(len(ctx.Chain)),
			Epoch: hex.EncodeToString(ctx.Epoch[:]), Waived: waived})
		rec = &rs.recs[len(rs.recs)-1]
	}
	was := rec.Peer
	// A waiver only adds: the copy logged first may have been judged
	// before the epoch's public cause was known here.
	rec.Waived = rec.Waived || waived
	rec.Peer, rec.Reason, rec.Ev = "", reason, merged.Marshal()
	if charged != "" {
		rec.Peer = charged.String()
	}
	rs.prune()
	rs.saveRefusalsLocked()
	if rec.Peer != was && charged != "" && !rec.Waived {
		rs.log.Info("abort on private grounds counted", "peer", charged.ShortString(), "number", ev.Number, "reason", reason)
	}
	return true, nil
}

// certCtx is the context of n's certificate held here, if it names an
// epoch. Call with rs.mu held (the certificates' lock is taken after it).
func (rs *refusalState) certCtx(n uint64) (blame.Context, bool) {
	if rs.certs == nil {
		return blame.Context{}, false
	}
	c, ok := rs.certs.certOf(n)
	if !ok {
		return blame.Context{}, false
	}
	ctx, err := blame.CertContext(c)
	return ctx, err == nil
}

// sameContext reports whether a and b judge alike.
func sameContext(a, b blame.Context) bool {
	return a.Epoch == b.Epoch && a.Final == b.Final && slices.Equal(a.Chain, b.Chain)
}

// spreadCharge sends the evidence held here under ev's key to the servers
// of chain but this one and skip.
func (s *Server) spreadCharge(ev *wire.Charge, chain []peer.ID, skip peer.ID) {
	body := s.ref.heldCharge(ev)
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

// heldCharge is the encoded evidence held here of ev's object.
func (rs *refusalState) heldCharge(ev *wire.Charge) []byte {
	key := blame.ChargeKey(ev)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, r := range rs.recs {
		if r.Key == key {
			return r.Ev
		}
	}
	return nil
}

// noteChargeLocked logs ev of held epoch e, with this server's own
// attestation added at first sight (own), and relays it to the chain if
// anything was new here. Call with s.mu held.
func (s *Server) noteChargeLocked(e *sepoch, ev *wire.Charge, own *wire.Attest, from peer.ID, waived bool) {
	if own != nil && s.ref.heldCharge(ev) == nil {
		ev.Attests = append(ev.Attests, *own)
	}
	ctx := s.cert.chargeCtxLocked(e)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		grew, err := s.ref.logCharge(ev, ctx, waived)
		if err != nil {
			s.log.Warn("evidence refused", "number", ev.Number, "err", err)
			return
		}
		if grew {
			s.spreadCharge(ev, ctx.Chain, from)
		}
	}()
}

// chargeCtxLocked is e's blame.Context: from its number's certificate when
// kept here, else from e itself. Call with s.mu held.
func (cs *certState) chargeCtxLocked(e *sepoch) blame.Context {
	if c, ok := cs.certOf(e.v.Desc.Number); ok && c.Epoch == e.v.ID {
		if ctx, err := blame.CertContext(c); err == nil {
			return ctx
		}
	}
	return blame.Context{Epoch: e.v.ID, Chain: e.v.Chain, Final: e.final != nil}
}

// onCharge takes evidence from a server: for an epoch held here and a
// sender of its chain, as an abort or void of that epoch (the abort ends
// it); otherwise checked against the certificate of its number, from a
// roster server, recent enough to count.
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
		if e != nil && e.final != nil && proto.InChain(e.v.Chain, from) && rl.Void() && !e.blameVoided(rl.Round) {
			var own *wire.Attest
			if e.admit(rl.Round) == nil {
				own = s.roundAttestLocked(e, rl.Round)
			}
			s.noteChargeLocked(e, &ev, own, from, s.publicCause(e))
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
	}
	if s.roster.get(from) == nil {
		return 0, nil, errors.New("node: evidence from outside the roster")
	}
	c, ok := s.cert.certOf(ev.Number)
	if !ok || c.Epoch != id {
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
	if _, err := s.ref.logCharge(&ev, ctx, false); err != nil {
		return 0, nil, err
	}
	return wire.TypeAck, ack, nil
}

// rejudge recomputes the charge of every record of number n in ctx, the
// context of n's certificate after it was replaced (certOutranks): a
// server that certified n by an abort and then took its final certificate
// must charge what the others charge (seeds 165 and 167 of the swarm).
// Evidence of another epoch than ctx's charges nobody now. Never call
// with rs.mu held.
func (rs *refusalState) rejudge(n uint64, ctx blame.Context) {
	rs.loaded.Do(rs.loadRefusals)
	type judged struct {
		key, peer, reason string
	}
	rs.mu.Lock()
	var evs []*wire.Charge
	for i := range rs.recs {
		var ev wire.Charge
		if r := &rs.recs[i]; r.Number == n && r.Ev != nil && ev.Unmarshal(r.Ev) == nil {
			evs = append(evs, &ev)
		}
	}
	rs.mu.Unlock()
	// Checked outside the lock: signatures.
	var out []judged
	for _, ev := range evs {
		j := judged{key: blame.ChargeKey(ev)}
		charged, reason, err := blame.ChargeOf(ev, ctx)
		if err != nil {
			j.reason = err.Error()
		} else if j.reason = reason; charged != "" {
			j.peer = charged.String()
		}
		out = append(out, j)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	changed := false
	for _, j := range out {
		for i := range rs.recs {
			if r := &rs.recs[i]; r.Key == j.key && r.Number == n && r.Peer != j.peer {
				rs.log.Info("charge recomputed from the number's new certificate", "number", n, "was", r.Peer, "now", j.peer, "reason", j.reason)
				r.Peer, r.Reason, changed = j.peer, j.reason, true
			}
		}
	}
	if changed {
		rs.prune()
		rs.saveRefusalsLocked()
	}
}

package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Receipts and dry statements (docs/protocol.md §5.4): a primary signs a
// receipt of each onion it takes, the reply every client gets to every
// submission, and a dry statement for each of its slots it holds no onion
// of when S_0 asks for a round it could not fill (or when a departed
// client's cover ran out, departure.go). It never signs both for one slot
// and round: a slot signed dry takes no onion of that round. S_0 hands
// the dry statements of the round to every chain server; a client whose
// epoch ended before its rounds shows its receipts of them to every chain
// server but its primary; a server that holds both for one slot logs them
// as evidence against the primary (wire.EvHeld, blame.ChargeOf).

// dryKey names a slot of a round.
type dryKey struct{ round, slot uint32 }

// heldCap bounds this primary's receipt records (receiptLocked): a few
// rounds' worth of every slot.
func (e *sepoch) heldCap() int { return 4*len(e.final.Desc.Clients) + 16 }

// The dry statements and shown receipts held here are keyed by slot and
// round, each checked against the signature of the slot's primary, and
// taken only of the rounds heldRound allows: every signer fills only its
// own slots' keys, so one table holds at most every slot's window and no
// signer or sender crowds out another's, nor one table the other (the
// tables had one shared cap before, which a primary of many slots could
// fill). pruneHeldLocked drops the rounds with a final list here.

// pruneHeldLocked drops the dry statements and shown receipts of rounds
// with a final list here, once a table holds more than every slot's
// window. Call with s.mu held.
func (e *sepoch) pruneHeldLocked() {
	bound := len(e.final.Desc.Clients) * int(uint32(max(e.final.Desc.Params.W, 1))+roundsAhead)
	if len(e.dries) > bound {
		for k := range e.dries {
			if k.round < e.listHigh {
				delete(e.dries, k)
			}
		}
	}
	if len(e.shown) > bound {
		for k := range e.shown {
			if k.round < e.listHigh {
				delete(e.shown, k)
			}
		}
	}
	if len(e.fwdRoots) > len(e.final.Chain)*int(uint32(max(e.final.Desc.Params.W, 1))+roundsAhead) {
		for k := range e.fwdRoots {
			if k.round < e.listHigh {
				delete(e.fwdRoots, k)
			}
		}
	}
	if len(e.accounts) > len(e.final.Chain)*int(uint32(max(e.final.Desc.Params.W, 1))+roundsAhead) {
		for k := range e.accounts {
			if k.round < e.listHigh {
				delete(e.accounts, k)
			}
		}
	}
}

// heldRound reports whether round r may hold a dry statement or a shown
// receipt here: one without a final list here, no further ahead than a
// client submits and a primary forwards, so that each slot holds a few
// and no signer's flood fills the table for the others. Call with s.mu
// held.
func (e *sepoch) heldRound(r uint32) bool {
	return r >= e.listHigh && r < e.listHigh+uint32(max(e.final.Desc.Params.W, 1))+roundsAhead
}

// receiptLocked is this primary's signed receipt of sub, whose
// submission digest is digest. Call with s.mu held.
func (s *Server) receiptLocked(e *sepoch, sub *wire.Submit, digest [32]byte) (wire.Type, []byte, error) {
	r := wire.OnionReceipt{Epoch: e.final.ID, Round: sub.Round, Slot: sub.Slot, Server: uint16(e.pos), Digest: digest}
	sig, err := proto.Sign(s.priv, proto.OnionReceiptDigest(&r))
	if err != nil {
		return 0, nil, err
	}
	r.Sig = sig
	// Kept past the epoch's end, when the onions are dropped: a slot
	// receipted is never signed dry (rev40a).
	if e.receipted == nil || len(e.receipted) >= e.heldCap() {
		old := e.receipted
		e.receipted = map[dryKey][32]byte{}
		e.receiptFloor = max(e.receiptFloor, e.listHigh)
		for k, d := range old {
			if k.round >= e.listHigh {
				e.receipted[k] = d
			}
		}
	}
	e.receipted[dryKey{sub.Round, sub.Slot}] = digest
	return wire.TypeOnionReceipt, r.Marshal(), nil
}

// signedDry reports whether a dry statement of slot sl for round r is
// held here. Call with s.mu held.
func (e *sepoch) signedDry(r, sl uint32) bool {
	_, ok := e.dries[dryKey{r, sl}]
	return ok
}

// dryEver reports whether this primary signed slot sl dry for any round
// (its key's admission priority drops, ltexclude.go). Call with s.mu held.
func (e *sepoch) dryEver(sl uint32) bool { return e.ranDry[sl] }

// signDryLocked signs slot sl of this primary dry for round r, once, and
// keeps the statement; false if the slot holds an onion of r (or has one
// handed over for it), is dead or r is outside heldRound. Call with s.mu
// held.
func (s *Server) signDryLocked(e *sepoch, r, sl uint32) (wire.Dry, bool) {
	k := dryKey{r, sl}
	if d, ok := e.dries[k]; ok {
		return d, true
	}
	// An ended epoch's onions are dropped: no dry statement is signed
	// after its end, nor of a slot receipted (rev40a).
	_, receipted := e.receipted[k]
	if e.ended || receipted || e.isDead(sl) || e.handover.Has(sl, r) || !e.heldRound(r) {
		return wire.Dry{}, false
	}
	if x := e.rounds[r]; x != nil {
		if _, ok := x.subs[sl]; ok {
			return wire.Dry{}, false
		}
	}
	d := wire.Dry{Epoch: e.final.ID, Round: r, Slot: sl, Server: uint16(e.pos)}
	sig, err := proto.Sign(s.priv, proto.DryDigest(&d))
	if err != nil {
		return wire.Dry{}, false
	}
	d.Sig = sig
	if e.dries == nil {
		e.dries = map[dryKey]wire.Dry{}
	}
	if e.ranDry == nil {
		e.ranDry = map[uint32]bool{}
	}
	e.dries[k] = d
	e.ranDry[sl] = true
	e.pruneHeldLocked()
	return d, true
}

// onDryReq answers S_0's request for this primary's dry statements of a
// round it could not fill: one for each of its slots without an onion of
// the round, once the round is due (its clients sent their onions of it
// when round r − W's list was final, W rounds ahead); the onions it does
// hold go to S_0 again first, in case their forward was lost.
func (s *Server) onDryReq(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var q wire.EpochRef
	if err := q.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(q.Epoch)
	if err != nil {
		return 0, nil, err
	}
	r := q.Round
	s.mu.Lock()
	if e.final.Chain[0] != from || e.pos <= 0 {
		s.mu.Unlock()
		return 0, nil, errors.New("node: dry statements are S_0's to ask of a primary")
	}
	p := e.final.Desc.Params
	W := uint32(max(p.W, 1))
	limit := time.Duration(p.RoundLimitMs) * time.Millisecond
	opened, open := e.openAt[r]
	switch {
	case e.ended:
		// Its onions are dropped here: a dry statement now could say
		// dry of an onion receipted (rev40a).
		s.mu.Unlock()
		return 0, nil, fmt.Errorf("node: epoch ended: %s", e.reason)
	case r >= p.Rounds:
		s.mu.Unlock()
		return 0, nil, fmt.Errorf("node: round %d beyond the epoch's %d", r, p.Rounds)
	case r < W && !e.setupDone, r >= W && e.listHigh <= r-W, !open, time.Since(opened) < limit/2:
		// Its clients' onions may still be on their way: S_0 asks at
		// its round limit, a full limit after the round opened there.
		s.mu.Unlock()
		return 0, nil, fmt.Errorf("node: round %d not due here", r)
	}
	if s.hookRun().DrySilent(q.Epoch, r) {
		s.mu.Unlock()
		return 0, nil, errors.New("node: no answer")
	}
	lie := s.hookRun().DryLie(q.Epoch, r)
	set := wire.DrySet{Epoch: q.Epoch, Round: r}
	batch := wire.SubmitBatch{Epoch: q.Epoch, Round: r}
	whole := true
	if r >= e.listHigh && e.admit(r) == nil {
		x := e.rounds[r]
		for _, sl := range e.clientsOf(e.pos) {
			if x != nil && !lie {
				if sub, ok := x.subs[sl]; ok && !e.isDead(sl) {
					batch.Subs = append(batch.Subs, sub)
					continue
				}
			}
			if lie {
				// riffletest: a corrupt primary that says dry of an
				// onion it took (signDryLocked refuses that).
				if d, ok := s.hookRun().LieDryLocked(e, r, sl); ok {
					set.Dries = append(set.Dries, d)
				}
				continue
			}
			if d, ok := s.signDryLocked(e, r, sl); ok {
				set.Dries = append(set.Dries, d)
			} else if !e.isDead(sl) {
				whole = false // a handed-over onion still to come
			}
		}
	}
	var f *wire.ForwardRoot
	if len(batch.Subs) > 0 && whole {
		// forward.go: every slot is in the forward, signed dry or dead,
		// so that no onion the root leaves out is receipted after.
		f = s.signForwardRootLocked(e, r)
	}
	s.mu.Unlock()
	if len(batch.Subs) > 0 {
		if f != nil {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.sendForwardRoot(e, f)
			}()
		}
		s.forwardSubs(e, &batch)
	}
	return wire.TypeDrySet, set.Marshal(), nil
}

// checkDryLocked checks d as slot d.Slot's primary's dry statement of
// round r of e. Call with s.mu held.
func checkDryLocked(e *sepoch, d *wire.Dry, r uint32) error {
	c := e.final.Desc.Clients
	if d.Round != r || int(d.Slot) >= len(c) || c[d.Slot].Primary != d.Server {
		return errors.New("node: dry statement of another round or not by its slot's primary")
	}
	return proto.CheckDry(d, e.final.ID, e.final.Chain)
}

// noteDryLocked keeps a checked dry statement and looks for its receipt.
// Call with s.mu held.
func (s *Server) noteDryLocked(e *sepoch, d wire.Dry) {
	k := dryKey{d.Round, d.Slot}
	if _, ok := e.dries[k]; !ok {
		if !e.heldRound(d.Round) {
			return
		}
		if e.dries == nil {
			e.dries = map[dryKey]wire.Dry{}
		}
		e.dries[k] = d
		e.pruneHeldLocked()
	}
	s.matchHeldLocked(e, k)
}

// askDries is S_0's last step before it ends e for round r unfilled: it
// asks the primary of every empty slot for its dry statements (signing
// its own), hands them to every chain server, and reports whether the
// round filled meanwhile (a primary sent onions whose forward was lost),
// once a round. Without s.mu.
func (s *Server) askDries(e *sepoch, r uint32) bool {
	s.mu.Lock()
	if e.ended || e.final == nil || e.pos != 0 || e.asked[r] {
		s.mu.Unlock()
		return false
	}
	if r >= mixDepth {
		if x := e.rounds[r-mixDepth]; x == nil || !x.pubDone {
			s.mu.Unlock()
			return false // a missing publication, not an empty slot
		}
	}
	if e.asked == nil {
		e.asked = map[uint32]bool{}
	}
	e.asked[r] = true
	x := e.round(r)
	set := wire.DrySet{Epoch: e.final.ID, Round: r}
	ask := map[int]bool{}
	for i, c := range e.final.Desc.Clients {
		sl := uint32(i)
		if _, ok := x.subs[sl]; ok || e.isDead(sl) {
			continue
		}
		if c.Primary == 0 {
			if d, ok := s.signDryLocked(e, r, sl); ok {
				set.Dries = append(set.Dries, d)
				s.matchHeldLocked(e, dryKey{r, sl})
			}
			continue
		}
		ask[int(c.Primary)] = true
	}
	chain := e.final.Chain
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	s.mu.Unlock()
	var to []peer.ID
	for j := range chain {
		if ask[j] {
			to = append(to, chain[j])
		}
	}
	ctx, cancel := context.WithTimeout(s.ctx, min(max(limit/2, 100*time.Millisecond), transport.ShortTimeout))
	reps, _ := s.each(ctx, to, transport.Request{Proto: ProtoRound, Type: wire.TypeDryReq, Body: (&wire.EpochRef{Epoch: e.final.ID, Round: r}).Marshal(), Timeout: transport.ShortTimeout})
	cancel()
	s.mu.Lock()
	for i, rep := range reps {
		var got wire.DrySet
		if rep == nil || got.Unmarshal(rep, proto.LimitsFor(e.final.Desc.Params, len(chain))) != nil || got.Epoch != e.final.ID || got.Round != r {
			continue
		}
		for _, d := range got.Dries {
			if chain[d.Server%uint16(len(chain))] != to[i] || checkDryLocked(e, &d, r) != nil {
				continue
			}
			set.Dries = append(set.Dries, d)
			s.noteDryLocked(e, d)
		}
	}
	live, in := e.liveCount(x, allSlots(len(e.final.Desc.Clients)))
	filled := !e.ended && in >= live
	s.mu.Unlock()
	if filled {
		return true
	}
	var others []peer.ID
	for _, p := range chain {
		if p != s.h.ID() {
			others = append(others, p)
		}
	}
	if len(set.Dries) > 0 {
		s.notifyAll(others, wire.TypeDrySet, set.Marshal())
	}
	return false
}

// allSlots is 0 … n−1.
func allSlots(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i)
	}
	return out
}

// onDrySet takes S_0's dry statements of a round it could not fill:
// decoded only once the sender is S_0 of an epoch held here, within the
// epoch's limits.
func (s *Server) onDrySet(from peer.ID, body []byte) (wire.Type, []byte, error) {
	id, round, err := wire.DrySetHead(body)
	if err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(id)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	if e.final.Chain[0] != from || round >= e.final.Desc.Params.Rounds {
		s.mu.Unlock()
		return 0, nil, errors.New("node: dry statements come from S_0, of a round of the epoch")
	}
	lim := proto.LimitsFor(e.final.Desc.Params, len(e.final.Chain))
	s.mu.Unlock()
	var set wire.DrySet
	if err := set.Unmarshal(body, lim); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range set.Dries {
		if checkDryLocked(e, &d, set.Round) == nil {
			s.noteDryLocked(e, d)
		}
	}
	return wire.TypeAck, ack, nil
}

// onShowReceipt takes a client's receipt of a round its epoch ended
// before, from whoever carries it: kept if its slot's primary signed it,
// a few a slot, and matched against that primary's dry statements.
func (s *Server) onShowReceipt(body []byte) (wire.Type, []byte, error) {
	var r wire.OnionReceipt
	if err := r.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(r.Epoch)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	c := e.final.Desc.Clients
	ok := e.pos >= 0 && r.Round < e.final.Desc.Params.Rounds && int(r.Slot) < len(c) && c[r.Slot].Primary == r.Server
	chain := e.final.Chain
	k := dryKey{r.Round, r.Slot}
	_, have := e.shown[k]
	// A few rounds a slot (heldRound): one slot's receipts, or its
	// primary's, crowd out no other's.
	full := !e.heldRound(r.Round)
	s.mu.Unlock()
	if !ok {
		return 0, nil, errors.New("node: a receipt of another epoch or not by its slot's primary")
	}
	if have || full {
		return wire.TypeAck, ack, nil
	}
	if err := proto.CheckOnionReceipt(&r, e.final.ID, chain); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, have := e.shown[k]; !have && e.heldRound(r.Round) {
		if e.shown == nil {
			e.shown = map[dryKey]wire.OnionReceipt{}
		}
		e.shown[k] = r
		e.pruneHeldLocked()
	}
	s.matchHeldLocked(e, k)
	s.matchForwardLocked(e, k)
	s.matchAccountLocked(e, k)
	if e.ended {
		// Its primary's account of the round is asked for (silent.go):
		// not before the end, when the round may still run.
		s.startAccountsLocked(e, r.Round, false)
	}
	return wire.TypeAck, ack, nil
}

// matchHeldLocked logs and relays the evidence against a primary that
// receipted the onion of k and signed k dry, both held here. Call with
// s.mu held.
func (s *Server) matchHeldLocked(e *sepoch, k dryKey) {
	d, ok := e.dries[k]
	r, shown := e.shown[k]
	if !ok || !shown || d.Server != r.Server || e.heldLogged[d.Server] {
		return
	}
	if e.heldLogged == nil {
		e.heldLogged = map[uint16]bool{}
	}
	e.heldLogged[d.Server] = true
	s.log.Warn("a primary receipted an onion and signed its slot dry", "round", k.round, "slot", k.slot, "primary", e.final.Chain[d.Server].ShortString())
	ev := &wire.Charge{Kind: wire.EvHeld, Number: e.v.Desc.Number, Item: wire.HeldItem(&r, &d)}
	s.noteChargeLocked(e, ev, nil, "")
}

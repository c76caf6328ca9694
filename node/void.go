package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A void that names nobody does not end the epoch (docs/protocol.md §5.2
// v3). When S_0 cannot mix round r because round r − mixDepth's
// publication never came within the round limit (the last server kept it,
// or a batch was lost on the way), it proposes a void list for that round:
// a RoundList with the ListVoid flag and nothing in it, which every server
// signs only if it has not published the round (and from then on drops
// its publication), so that all m signatures are the record a client
// needs to send the round's chunks again. Clients send them in later
// rounds of the same epoch, under the same pseudonym, and query nothing
// for the void round. One such void an epoch: a second ends the epoch as
// before. The void, like the abort it replaces, charges the first chain
// position whose part of the round more than half of the others attest
// they lacked, else its proposer (charges.go): the last server for a
// missing publication, a server that claimed it lacks its input batch
// (lack.go) for its own part. S_0 proposes the void at once on such a
// claim.

// voidRound has every server of the chain sign round r void and delivers
// the signed list; it reports whether it did. S_0 only.
func (s *Server) voidRound(e *sepoch, r uint32) bool {
	v := e.final
	s.mu.Lock()
	x := e.round(r)
	if e.ended || x.pubDone || x.publishing || (e.voids > 0 && !x.void) {
		s.mu.Unlock()
		return false
	}
	if x.list != nil {
		s.mu.Unlock()
		return true // signed void already
	}
	s.mu.Unlock()
	s.listingStart(e)
	defer s.listingDone(e)
	rl := wire.RoundList{Epoch: v.ID, Round: r, Flags: wire.ListVoid}
	if err := s.signProposal(&rl); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
	defer cancel()
	reps, err := s.each(ctx, v.Chain, transport.Request{Proto: ProtoRound, Type: wire.TypeProposal, Body: rl.Marshal(), Timeout: transport.BulkTimeout})
	if err != nil {
		s.log.Warn("void list refused", "round", r, "err", err)
		return false
	}
	rl.Sigs = nil
	for i, rep := range reps {
		var sg wire.Sig
		if err := sg.Unmarshal(rep); err != nil || int(sg.Index) != i {
			s.log.Warn("void list: bad signature", "round", r)
			return false
		}
		rl.Sigs = append(rl.Sigs, sg.Sig)
	}
	if _, err := s.each(ctx, v.Chain, transport.Request{Proto: ProtoRound, Type: wire.TypeRoundList, Body: rl.Marshal(), Timeout: transport.BulkTimeout}); err != nil {
		s.log.Warn("deliver void list", "round", r, "err", err)
	}
	return true
}

// signVoid signs a proposal of round r void, unless this server has
// published the round or already holds another void of the epoch; from
// then on the round's batches and publication are dropped here.
func (s *Server) signVoid(ctx context.Context, e *sepoch, rl *wire.RoundList) (wire.Type, []byte, error) {
	v := e.final
	if done, t, body, err := s.walks().SignVoid(ctx, blameEp(e), rl); done {
		return t, body, err
	}
	if rl.Round >= v.Desc.Params.Rounds {
		return 0, nil, fmt.Errorf("node: void round %d beyond the epoch's %d", rl.Round, v.Desc.Params.Rounds)
	}
	s.mu.Lock()
	if err := e.admit(rl.Round); err != nil {
		s.mu.Unlock()
		return 0, nil, err
	}
	x := e.round(rl.Round)
	switch {
	case e.ended:
		s.mu.Unlock()
		return 0, nil, errors.New("node: epoch ended")
	case x.pubDone || x.publishing:
		s.mu.Unlock()
		return 0, nil, fmt.Errorf("node: round %d is published here, not void", rl.Round)
	case e.voids > 0 && !x.void:
		s.mu.Unlock()
		return 0, nil, errors.New("node: a second void round ends the epoch")
	}
	if !x.void {
		e.voided(x, rl.Round)
		e.voids++
		s.log.Warn("round void, epoch goes on", "round", rl.Round)
		// What this server lacks of the round as it signs: its
		// attestation in the void's evidence (noteVoid), which charges
		// the part a majority lacked, or the proposer (charges.go).
		s.roundAttestLocked(e, rl.Round)
	}
	dg := proto.ListDigest(rl)
	x.signed, x.signedState = dg, wire.ClosedVoid
	s.mu.Unlock()
	sig, err := proto.Sign(s.priv, dg)
	if err != nil {
		return 0, nil, err
	}
	return wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
}

// noteVoid marks round r void once its signed void list (body) is here (a
// server that signed it has already), and logs the list as evidence with
// this server's attestation (charges.go), unless a round blame voided it.
// Call without s.mu.
func (s *Server) noteVoid(e *sepoch, r uint32, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := e.round(r)
	if !x.void {
		e.voided(x, r)
		if !e.blames.Voided(r) {
			e.voids++
		}
	}
	if e.blames.Voided(r) || e.blames.Walked(r) {
		return
	}
	own := s.roundAttestLocked(e, r)
	ev := &wire.Charge{Kind: wire.EvVoid, Number: e.final.Desc.Number, Item: body}
	// The lack claims the void was proposed on, the first taken here
	// and this server's own: unbacked, the void is its first
	// claimant's (blame.ChargeOf).
	if x.claim != nil {
		ev.Attests = append(ev.Attests, *x.claim)
	}
	if x.ownClaim != nil && x.ownClaim != x.claim {
		ev.Attests = append(ev.Attests, *x.ownClaim)
	}
	s.noteChargeLocked(e, ev, own, "")
}

// listingStart and listingDone count S_0's lists being signed (closing.go
// waits for them).
func (s *Server) listingStart(e *sepoch) {
	s.mu.Lock()
	e.listing++
	s.mu.Unlock()
}

func (s *Server) listingDone(e *sepoch) {
	s.mu.Lock()
	e.listing--
	s.notify()
	s.mu.Unlock()
}

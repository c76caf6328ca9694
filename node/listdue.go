package node

import (
	"context"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A list due (docs/protocol.md §5.3, "A list due"): S_0 proposes and
// delivers every round's final request list, and an epoch ends only once
// its last rounds' lists are there (answerRound). A round published here
// has its list due at blame.Dues.ListDue; past it this server asks the
// chain for the list until it has it or the epoch ends, so that a list
// lost on one link comes from the servers that have it. It signs no
// abort for a list that never comes: an abort charged on the chain's
// attestations that none came framed an honest S_0 whose list a corrupt
// signer held back past the due, and an honest asker that a corrupt S_0
// served some servers only; telling "no proposal
// came" from "a signature was withheld" needs evidence the protocol does
// not have yet. An S_0 that proposes no list ends its epoch, charging
// nobody, once more than half of the chain signed that none came
// (endUnproposed); one that has a list signed and delivers it nowhere
// holds nothing up: every signer sends its signature to every chain
// server, which assembles the list itself (listsig.go).

// askListLocked starts asking the chain for the list of the first
// round of e published here whose list is past its due. Call with s.mu
// held.
func (s *Server) askListLocked(e *sepoch) {
	if e.ended || e.final == nil || e.pos <= 0 || e.listAsking {
		return
	}
	q, ok := e.listlessRound(time.Now())
	if !ok {
		return
	}
	e.listAsking = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.askList(e, q)
	}()
}

// listlessRound is the first round of e published here with no final
// list past its due (ListDue), below every round blamed with no list
// here: S_0 lists a round only once every round before it is published
// or listed (its manifests), and a blamed round is listed (void) only
// once its walk settled, which takes as long as it takes. Call with s.mu
// held.
func (e *sepoch) listlessRound(now time.Time) (uint32, bool) {
	held := e.final.Desc.Params.Rounds
	for q, x := range e.rounds {
		if q < held && e.blames.Walked(q) && (x == nil || x.list == nil) {
			held = q
		}
	}
	var first uint32
	found := false
	for q, x := range e.rounds {
		if found && q >= first || q >= held || !e.listMissing(x) {
			continue
		}
		if at := e.dues().ListDue(e.times(q)); at.IsZero() || now.Before(at) {
			continue
		}
		first, found = q, true
	}
	return first, found
}

// listMissing reports whether round x is published here with no final
// list. Call with s.mu held.
func (e *sepoch) listMissing(x *sround) bool {
	return x != nil && x.pubDone && !x.void && x.list == nil
}

// askList asks the chain for round q's final list every half round limit
// until it is here or e ended; past ListGone it warns once and asks half
// as often each time, down to once in eight round limits, so that an
// epoch held for good costs its servers, and a chain server answering
// each ask with a list's worth of bytes costs them, little.
func (s *Server) askList(e *sepoch, q uint32) {
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	every := limit / 2
	warned := false
	for {
		s.mu.Lock()
		x := e.rounds[q]
		if e.ended || !e.listMissing(x) {
			e.listAsking = false
			s.mu.Unlock()
			return
		}
		gone := e.dues().ListGone(e.times(q))
		past := !gone.IsZero() && !time.Now().Before(gone)
		if past {
			if warned {
				every = min(2*every, 8*limit)
			} else {
				warned = true
				s.log.Warn("request list past its due: still asking the chain", "number", e.final.Desc.Number, "round", q)
			}
		}
		var others []peer.ID
		for _, p := range e.final.Chain {
			if p != s.h.ID() {
				others = append(others, p)
			}
		}
		s.mu.Unlock()
		if past && s.endUnproposed(e, q) {
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, every)
		reps, _ := s.each(ctx, others, transport.Request{Proto: ProtoRound, Type: wire.TypeListReq, Body: (&wire.EpochRef{Epoch: e.final.ID, Round: q}).Marshal(), Timeout: min(every, limit)})
		for i, rep := range reps {
			if rep != nil && s.takeAskedList(e, q, others[i], rep) {
				break
			}
		}
		<-ctx.Done()
		cancel()
		if s.ctx.Err() != nil {
			return
		}
	}
}

// takeAskedList takes rep, a chain server's answer to this server's
// ListReq, as round q's final list, and reports whether round q has
// its list here now. Only a list of exactly (e, q) counts: any other
// valid list of the epoch, an old one a corrupt server answers with,
// is taken by onRoundList without error and held this server's asking
// at one reply.
func (s *Server) takeAskedList(e *sepoch, q uint32, from peer.ID, rep []byte) bool {
	var rl wire.RoundList
	if rl.Unmarshal(rep, proto.GenericLimits()) != nil || rl.Epoch != e.final.ID || rl.Round != q {
		return false
	}
	if len(rl.Sigs) == 1 {
		// S_0's proposal, which S_0 left this server without: signed
		// here, the signature goes to the chain (listsig.go).
		s.takeHandedProposal(e, &rl, from)
	} else if _, _, err := s.onRoundList(from, rep); err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := e.rounds[q]
	return x != nil && x.list != nil
}

// endUnproposed ends e, charging nobody, once more than half of its
// chain's servers signed that round q's list was never proposed to them
// by their ListGone (listNoteLocked), this server's own note counted,
// and reports whether it did. An honest server signs that note only
// when S_0 proposed it nothing, so a corrupt minority can end no epoch
// this way, and a withheld signature ends none (the servers that got
// the proposal sign no note); an S_0 that proposes nothing holds its
// epoch for ListGone, not for good. Never call with s.mu held.
func (s *Server) endUnproposed(e *sepoch, q uint32) bool {
	s.mu.Lock()
	own := s.listNoteLocked(e, q)
	s.mu.Unlock()
	notes := map[uint16]bool{}
	if own != nil {
		notes[own.Signer] = true
	}
	for _, a := range s.askAttests(e, wire.AbortNoList, q, "") {
		if a.Lacking&1 != 0 {
			notes[a.Signer] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if 2*len(notes) <= len(e.final.Chain) || e.ended || !e.listMissing(e.rounds[q]) {
		return false
	}
	s.log.Warn("request list never proposed: epoch ended, nobody charged", "number", e.final.Desc.Number, "round", q, "notes", len(notes))
	s.endQuiet(e, fmt.Sprintf("round %d: no request list proposed (%d of %d past its due)", q, len(notes), len(e.final.Chain)))
	return true
}

// listNoteLocked is this server's signed note (an Attest of kind
// AbortNoList, bit 0) that round q, published here, had no final list
// and no proposal of it came here by ListGone: signed once, the answer
// ever after; nil while that does not hold. It counts for no charge
// (blame.ChargeOf), only for endUnproposed. Call with s.mu held.
func (s *Server) listNoteLocked(e *sepoch, q uint32) *wire.Attest {
	if a := e.listNoted[q]; a != nil {
		return a
	}
	if e.ended || e.final == nil || q >= e.final.Desc.Params.Rounds {
		return nil
	}
	x := e.rounds[q]
	gone := e.dues().ListGone(e.times(q))
	if !e.listMissing(x) || x.proposed || gone.IsZero() || time.Now().Before(gone) {
		return nil
	}
	a := s.signAttestLocked(e, wire.AbortNoList, q, 1)
	if a != nil {
		if e.listNoted == nil {
			e.listNoted = map[uint32]*wire.Attest{}
		}
		e.listNoted[q] = a
	}
	return a
}

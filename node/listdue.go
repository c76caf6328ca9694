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
// its last rounds' lists are there (answerRound). An S_0 that published
// every round but listed none of the last left every round published, so
// none stale (stale.go), and the epoch, and with it the group's numbers
// (busy), held for good with nobody charged. So a round published here
// has its list due at blame.Dues.ListDue; past it this server asks the
// chain for the list, and at ListGone ends the epoch with an abort of
// kind AbortNoList, which charges S_0 on the chain's signed attestations
// that no list came by their own dues, else its signer (blame.ChargeOf).

// endListlessLocked starts asking for the list of the first round of e
// published here whose list is past its due, and then ending e for it.
// Call with s.mu held.
func (s *Server) endListlessLocked(e *sepoch) {
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
		s.endListless(e, q)
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
		if q < held && e.roundBlamed(q) && (x == nil || x.list == nil) {
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

// endListless asks the chain for round q's final list, every half round
// limit until ListGone, and then ends e with the abort of the missing
// list if it did not come (nor the epoch's end otherwise).
func (s *Server) endListless(e *sepoch, q uint32) {
	half := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond / 2
	for {
		s.mu.Lock()
		x := e.rounds[q]
		if e.ended || !e.listMissing(x) {
			e.listAsking = false
			s.mu.Unlock()
			return
		}
		wait := time.Until(e.dues().ListGone(e.times(q)))
		var others []peer.ID
		for _, p := range e.final.Chain {
			if p != s.h.ID() {
				others = append(others, p)
			}
		}
		s.mu.Unlock()
		if wait <= 0 {
			break
		}
		ctx, cancel := context.WithTimeout(s.ctx, min(half, wait))
		reps, _ := s.each(ctx, others, transport.Request{Proto: ProtoRound, Type: wire.TypeListReq, Body: (&wire.EpochRef{Epoch: e.final.ID, Round: q}).Marshal(), Timeout: min(half, wait)})
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended || !e.listMissing(e.rounds[q]) {
		e.listAsking = false
		return
	}
	s.log.Warn("listless epoch: no request list by its due", "number", e.final.Desc.Number, "round", q)
	s.endNoList(e, q, fmt.Sprintf("round %d: no request list by its due", q))
}

// takeAskedList takes rep, a chain server's answer to this server's
// ListReq, as round q's final list, and reports whether round q has
// its list here now. Only a list of exactly (e, q) counts: any other
// valid list of the epoch, an old one a corrupt server answers with,
// is taken by onRoundList without error and held this server's asking
// at one reply (the rev41b review).
func (s *Server) takeAskedList(e *sepoch, q uint32, from peer.ID, rep []byte) bool {
	var rl wire.RoundList
	if rl.Unmarshal(rep, proto.GenericLimits()) != nil || rl.Epoch != e.final.ID || rl.Round != q {
		return false
	}
	if _, _, err := s.onRoundList(from, rep); err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := e.rounds[q]
	return x != nil && x.list != nil
}

// endNoList ends e for round q's missing list with an abort that says so
// (AbortNoList), attested here as it ends. Call with s.mu held.
func (s *Server) endNoList(e *sepoch, q uint32, reason string) {
	s.endQuiet(e, reason)
	s.listAttestLocked(e, q)
	s.broadcastAbortKind(e, wire.AbortNoList, q, reason)
}

// listAttestLocked is this server's signed attestation of round q's
// final list: bit 0 (S_0's) set when the round was published here and
// its list had not come by its due (ListDue), a list that came later
// counting as missing, as a late root does (blame.Dues.Late), and the
// due passed before the epoch ended here. Signed once the due passed or
// the epoch ended, the answer ever after; nil before, or while the
// round is not open here. Call with s.mu held.
func (s *Server) listAttestLocked(e *sepoch, q uint32) *wire.Attest {
	if a := e.listAttested[q]; a != nil {
		return a
	}
	if e.final == nil || q >= e.final.Desc.Params.Rounds {
		return nil
	}
	due := e.dues().ListDue(e.times(q))
	if due.IsZero() {
		return nil
	}
	stop := e.endedAt
	if stop.IsZero() {
		if time.Now().Before(due) {
			return nil
		}
		stop = time.Now()
	}
	var bits uint64
	if x := e.rounds[q]; x != nil && x.pubDone && !x.void && !due.After(stop) && (x.list == nil || x.listAt.After(due)) {
		bits = 1
	}
	a := s.signAttestLocked(e, wire.AbortNoList, q, bits)
	if a != nil {
		if e.listAttested == nil {
			e.listAttested = map[uint32]*wire.Attest{}
		}
		e.listAttested[q] = a
	}
	return a
}

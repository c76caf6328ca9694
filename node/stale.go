package node

import (
	"context"
	"fmt"
	"time"
)

// A stale epoch (docs/protocol.md §3, "Stale epochs"): S_0 drives the
// rounds and ends an epoch whose publication never came (mixing.go), so an
// S_0 gone mid-epoch (a crash, a restart that forgot it, or a corrupt one
// gone silent) left the epoch running at the others for good, and with it
// their turns (the swarm's seed 91). Every other server of the chain
// therefore ends the epoch itself once a round open there is stale by its
// dues (blame.Dues.Stale) with neither its publication nor a void: first
// it asks the chain for the publication, then it signs the abort of the
// missing publication (AbortNoPub), which charges, on the chain's signed
// attestations, the first part a majority lacked, else its signer
// (blame.ChargeOf). How long the epoch was quiet here counts for nothing.

// endStaleLocked starts the end of e if one of its rounds is stale here,
// and asks the chain for a list past its due (listdue.go). Call with
// s.mu held.
func (s *Server) endStaleLocked(e *sepoch) {
	s.askListLocked(e)
	if e.ended || e.final == nil || e.pos <= 0 || e.staleAsking {
		return
	}
	q, ok := e.staleRound(time.Now())
	if !ok {
		return
	}
	e.staleAsking = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.endStale(e, q)
	}()
}

// staleRound is the first round of e open here that is stale at now: past
// blame.Dues.Stale with neither its publication, its list nor a void
// here, and no round blame walking it. Call with s.mu held.
func (e *sepoch) staleRound(now time.Time) (uint32, bool) {
	var first uint32
	found := false
	for q := range e.openAt {
		if found && q >= first {
			continue
		}
		if x := e.rounds[q]; x != nil && (x.pubDone || x.publishing || x.void || x.list != nil) {
			continue
		}
		if e.blames.Walked(q) {
			continue
		}
		if at := e.dues().Stale(e.times(q)); at.IsZero() || now.Before(at) {
			continue
		}
		first, found = q, true
	}
	return first, found
}

// endStale asks the chain for stale round q's publication, a round limit
// at most, and ends e with the abort of the missing publication if it
// did not come (nor a void, nor the epoch's end otherwise).
func (s *Server) endStale(e *sepoch, q uint32) {
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(s.ctx, limit)
	s.pub.Fetch(ctx, pubEpoch(e), q, e.final.Chain)
	cancel()
	if s.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	x := e.rounds[q]
	if e.ended || (x != nil && (x.pubDone || x.publishing || x.void || x.list != nil)) {
		e.staleAsking = false
		return
	}
	s.log.Warn("stale epoch: no publication by its dues", "number", e.final.Desc.Number, "round", q)
	s.endNoPub(e, q, fmt.Sprintf("round %d stale: no publication by its dues", q))
}

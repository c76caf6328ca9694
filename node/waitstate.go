package node

import (
	"context"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// What a client in no epoch waits for (docs/protocol.md §4.1): its primary
// says what the group is doing (wire.State), and the client turns that into
// the line its user reads, with an estimate. Every client that waits for an
// epoch asks at random intervals around stateEvery, whether its user has a
// job or not, so the question tells nobody anything; the answer only reaches
// the user (waitReason), never what the client sends.

// onStateReq answers a State. Any peer may ask (a client asks before it
// registers); the answer is a few dozen bytes built from counters, and
// takes one of the index pages' slots while it is written.
func (s *Server) onStateReq(ctx context.Context, from peer.ID) (wire.Type, []byte, error) {
	if err := s.ix.Pages.Enter(ctx, from); err != nil {
		return 0, nil, err
	}
	st := wire.State{Live: uint32(len(s.roster.live()) + 1), SinceEnd: wire.NoEnd}
	_, waiting := s.polls.Counts()
	st.Waiting = uint32(waiting)
	s.mu.Lock()
	defer s.mu.Unlock()
	st.MinServers, st.MinClients = uint32(s.cfg.MinServers), uint32(s.cfg.MinClients)
	if !s.lastEnd.IsZero() {
		st.SinceEnd = uint32(min(time.Since(s.lastEnd).Milliseconds(), int64(wire.NoEnd-1)))
	}
	var cur *sepoch
	for _, e := range s.epochs {
		if !e.ended && e.v != nil && (cur == nil || e.v.Desc.Number > cur.v.Desc.Number) {
			cur = e
		}
	}
	if cur == nil {
		return wire.TypeState, st.Marshal(), nil
	}
	st.Number, st.Rounds = cur.v.Desc.Number, cur.v.Desc.Params.Rounds
	switch {
	case !cur.reg.Closed():
		st.Phase, st.Registered = wire.PhaseOpen, uint32(cur.reg.Registered())
	case !cur.setupDone:
		st.Phase = wire.PhaseSetup
	default:
		st.Phase, st.Done = wire.PhaseRounds, min(cur.listHigh, st.Rounds)
		if dl := cur.reg.Deadline(); st.Done > 0 && !dl.IsZero() {
			st.RoundMillis = uint32(min(time.Since(dl).Milliseconds()/int64(st.Done), 1<<31))
		}
	}
	return wire.TypeState, st.Marshal(), nil
}

package node

import (
	"github.com/libp2p/go-libp2p/core/network"
)

// checkDepartures ends the epoch as soon as a departed client's cover
// window is spent (§5.4), instead of letting the leader wait out the round
// limit. When round r's list is final, a primary looks at each of its
// clients whose connection is gone: if the client never submitted an onion
// for round r+1, that round cannot be filled and the epoch ends now. The
// already-submitted onions have kept the slot filled until here, as §5.4
// wants; the end says only that a client left (which the closed connection
// shows anyway), never which slot. A connected client is never judged:
// its onion for r+1 was sent W ≥ 1 rounds ahead.
func (s *Server) checkDepartures(e *sepoch, r uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended || e.final == nil || r+1 >= e.final.desc.Params.Rounds {
		return
	}
	next := e.rounds[r+1]
	for i, c := range e.final.desc.Clients {
		if int(c.Primary) != e.pos {
			continue
		}
		if next != nil {
			if _, ok := next.subs[uint32(i)]; ok {
				continue
			}
		}
		p, ok := e.regFrom[c.RegKey]
		if !ok || s.h.Network().Connectedness(p) == network.Connected {
			continue
		}
		s.end(e, "a client left and its cover window is spent")
		return
	}
}

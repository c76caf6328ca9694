package node

import (
	"github.com/libp2p/go-libp2p/core/peer"
)

// checkDepartures signs a departed client's slot dry once its cover
// window is spent (§5.4): when round r's list is final, a primary looks at
// each of its clients whose connection is gone, and one that never
// submitted an onion for round r+1 ran dry; the signed statement (held.go)
// counts against the client's key here at the epoch's end (ltexclude.go). The primary does not end the
// epoch for it: its word that a client left is no evidence, and an abort
// of its own would charge it, honest, to its refusal budget for what its
// client did. The round cannot be filled, and S_0 ends the epoch at the
// round limit with the abort of an unfilled round, which charges no server
// (wire.AbortUnfilled; TestClientCrashChargesNoPrimary). A connected
// client is never judged: its onion for r+1 was sent W ≥ 1 rounds ahead.
func (s *Server) checkDepartures(e *sepoch, r uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkDeparturesLocked(e, r)
}

func (s *Server) checkDeparturesLocked(e *sepoch, r uint32) {
	if e.ended || e.final == nil || r+1 >= e.final.Desc.Params.Rounds {
		return
	}
	next := e.rounds[r+1]
	has := func(sl uint32) bool {
		if e.isDead(sl) {
			return true // it takes nothing more
		}
		if next == nil {
			return false
		}
		_, ok := next.subs[sl]
		return ok
	}
	gone := func(regKey [32]byte) bool {
		p, ok := e.reg.From(regKey)
		return ok && !s.h.Connected(p)
	}
	sl, spent := e.handover.Spent(e.final.Desc.Clients, e.pos, r+1, has, gone)
	if !spent {
		return
	}
	// §5.4: signed dry for r+1 (held.go), the statement S_0 gets when it
	// asks; it lowers the key's admission priority here (ltexclude.go,
	// at the epoch's end).
	s.signDryLocked(e, r+1, sl)
}

// onDisconnect runs the same check when a client's connection drops
// after round r's list was final, for the newest final list of every
// epoch this server is a primary in: no later list may come to look again.
func (s *Server) onDisconnect(p peer.ID) {
	if s.h.Connected(p) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.epochs {
		if e.ended || e.final == nil || !e.setupDone {
			continue
		}
		if !e.reg.RegisteredBy(p) {
			continue
		}
		// The newest round whose list is final here.
		last, any := uint32(0), false
		for r, x := range e.rounds {
			if x.list != nil && (!any || r > last) {
				last, any = r, true
			}
		}
		if any {
			s.checkDeparturesLocked(e, last)
		}
	}
}

// onConnEnd feeds connection ends to onDisconnect and onServerDisconnect.
// It comes on the transport's goroutine, which nothing of s waits for: the
// handler gate orders its s.wg.Add before Close's s.wg.Wait (a context
// check alone raced with Close).
func (s *Server) onConnEnd(p peer.ID) {
	if s.ctx.Err() != nil || !s.handlers.Enter() {
		return
	}
	s.wg.Add(1)
	s.handlers.Leave()
	go func() {
		defer s.wg.Done()
		s.onDisconnect(p)
		s.onServerDisconnect(p)
	}()
}

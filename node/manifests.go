package node

import (
	"github.com/riffle-net/riffle/node/internal/manifests"
)

// The index's manifests (§6.4 v3): package node/internal/manifests decides
// what the index takes in each round (sepoch.man, its own lock) and
// stores it; the rounds' request lists carry the ids.

// indexManifests takes round r's candidates through the caps and stores
// what they let in (with the rounds that waited for r).
func (s *Server) indexManifests(e *sepoch, r uint32, cands []manifests.Cand) {
	p := e.final.Desc.Params
	rs := e.man.Add(p.Rounds, p.ChunkSize, r, cands)
	if len(rs) > 0 {
		s.mu.Lock()
		s.notify()
		s.mu.Unlock()
	}
	manifests.Put(s.store, s.log, e.v.ID, rs)
}

// flushManifests indexes the rounds still waiting when the epoch ends.
// Call with s.mu held.
func (s *Server) flushManifests(e *sepoch) {
	rs := e.man.Flush()
	if len(rs) == 0 {
		return
	}
	s.notify()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		manifests.Put(s.store, s.log, e.v.ID, rs)
	}()
}

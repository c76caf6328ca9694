package node

import (
	"github.com/riffle-net/riffle/node/internal/manifests"
)

// The index's manifests (§6.4 v3): package node/internal/manifests decides
// what the index takes in each round (sepoch.man, its own lock) and
// internal/index stores it; the rounds' request lists carry the ids.

// indexManifests takes round r's candidates through the caps and stores
// what they let in (with the rounds that waited for r).
func (s *Server) indexManifests(e *sepoch, r uint32, cands []manifests.Cand) {
	p := e.final.Desc.Params
	s.ix.TakeManifests(&e.man, e.v.ID, p.Rounds, p.ChunkSize, r, cands, pirHost{s}.Notify)
}

// flushManifests indexes the rounds still waiting when the epoch ends.
// Call with s.mu held.
func (s *Server) flushManifests(e *sepoch) {
	if s.ix.FlushManifests(&e.man, e.v.ID) {
		s.notify()
	}
}

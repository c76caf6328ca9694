package node

import (
	"time"

	"github.com/riffle-net/riffle/node/internal/manifests"
)

// The index's manifests (§6.4 v3): package node/internal/manifests decides
// what the index takes in each round; these store it and note it in the
// rounds' request lists.

// manCaps is the epoch's manifest caps, with its rounds and chunk size
// from the final descriptor; call with s.mu held.
func (e *sepoch) manCaps() *manifests.Caps {
	if e.man.R == 0 && e.final != nil && e.final.Desc != nil {
		e.man.R, e.man.B = e.final.Desc.Params.Rounds, e.final.Desc.Params.ChunkSize
	}
	return &e.man
}

// indexManifests takes round r's candidates through the caps and stores
// what they let in (with the rounds that waited for r).
func (s *Server) indexManifests(e *sepoch, r uint32, cands []manifests.Cand) {
	s.mu.Lock()
	rs := e.manCaps().Add(r, cands)
	if e.ended {
		rs = append(rs, e.man.Flush()...)
	}
	s.noteManifests(e, rs)
	s.mu.Unlock()
	s.storeManifests(e, rs)
}

// noteManifests records, per round, the ids the index took: the round's
// request list carries them. Call with s.mu held.
func (s *Server) noteManifests(e *sepoch, rs []manifests.Round) {
	for _, mr := range rs {
		x := e.round(mr.Round)
		x.manifests = nil
		for _, c := range mr.Cands {
			x.manifests = append(x.manifests, c.ID)
		}
		x.manDone = true
	}
	if len(rs) > 0 {
		s.notify()
	}
}

// flushManifests indexes the rounds still waiting when the epoch ends.
// Call with s.mu held.
func (s *Server) flushManifests(e *sepoch) {
	rs := e.manCaps().Flush()
	if len(rs) == 0 {
		return
	}
	s.noteManifests(e, rs)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.storeManifests(e, rs)
	}()
}

// storeManifests stores what the index took in rounds rs of epoch e.
func (s *Server) storeManifests(e *sepoch, rs []manifests.Round) {
	now := time.Unix(time.Now().Unix(), 0) // the index keeps seconds
	for _, mr := range rs {
		if len(mr.Cands) == 0 {
			continue
		}
		mans, index, err := manifests.Records(e.v.ID, mr, now, s.store.GetChunk)
		if err != nil {
			s.log.Error("index manifests", "round", mr.Round, "err", err)
		}
		if err := s.store.PutManifests(mans, index); err != nil {
			s.log.Error("index manifests", "round", mr.Round, "err", err)
		}
	}
}

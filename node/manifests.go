package node

import (
	"sort"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/store"
)

// Manifests in the public index (§6.4 v3). A get must never request a
// chunk because of what an answer of the same epoch held: a server that
// corrupted one client's answers would see which pseudonym failed to go on
// and so find the client's pseudonym. Every manifest chunk, root and inner
// node, is therefore indexed with its bytes, and a client learns every id
// of a file from the link and the index it synced before the epoch.
//
// What the index takes is public and bounded, so that nobody can make it
// grow at will, and bounded per R rounds, not per epoch, so that epochs
// ended early do not multiply it: a published chunk is a candidate if it
// parses (chunker.DecodeManifest), at most manifestsPerPseudonym of them
// per output position (pseudonym) of an epoch; by the end of round r the
// index has taken at most indexBudget(r) of the epoch's candidates, which
// grows with the distinct publishers (c each) up to the byte ceiling's
// share of r + 1 rounds out of R. Candidates over the budget wait in
// their pseudonym's queue and are taken in later rounds of the epoch, one
// pseudonym at a time in turns (round robin over output positions, from
// the one after the last served), so that one pseudonym cannot crowd out
// the others. Every server publishes the same payloads, so every server
// indexes the same chunks: rounds published out of order here wait for
// the earlier ones (a cursor); a round that has a final request list
// without having been published here (a void round) counts as one without
// manifests; what is left waiting when the epoch ends is taken then, in
// order, within the budget of the rounds; what the budget still leaves
// out is dropped (its sharer sends it again in a later epoch). The
// request list of a round carries the ids taken in it, so its proposal
// waits for the cursor.
//
// A private file's manifest chunks are sealed under its file key (chunker:
// a clear header, the rest padded to b). They parse as opaque manifests:
// indexed with their bytes under the same caps, with no index entry (the
// server knows neither root from node nor name nor size); a client whose
// link carries the key opens them from its synced copy (openFromIndex).

// indexBudget is the most manifest chunks the index has taken by the end
// of round r (from 0) of an epoch of R rounds with p distinct publishers
// so far: the cap, and the ceiling's share of r + 1 rounds of R, rounded
// up. An epoch of r rounds takes at most ceiling·r/R + 1.
func indexBudget(r, R uint32, p int, b uint32) int {
	share := (indexCeiling(b)*int(r+1) + int(R) - 1) / int(max(R, 1))
	return min(indexCap(p, b), share)
}

// manifestCand is a published chunk that parses as a manifest.
type manifestCand struct {
	pos  int
	id   [32]byte
	data []byte // a copy: the payload buffers are recycled; nil once it waits (read back from the store)
	man  *chunker.Manifest
}

// manifestCaps keeps the indexing state of one epoch (sepoch.man): the
// next round to take, the candidates of rounds published ahead of it,
// the queue of each pseudonym, and the counts so far. Guarded by the
// server's mutex.
type manifestCaps struct {
	R, b    uint32 // the epoch's rounds and chunk size (0: the defaults)
	next    uint32
	pending map[uint32][]manifestCand
	perPos  map[int]int            // candidates of each position, queued or taken
	queue   map[int][]manifestCand // candidates waiting, by position
	last    int                    // the position served last (round robin)
	total   int
}

func (mc *manifestCaps) params() (R, b uint32) {
	R, b = mc.R, mc.b
	if R == 0 {
		R = DefaultParams().Rounds
	}
	if b == 0 {
		b = DefaultParams().ChunkSize
	}
	return R, b
}

// take queues round r's candidates, in output position order, and returns
// those indexed in round r: the queues' heads, one position at a time,
// within round r's budget.
func (mc *manifestCaps) take(r uint32, cands []manifestCand) []manifestCand {
	if mc.perPos == nil {
		mc.perPos, mc.queue, mc.last = map[int]int{}, map[int][]manifestCand{}, -1
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].pos < cands[j].pos })
	for _, c := range cands {
		if mc.perPos[c.pos] >= manifestsPerPseudonym {
			continue
		}
		mc.perPos[c.pos]++
		mc.queue[c.pos] = append(mc.queue[c.pos], c)
	}
	R, b := mc.params()
	budget := indexBudget(r, R, len(mc.perPos), b)
	var out []manifestCand
	for mc.total < budget && len(mc.queue) > 0 {
		pos := mc.nextPos()
		q := mc.queue[pos]
		out = append(out, q[0])
		if len(q) == 1 {
			delete(mc.queue, pos)
		} else {
			mc.queue[pos] = q[1:]
		}
		mc.last = pos
		mc.total++
	}
	// What waits is read back from the store when taken: the queues hold
	// ids, not c·n chunks.
	for pos, q := range mc.queue {
		for i := range q {
			q[i].data, q[i].man = nil, nil
		}
		mc.queue[pos] = q
	}
	return out
}

// nextPos is the smallest queued position after the last served, else the
// smallest queued.
func (mc *manifestCaps) nextPos() int {
	first, after := -1, -1
	for pos := range mc.queue {
		if first < 0 || pos < first {
			first = pos
		}
		if pos > mc.last && (after < 0 || pos < after) {
			after = pos
		}
	}
	if after >= 0 {
		return after
	}
	return first
}

// add records round r's candidates and returns, per round in order, what
// the caps let into the index now: round r and the rounds after it that
// were waiting for it. Rounds after a gap wait.
func (mc *manifestCaps) add(r uint32, cands []manifestCand) []manifestRound {
	if mc.pending == nil {
		mc.pending = map[uint32][]manifestCand{}
	}
	if r < mc.next {
		return nil // a round taken already (never published twice)
	}
	mc.pending[r] = cands
	var out []manifestRound
	for {
		c, ok := mc.pending[mc.next]
		if !ok {
			return out
		}
		delete(mc.pending, mc.next)
		out = append(out, manifestRound{mc.next, mc.take(mc.next, c)})
		mc.next++
	}
}

// flush takes every waiting round in order (the epoch is over: no earlier
// round will be published any more), each within its budget; what is
// still queued after them is dropped.
func (mc *manifestCaps) flush() []manifestRound {
	var rs []uint32
	for r := range mc.pending {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	var out []manifestRound
	for _, r := range rs {
		out = append(out, manifestRound{r, mc.take(r, mc.pending[r])})
		delete(mc.pending, r)
		mc.next = r + 1
	}
	clear(mc.queue)
	return out
}

// manCaps is the epoch's manifest caps, with its rounds and chunk size
// from the final descriptor; call with s.mu held.
func (e *sepoch) manCaps() *manifestCaps {
	if e.man.R == 0 && e.final != nil && e.final.Desc != nil {
		e.man.R, e.man.b = e.final.Desc.Params.Rounds, e.final.Desc.Params.ChunkSize
	}
	return &e.man
}

type manifestRound struct {
	round uint32
	cands []manifestCand
}

// manifestCands returns the chunks of a round that parse as manifests, by
// output position.
func manifestCands(pos []int, chunks []store.Chunk) []manifestCand {
	var out []manifestCand
	for i, c := range chunks {
		if !chunker.IsManifest(c.Data) {
			continue
		}
		m, err := chunker.DecodeManifest(c.Data)
		if err != nil {
			continue
		}
		out = append(out, manifestCand{pos: pos[i], id: c.ID, data: append([]byte(nil), c.Data...), man: m})
	}
	return out
}

// indexManifests takes round r's candidates through the caps and stores
// what they let in (with the rounds that waited for r).
func (s *Server) indexManifests(e *sepoch, r uint32, cands []manifestCand) {
	s.mu.Lock()
	rs := e.manCaps().add(r, cands)
	if e.ended {
		rs = append(rs, e.man.flush()...)
	}
	s.noteManifests(e, rs)
	s.mu.Unlock()
	s.storeManifests(e, rs)
}

// noteManifests records, per round, the ids the index took: the round's
// request list carries them. Call with s.mu held.
func (s *Server) noteManifests(e *sepoch, rs []manifestRound) {
	for _, mr := range rs {
		x := e.round(mr.round)
		x.manifests = nil
		for _, c := range mr.cands {
			x.manifests = append(x.manifests, c.id)
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
	rs := e.manCaps().flush()
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

func (s *Server) storeManifests(e *sepoch, rs []manifestRound) {
	now := time.Unix(time.Now().Unix(), 0) // the index keeps seconds
	for _, mr := range rs {
		if len(mr.cands) == 0 {
			continue
		}
		var mans []store.Manifest
		var index []IndexEntry
		for _, c := range mr.cands {
			if c.data == nil {
				// It waited in its queue: its bytes are the stored chunk.
				data, err := s.store.GetChunk(c.id)
				if err != nil {
					s.log.Error("index manifests", "round", mr.round, "err", err)
					continue
				}
				m, err := chunker.DecodeManifest(data)
				if err != nil {
					continue
				}
				c.data, c.man = data, m
			}
			mans = append(mans, store.Manifest{ID: c.id, Epoch: e.v.ID, Round: mr.round, Pos: uint32(c.pos), Data: c.data})
			if c.man.Root {
				index = append(index, IndexEntry{FileID: c.id, Name: c.man.Name, Size: uint64(c.man.Size), Chunks: uint32(c.man.NumChunks), Epoch: e.v.ID, Round: mr.round, Time: now})
			}
		}
		if err := s.store.PutManifests(mans, index); err != nil {
			s.log.Error("index manifests", "round", mr.round, "err", err)
		}
	}
}

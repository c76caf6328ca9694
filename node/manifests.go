package node

import (
	"crypto/sha256"
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
// grow at will: a published chunk is indexed as a manifest only if it
// parses (chunker.DecodeManifest), at most manifestsPerPseudonym of them
// per output position (pseudonym) per epoch and manifestsPerEpoch in all,
// taken in (round, output position) order. Every server publishes the same
// payloads, so every server indexes the same chunks: rounds published out
// of order here wait for the earlier ones (a cursor); a round that has a
// final request list without having been published here (a void round)
// counts as one without manifests; and what is left waiting when the
// epoch ends is taken then, in order. The request list of a round carries
// the ids taken in it, so its proposal waits for the cursor.
//
// A private file's manifest chunks are sealed under its file key (chunker:
// a clear header, the rest padded to b). They parse as opaque manifests:
// indexed with their bytes under the same caps, with no index entry (the
// server knows neither root from node nor name nor size); a client whose
// link carries the key opens them from its synced copy (openFromIndex).

const (
	manifestsPerPseudonym = 4
	manifestsPerEpoch     = 64
	// maxIndexItems bounds the entries, and the manifests, of a client's
	// synced copy of the index (each page is bounded by its reply cap).
	maxIndexItems = 1 << 20
)

// manifestCand is a published chunk that parses as a manifest.
type manifestCand struct {
	pos  int
	id   [32]byte
	data []byte // a copy: the payload buffers are recycled
	man  *chunker.Manifest
}

// manifestCaps keeps the indexing state of one epoch (sepoch.man): the
// next round to take, the candidates of rounds published ahead of it, and
// the counts so far. Guarded by the server's mutex.
type manifestCaps struct {
	next    uint32
	pending map[uint32][]manifestCand
	perPos  map[int]int
	total   int
}

// take applies the caps to one round's candidates, in output position
// order, and returns those indexed.
func (mc *manifestCaps) take(cands []manifestCand) []manifestCand {
	if mc.perPos == nil {
		mc.perPos = map[int]int{}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].pos < cands[j].pos })
	var out []manifestCand
	for _, c := range cands {
		if mc.total >= manifestsPerEpoch || mc.perPos[c.pos] >= manifestsPerPseudonym {
			continue
		}
		mc.perPos[c.pos]++
		mc.total++
		out = append(out, c)
	}
	return out
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
		out = append(out, manifestRound{mc.next, mc.take(c)})
		mc.next++
	}
}

// flush takes every waiting round in order (the epoch is over: no earlier
// round will be published any more).
func (mc *manifestCaps) flush() []manifestRound {
	var rs []uint32
	for r := range mc.pending {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	var out []manifestRound
	for _, r := range rs {
		out = append(out, manifestRound{r, mc.take(mc.pending[r])})
		delete(mc.pending, r)
		mc.next = r + 1
	}
	return out
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
	rs := e.man.add(r, cands)
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
	rs := e.man.flush()
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
			mans = append(mans, store.Manifest{ID: c.id, Epoch: e.v.id, Round: mr.round, Pos: uint32(c.pos), Data: c.data})
			if c.man.Root {
				index = append(index, IndexEntry{FileID: c.id, Name: c.man.Name, Size: uint64(c.man.Size), Chunks: uint32(c.man.NumChunks), Epoch: e.v.id, Round: mr.round, Time: now})
			}
		}
		if err := s.store.PutManifests(mans, index); err != nil {
			s.log.Error("index manifests", "round", mr.round, "err", err)
		}
	}
}

// syncedManifests checks the manifests of a synced index: each must parse;
// its id is the SHA-256 of its bytes. Others are dropped.
func syncedManifests(raw [][]byte) map[[32]byte][]byte {
	out := make(map[[32]byte][]byte, len(raw))
	for _, b := range raw {
		if _, err := chunker.DecodeManifest(b); err != nil {
			continue
		}
		out[sha256.Sum256(b)] = b
	}
	return out
}

// isManifest reports whether a chunk parses as a manifest, as the servers
// decide it.
func isManifest(chunk []byte) bool {
	if !chunker.IsManifest(chunk) {
		return false
	}
	_, err := chunker.DecodeManifest(chunk)
	return err == nil
}

// nextUpload returns the queue position of the next chunk to upload in
// epoch e, or -1: the first, unless it is a manifest beyond what the index
// takes of one pseudonym in an epoch, or waits out full epochs after a
// round that did not publish it (resend.go), or, in its epoch, holds
// back after such a round (resendHold); r is the round to fill. Call with
// c.mu held.
func (c *Client) nextUpload(e *cepoch, r uint32) int {
	noCap := c.hookNoManifestCap()
	for i := range c.upQ {
		if c.upQ[i].wait > 0 || c.upQ[i].awaiting || c.heldBack(e, &c.upQ[i], r) {
			// Seen unpublished: it waits for its epoch's closing
			// record, then out full epochs (resend.go).
			continue
		}
		if j := c.upQ[i].job; j != nil && !j.ep.may(e.epochID()) {
			// Past its allowance of epochs: paused (presence.go).
			continue
		}
		if !c.upQ[i].manifest || e.manifestsSent < manifestsPerPseudonym || noCap {
			return i
		}
	}
	return -1
}

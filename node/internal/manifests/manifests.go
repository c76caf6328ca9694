// Package manifests is what the public index takes of the manifest
// chunks a round publishes (docs/protocol.md §6.4 v3), within public caps
// per pseudonym and per round, and what the index stores of it (Records),
// for publication and catch-up alike. An epoch's Index holds the caps
// and the ids each round took, under its own lock; Put stores them (node's
// manifests.go drives it, package catchup stores what it takes), and the
// request lists carry the ids.
package manifests

import (
	"errors"
	"sort"
	"time"

	"github.com/riffle-net/riffle/chunker"
	"github.com/riffle-net/riffle/node/internal/proto"
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
// parses (chunker.DecodeManifest), at most proto.ManifestsPerPseudonym of them
// per output position (pseudonym) of an epoch; by the end of round r the
// index has taken at most IndexBudget(r) of the epoch's candidates, which
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

// IndexBudget is the most manifest chunks the index has taken by the end
// of round r (from 0) of an epoch of R rounds with p distinct publishers
// so far: the cap, and the ceiling's share of r + 1 rounds of R, rounded
// up. An epoch of r rounds takes at most ceiling·r/R + 1.
func IndexBudget(r, R uint32, p int, b uint32) int {
	share := (proto.IndexCeiling(b)*int(r+1) + int(R) - 1) / int(max(R, 1))
	return min(proto.IndexCap(p, b), share)
}

// Cand is a published chunk that parses as a manifest.
type Cand struct {
	Pos  int
	ID   [32]byte
	Data []byte // a copy: the payload buffers are recycled; nil once it waits (read back from the store)
	Man  *chunker.Manifest
}

// Caps keeps the indexing state of one epoch (Index's): the next round
// to take, the candidates of rounds published ahead of it, the queue of
// each pseudonym, and the counts so far. No lock: Index guards it.
type Caps struct {
	R, B    uint32 // the epoch's rounds and chunk size (0: the defaults)
	next    uint32
	pending map[uint32][]Cand
	perPos  map[int]int    // candidates of each position, queued or taken
	queue   map[int][]Cand // candidates waiting, by position
	last    int            // the position served last (round robin)
	total   int
}

func (mc *Caps) params() (R, b uint32) {
	R, b = mc.R, mc.B
	if R == 0 {
		R = proto.DefaultParams().Rounds
	}
	if b == 0 {
		b = proto.DefaultParams().ChunkSize
	}
	return R, b
}

// take queues round r's candidates, in output position order, and returns
// those indexed in round r: the queues' heads, one position at a time,
// within round r's budget.
func (mc *Caps) take(r uint32, cands []Cand) []Cand {
	if mc.perPos == nil {
		mc.perPos, mc.queue, mc.last = map[int]int{}, map[int][]Cand{}, -1
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].Pos < cands[j].Pos })
	for _, c := range cands {
		if mc.perPos[c.Pos] >= proto.ManifestsPerPseudonym {
			continue
		}
		mc.perPos[c.Pos]++
		mc.queue[c.Pos] = append(mc.queue[c.Pos], c)
	}
	R, b := mc.params()
	budget := IndexBudget(r, R, len(mc.perPos), b)
	var out []Cand
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
			q[i].Data, q[i].Man = nil, nil
		}
		mc.queue[pos] = q
	}
	return out
}

// nextPos is the smallest queued position after the last served, else the
// smallest queued.
func (mc *Caps) nextPos() int {
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

// Add records round r's candidates and returns, per round in order, what
// the caps let into the index now: round r and the rounds after it that
// were waiting for it. Rounds after a gap wait.
func (mc *Caps) Add(r uint32, cands []Cand) []Round {
	if mc.pending == nil {
		mc.pending = map[uint32][]Cand{}
	}
	if r < mc.next {
		return nil // a round taken already (never published twice)
	}
	mc.pending[r] = cands
	var out []Round
	for {
		c, ok := mc.pending[mc.next]
		if !ok {
			return out
		}
		delete(mc.pending, mc.next)
		out = append(out, Round{mc.next, mc.take(mc.next, c)})
		mc.next++
	}
}

// Flush takes every waiting round in order (the epoch is over: no earlier
// round will be published any more), each within its budget; what is
// still queued after them is dropped.
func (mc *Caps) Flush() []Round {
	var rs []uint32
	for r := range mc.pending {
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	var out []Round
	for _, r := range rs {
		out = append(out, Round{r, mc.take(r, mc.pending[r])})
		delete(mc.pending, r)
		mc.next = r + 1
	}
	clear(mc.queue)
	return out
}

// Round is what the index takes in one round.
type Round struct {
	Round uint32
	Cands []Cand
}

// Cands returns the chunks of a round that parse as manifests, by
// output position.
func Cands(pos []int, chunks []store.Chunk) []Cand {
	var out []Cand
	for i, c := range chunks {
		if !chunker.IsManifest(c.Data) {
			continue
		}
		m, err := chunker.DecodeManifest(c.Data)
		if err != nil {
			continue
		}
		out = append(out, Cand{Pos: pos[i], ID: c.ID, Data: append([]byte(nil), c.Data...), Man: m})
	}
	return out
}

// Records is what the index stores of round r's candidates in epoch: each
// manifest with its bytes and, for a root, its index entry at time now. A
// candidate without its bytes (it waited in its queue, or a catch-up
// names it by id) is read with get; one that does not parse is left out
// (no chain server indexed it), and so is one get fails on, its error
// returned (joined).
func Records(epoch [32]byte, r Round, now time.Time, get func([32]byte) ([]byte, error)) ([]store.Manifest, []store.IndexEntry, error) {
	var mans []store.Manifest
	var index []store.IndexEntry
	var errs []error
	for _, c := range r.Cands {
		if c.Data == nil {
			data, err := get(c.ID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			m, err := chunker.DecodeManifest(data)
			if err != nil {
				continue
			}
			c.Data, c.Man = data, m
		}
		mans = append(mans, store.Manifest{ID: c.ID, Epoch: epoch, Round: r.Round, Pos: uint32(c.Pos), Data: c.Data})
		if c.Man.Root {
			index = append(index, store.IndexEntry{FileID: c.ID, Name: c.Man.Name, Size: uint64(c.Man.Size), Chunks: uint32(c.Man.NumChunks), Epoch: epoch, Round: r.Round, Time: now})
		}
	}
	return mans, index, errors.Join(errs...)
}

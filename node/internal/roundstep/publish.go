package roundstep

import (
	"fmt"
	"slices"

	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/manifests"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/store"
)

// Hashes are mix.HashPayloads of a published batch, computed once for
// its Merkle root and used again by the publication: no payload is
// hashed twice.
type Hashes struct {
	Hs []mix.PayloadHash
	OK []bool
}

// HashPublished hashes a published batch's payloads.
func HashPublished(entries [][]byte, b, k int) *Hashes {
	hs, ok := mix.HashPayloads(entries, b, k)
	return &Hashes{Hs: hs, OK: ok}
}

// PublishedRoot is the Merkle root of a published batch (§5.2, v3): the
// leaf of a well-formed payload is H(payload leaf tag, u32 position, D,
// signature), D its payload digest (mix.PayloadHash), which with the
// signature fixes every byte of it; any other entry gets the ordinary
// leaf over its bytes.
func PublishedRoot(entries [][]byte, ph *Hashes) [32]byte {
	level := make([][32]byte, len(entries))
	for i, e := range entries {
		if ph.OK[i] {
			level[i] = proto.TaggedHash(proto.TagMerkleLfP, proto.LeafPos(i), ph.Hs[i].Digest[:], e[len(e)-mix.SignatureSize:])
		} else {
			level[i] = proto.TaggedHash(proto.TagMerkleLf, proto.LeafPos(i), e)
		}
	}
	return proto.MerkleUp(level)
}

// PubFx is what PublishStep asks of its driver.
type PubFx struct {
	Fx
	// Stored in one transaction before the round is acknowledged (§5.3,
	// §7): the published chunk ids and the chunks, with the manifests
	// among them for the index (package manifests).
	Published [][32]byte
	Chunks    []store.Chunk
	Cands     []manifests.Cand
	// The round's requests, for the request list.
	Requests map[[32]byte]bool
	ReqByPos [][][32]byte
	// Seen is each decoded payload's requests by output position, in
	// order, for the tests' observers.
	Seen []PosRequests
	// Blame is 1 + the first output position whose payload failed its
	// pseudonym signature: blame walks it (§8) once the rest is stored;
	// 0 if none.
	Blame int
}

// PosRequests are the requests of the payload at output position Q.
type PosRequests struct {
	Q   int
	IDs [][32]byte
}

// PublishStep reads round r's published payloads, given the output
// positions bad whose pseudonym signature failed and the dead slots'
// outputs deadOut: a bad payload is skipped, and blame walks the first
// that is not at a dead output (there it is the filler, or the culprit's
// onion of a round in flight); covers are dropped and chunks kept under
// their ids (§5.3). A payload that does not decode ends the epoch.
func PublishStep(ep Facts, r uint32, payloads [][]byte, ph *Hashes, bad, deadOut []int) PubFx {
	b, k := ep.BK()
	fx := PubFx{Requests: map[[32]byte]bool{}, ReqByPos: make([][][32]byte, len(payloads))}
	badAt := make(map[int]bool, len(bad))
	for _, q := range bad {
		badAt[q] = true
		if fx.Blame == 0 && !slices.Contains(deadOut, q) {
			fx.Blame = 1 + q
		}
	}
	var chunkPos []int
	for q, raw := range payloads {
		if badAt[q] {
			continue
		}
		p, err := mix.DecodePayload(raw, b, k)
		if err != nil {
			fx.End = fmt.Sprintf("round %d: payload %d malformed", r, q)
			return fx
		}
		for _, rq := range p.Requests {
			if rq != ([32]byte{}) {
				fx.Requests[rq] = true
				fx.ReqByPos[q] = append(fx.ReqByPos[q], rq)
			}
		}
		fx.Seen = append(fx.Seen, PosRequests{q, p.Requests})
		if p.Kind != mix.KindChunk {
			continue
		}
		id := ph.Hs[q].ChunkID
		fx.Chunks = append(fx.Chunks, store.Chunk{ID: id, Data: p.Chunk[:p.Length]})
		chunkPos = append(chunkPos, q)
		fx.Published = append(fx.Published, id)
	}
	// Manifests are indexed apart, through the caps (package manifests).
	fx.Cands = manifests.Cands(chunkPos, fx.Chunks)
	return fx
}

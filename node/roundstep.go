package node

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/manifests"
	"github.com/riffle-net/riffle/node/internal/pirround"
	"github.com/riffle-net/riffle/store"
)

// Round steps (§5.2, §5.3) as functions of state and event, after
// wireguard-go's handshake: a message in, a message out, no I/O. A step
// takes the epoch's fixed facts (roundFacts), the round's state and one
// event, changes that state and returns its effects: what to send and to
// whom, what to store, whether the epoch ends and why. It reads no clock
// and takes no lock. Its driver (mixStep, onBatch, publish) holds s.mu
// around a step that touches round state, releases it, then does the I/O
// the step returned, so no lock is held across a send or a store.

// roundFacts is what a step reads of its epoch: fixed once the final
// descriptor is in, so read without s.mu.
type roundFacts struct {
	id     [32]byte
	self   peer.ID
	chain  []peer.ID
	pos    int // this server's position in chain
	n      int // slots
	params wire.Params
}

func (s *Server) roundFacts(e *sepoch) roundFacts {
	v := e.final
	return roundFacts{id: v.ID, self: s.h.ID(), chain: v.Chain, pos: e.pos, n: e.n(), params: v.Desc.Params}
}

func (ep roundFacts) m() int         { return len(ep.chain) }
func (ep roundFacts) last() bool     { return ep.pos == ep.m()-1 }
func (ep roundFacts) bk() (int, int) { return int(ep.params.ChunkSize), int(ep.params.K) }

// others is the chain without this server.
func (ep roundFacts) others() []peer.ID {
	out := make([]peer.ID, 0, ep.m()-1)
	for _, p := range ep.chain {
		if p != ep.self {
			out = append(out, p)
		}
	}
	return out
}

// roundFx is what a step asks of its driver beyond the state it changed.
type roundFx struct {
	refuse error // the message is refused (a handler's error)
	// end: the epoch ends here for this reason and the chain is told
	// (s.end); evidence, if set, is kept first as the round's (§8).
	end      string
	evidence [][]byte
	// badFrom is the S of the server named for a malformed signed
	// batch, whose body is the evidence (noteBadBatch); 0 if none.
	badFrom int
	// accuse is 1 + the input position whose MAC failed: blame starts
	// there (accuse); 0 if none.
	accuse int
}

// batchNext is what onBatch does with a batch once a step has seen it.
type batchNext uint8

const (
	batchAck     batchNext = iota // acknowledged, nothing more (void, or a copy)
	batchRefused                  // fx.refuse
	batchRepeat                   // a repeat: its root recorded, the batch dropped
	batchDecode                   // new: decode its body
	batchFault                    // acknowledged; fx says what follows
	batchMix                      // mix it (S < m)
	batchPublish                  // publish it (S = m)
)

// batchIn is which batch of a round a batch from server S is: 0 the
// input to mix, 1 the published payloads.
func (ep roundFacts) batchIn(S int) int {
	if S == ep.m() {
		return 1
	}
	return 0
}

// checkBatchHead checks a batch's head before anything of it is kept:
// sent by the server before this one (or by the last, to publish), signed
// by it, for a round of the epoch (§5.2). Pure: no round state.
func checkBatchHead(ep roundFacts, from peer.ID, h wire.BatchHead) error {
	m, S := ep.m(), int(h.S)
	if S < 1 || S > m || ep.chain[S-1] != from || (S < m && S != ep.pos) {
		return fmt.Errorf("node: batch for server %d not expected from %s", S, from.ShortString())
	}
	if err := verifyPeerSig(from, batchDigest(&wire.Batch{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root}), h.Sig); err != nil {
		return err
	}
	// A round outside the epoch or the kept window is refused before its
	// root is recorded: nothing of it may stay here.
	if h.Round >= ep.params.Rounds {
		return fmt.Errorf("node: batch for round %d beyond the epoch's %d", h.Round, ep.params.Rounds)
	}
	return nil
}

// batchHeadStep decides on a checked head against the epoch's rounds:
// refused outside the kept window, dropped for a round void or given up
// here, a repeat if the round's batch was taken, else decoded. Call with
// s.mu held.
func batchHeadStep(ep roundFacts, rs *roundsState, h wire.BatchHead) (batchNext, roundFx) {
	if err := rs.admitRound(ep.params, h.Round); err != nil {
		return batchRefused, roundFx{refuse: err}
	}
	x, in := rs.at(h.Round), ep.batchIn(int(h.S))
	if x.void || (in == 0 && x.lacked) {
		// §5.2 v3: the round was signed void here, or its input given
		// up (lack.go); nothing of it is mixed or published any more.
		return batchAck, roundFx{}
	}
	if x.batchIn[in] {
		// A repeat (a retry, or a replay by the sender): one batch a
		// round is mixed; a different one signed for the round is
		// equivocation, which its root shows (noteRoot).
		return batchRepeat, roundFx{}
	}
	return batchDecode, roundFx{}
}

// batchRoot is the Merkle root of a decoded batch, with the payloads'
// hashes for the publication (S = m).
func batchRoot(ep roundFacts, b *wire.Batch) ([32]byte, *payloadHashes) {
	if int(b.S) == ep.m() {
		bb, k := ep.bk()
		ph := hashPublished(b.Entries, bb, k)
		return publishedRoot(b.Entries, ph), ph
	}
	return merkleRoot(b.Entries), nil
}

// batchStep takes a decoded batch whose head passed batchHeadStep, root
// its entries' root, at time now: the round's batch is taken once; one
// whose entries miss its signed root is refused; one with a missing or
// wrong-size entry is its sender's fault (§5.2 v2: the round is void,
// the signed batch is the evidence, the epoch ends; it is acknowledged,
// as refusing it would only hide the evidence). Call with s.mu held.
func batchStep(ep roundFacts, rs *roundsState, b *wire.Batch, root [32]byte, now time.Time) (batchNext, roundFx) {
	if b.Round >= ep.params.Rounds || root != b.Root {
		return batchRefused, roundFx{refuse: errors.New("node: malformed batch")}
	}
	S := int(b.S)
	x, in := rs.at(b.Round), ep.batchIn(S)
	if x.batchIn[in] {
		return batchAck, roundFx{} // the same batch, delivered twice at once
	}
	x.batchIn[in] = true
	if in == 0 {
		x.inAt = now
	}
	bb, k := ep.bk()
	want := mix.OnionSize(bb, k, ep.m()) - mix.TagSize*S
	bad := len(b.Entries) != ep.n
	for _, y := range b.Entries {
		bad = bad || len(y) != want
	}
	if bad {
		return batchFault, roundFx{
			end:      fmt.Sprintf("round %d void: batch from server %d malformed", b.Round, S-1),
			evidence: b.Entries,
			badFrom:  S,
		}
	}
	if in == 1 {
		return batchPublish, roundFx{}
	}
	return batchMix, roundFx{}
}

// layerFault is what a failure to open this server's layer of round r
// leads to (§5.2 v2: any fault voids the round; the input batch stays as
// the evidence): a MAC failure's blame walks its first failing position
// (§8), any other fault ends the epoch.
func layerFault(ep roundFacts, r uint32, in [][]byte, err error) roundFx {
	fx := roundFx{evidence: in}
	var me *mix.MACError
	if errors.As(err, &me) && len(me.Positions) > 0 {
		fx.accuse = 1 + me.Positions[0]
		return fx
	}
	fx.end = fmt.Sprintf("round %d void: layer %d: %v", r, ep.pos, err)
	return fx
}

// sealed is a mixed round's batch, signed, and where it goes: to the next
// server, or (the last server) to every other one while this one
// publishes it.
type sealed struct {
	batch   wire.Batch
	to      []peer.ID
	publish bool
	ph      *payloadHashes // the payloads' hashes, when publish
}

// sealBatch signs this server's output of round r (permuted, §5.2) with
// the input's client signatures and onion hashes, and addresses it. A
// published batch's leaves commit to the payloads' digests (§5.1) and its
// payloads go out without their zero padding (wire.ZeroRun; the bytes
// signed are the same).
func sealBatch(ep roundFacts, priv crypto.PrivKey, r uint32, out [][]byte, clientSigs [][64]byte, clientHashes [][32]byte) (sealed, error) {
	sd := sealed{batch: wire.Batch{Epoch: ep.id, Round: r, S: uint16(ep.pos + 1), Entries: out, ClientSigs: clientSigs, ClientHashes: clientHashes}}
	if !ep.last() {
		sd.to = []peer.ID{ep.chain[ep.pos+1]}
		return sd, signBatch(priv, &sd.batch, nil)
	}
	bb, k := ep.bk()
	sd.ph = hashPublished(out, bb, k)
	if err := signBatch(priv, &sd.batch, sd.ph); err != nil {
		return sd, err
	}
	sd.batch.Zeros = make([]wire.ZeroRun, len(out))
	for i, raw := range out {
		at, n := mix.PaddingRun(raw, bb, k)
		sd.batch.Zeros[i] = wire.ZeroRun{At: uint32(at), N: uint32(n)}
	}
	sd.to, sd.publish = ep.others(), true
	return sd, nil
}

// beginPublish starts round r's publication here unless the epoch ended
// or the round was signed void (§5.2 v3: never published) or published
// already. Call with s.mu held; the driver clears x.publishing when done.
func beginPublish(ended bool, x *sround) bool {
	if ended || x.void || x.pubDone {
		return false
	}
	x.publishing = true
	return true
}

// pubFx is what publishStep asks of its driver.
type pubFx struct {
	roundFx
	// Stored in one transaction before the round is acknowledged (§5.3,
	// §7): the published chunk ids and the chunks, with the manifests
	// among them for the index (manifests.go).
	published [][32]byte
	chunks    []store.Chunk
	cands     []manifests.Cand
	// The round's requests, for the request list (listcut.go).
	requests map[[32]byte]bool
	reqByPos [][][32]byte
	// seen is each decoded payload's requests by output position, in
	// order, for the tests' observers (hookRequests).
	seen []posRequests
	// blame is 1 + the first output position whose payload failed its
	// pseudonym signature: blame walks it (§8) once the rest is stored;
	// 0 if none.
	blame int
}

type posRequests struct {
	q   int
	ids [][32]byte
}

// publishStep reads round r's published payloads, given the output
// positions bad whose pseudonym signature failed and the dead slots'
// outputs deadOut: a bad payload is skipped, and blame walks the first
// that is not at a dead output (deadslot.go: there it is the filler, or
// the culprit's onion of a round in flight); covers are dropped and
// chunks kept under their ids (§5.3). A payload that does not decode
// ends the epoch.
func publishStep(ep roundFacts, r uint32, payloads [][]byte, ph *payloadHashes, bad, deadOut []int) pubFx {
	b, k := ep.bk()
	fx := pubFx{requests: map[[32]byte]bool{}, reqByPos: make([][][32]byte, len(payloads))}
	badAt := make(map[int]bool, len(bad))
	for _, q := range bad {
		badAt[q] = true
		if fx.blame == 0 && !slices.Contains(deadOut, q) {
			fx.blame = 1 + q
		}
	}
	var chunkPos []int
	for q, raw := range payloads {
		if badAt[q] {
			continue
		}
		p, err := mix.DecodePayload(raw, b, k)
		if err != nil {
			fx.end = fmt.Sprintf("round %d: payload %d malformed", r, q)
			return fx
		}
		for _, rq := range p.Requests {
			if rq != ([32]byte{}) {
				fx.requests[rq] = true
				fx.reqByPos[q] = append(fx.reqByPos[q], rq)
			}
		}
		fx.seen = append(fx.seen, posRequests{q, p.Requests})
		if p.Kind != mix.KindChunk {
			continue
		}
		id := ph.hs[q].ChunkID
		fx.chunks = append(fx.chunks, store.Chunk{ID: id, Data: p.Chunk[:p.Length]})
		chunkPos = append(chunkPos, q)
		fx.published = append(fx.published, id)
	}
	// Manifests are indexed apart, through the caps (package manifests).
	fx.cands = manifests.Cands(chunkPos, fx.chunks)
	return fx
}

// stored records round r's publication once its chunks are stored: the
// round is done here, its requests ready for the list. Call with s.mu
// held.
func (fx *pubFx) stored(x *sround) {
	x.published, x.requests, x.reqByPos, x.pubDone = fx.published, fx.requests, fx.reqByPos, true
}

// at is the state of round r, made on first use. Call with s.mu held.
func (rs *roundsState) at(r uint32) *sround {
	x := rs.rounds[r]
	if x == nil {
		x = &sround{subs: map[uint32]wire.Submit{}, digests: map[uint32][32]byte{}, requests: map[[32]byte]bool{},
			pir: pirround.New()}
		rs.rounds[r] = x
	}
	return x
}

// admitRound reports whether round r may hold new state here: neither
// pruned nor too far ahead. Call with s.mu held.
func (rs *roundsState) admitRound(p wire.Params, r uint32) error {
	if r < rs.pruned {
		return fmt.Errorf("node: round %d is over (rounds before %d are dropped)", r, rs.pruned)
	}
	if r >= rs.listHigh+uint32(p.W)+roundsAhead {
		return fmt.Errorf("node: round %d too far ahead of round %d", r, rs.listHigh)
	}
	return nil
}

package node

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/roundstep"
)

// Round steps (§5.2, §5.3) as functions of state and event, after
// wireguard-go's handshake: a message in, a message out, no I/O. A step
// takes the epoch's fixed facts (roundstep.Facts), the round's state and
// one event, changes that state and returns its effects: what to send and
// to whom, what to store, whether the epoch ends and why. It reads no
// clock and takes no lock. Its driver (mixStep, onBatch, publish) holds
// s.mu around a step that touches round state, releases it, then does
// the I/O the step returned, so no lock is held across a send or a store.
// The steps that read no round state are package internal/roundstep's;
// those over sround and roundsState are here.

func (s *Server) roundFacts(e *sepoch) roundstep.Facts {
	v := e.final
	return roundstep.Facts{ID: v.ID, Self: s.h.ID(), Chain: v.Chain, Pos: e.pos, N: e.n(), Params: v.Desc.Params}
}

// batchHeadStep decides on a checked head against the epoch's rounds:
// refused outside the kept window, dropped for a round void or given up
// here, a repeat if the round's batch was taken, else decoded. Call with
// s.mu held.
func batchHeadStep(ep roundstep.Facts, rs *roundsState, h wire.BatchHead) (roundstep.Next, roundstep.Fx) {
	if err := rs.admitRound(ep.Params, h.Round); err != nil {
		return roundstep.Refused, roundstep.Fx{Refuse: err}
	}
	x, in := rs.at(h.Round), ep.BatchIn(int(h.S))
	if x.void || (in == 0 && x.lacked) {
		// §5.2 v3: the round was signed void here, or its input given
		// up (lack.go); nothing of it is mixed or published any more.
		return roundstep.Ack, roundstep.Fx{}
	}
	if x.batchIn[in] {
		// A repeat (a retry, or a replay by the sender): one batch a
		// round is mixed; a different one signed for the round is
		// equivocation, which its root shows (noteRoot).
		return roundstep.Repeat, roundstep.Fx{}
	}
	return roundstep.Decode, roundstep.Fx{}
}

// batchStep takes a decoded batch whose head passed batchHeadStep, root
// its entries' root, at time now: the round's batch is taken once; one
// whose entries miss its signed root is refused; one with a missing or
// wrong-size entry is its sender's fault (§5.2 v2: the round is void,
// the signed batch is the evidence, the epoch ends; it is acknowledged,
// as refusing it would only hide the evidence). Call with s.mu held.
func batchStep(ep roundstep.Facts, rs *roundsState, b *wire.Batch, root [32]byte, now time.Time) (roundstep.Next, roundstep.Fx) {
	if b.Round >= ep.Params.Rounds || root != b.Root {
		return roundstep.Refused, roundstep.Fx{Refuse: errors.New("node: malformed batch")}
	}
	S := int(b.S)
	x, in := rs.at(b.Round), ep.BatchIn(S)
	if x.batchIn[in] {
		return roundstep.Ack, roundstep.Fx{} // the same batch, delivered twice at once
	}
	x.batchIn[in] = true
	if in == 0 {
		x.inAt = now
	}
	bb, k := ep.BK()
	want := mix.OnionSize(bb, k, ep.M()) - mix.TagSize*S
	bad := len(b.Entries) != ep.N
	for _, y := range b.Entries {
		bad = bad || len(y) != want
	}
	if bad {
		return roundstep.Fault, roundstep.Fx{
			End:      fmt.Sprintf("round %d void: batch from server %d malformed", b.Round, S-1),
			Evidence: b.Entries,
			BadFrom:  S,
		}
	}
	if in == 1 {
		return roundstep.Publish, roundstep.Fx{}
	}
	return roundstep.Mix, roundstep.Fx{}
}

// mixInputStep takes round r's input at S_0 (§5.2) once every slot but
// the dead ones has a signed onion for it and round r−mixDepth is
// published or void here (pipelining): the onions, the clients'
// signatures and the onions' hashes in slot order, a dead slot's the
// zero filler of onionSize bytes with no client signature (deadslot.go).
// The round is marked mixed; ok is false while it waits. Call with s.mu
// held.
func mixInputStep(rs *roundsState, r uint32, n, onionSize int, dead []int) (ins [][]byte, sigs [][64]byte, hashes [][32]byte, ok bool) {
	if r >= mixDepth {
		if p := rs.at(r - mixDepth); !p.pubDone && !p.void {
			return nil, nil, nil, false
		}
	}
	x := rs.at(r)
	for i := range n {
		if _, in := x.subs[uint32(i)]; !in && !slices.Contains(dead, i) {
			return nil, nil, nil, false
		}
	}
	ins, sigs, hashes = make([][]byte, n), make([][64]byte, n), make([][32]byte, n)
	for i := range n {
		if slices.Contains(dead, i) {
			ins[i] = make([]byte, onionSize)
			continue
		}
		ins[i], sigs[i], hashes[i] = x.subs[uint32(i)].Onion, x.subs[uint32(i)].Sig, x.digests[uint32(i)]
	}
	x.mixed = true
	return ins, sigs, hashes, true
}

// pubClaimTimes are S_0's deadlines before it claims a round's
// publication missing, given the times due (charges.go absenceDue, nil
// if none) at which each part of the round fell due here, the round
// limit and the time now: settle, a quarter of a round limit past the
// last due, so that the others' dues, counted from their own opening of
// the round, have passed too (zero: no dues, no wait); end, the last
// time the chain's holders are asked for the publication, a round limit
// after settle (from now without dues).
func pubClaimTimes(due []time.Time, limit time.Duration, now time.Time) (settle, end time.Time) {
	if due == nil {
		return time.Time{}, now.Add(limit)
	}
	last := due[len(due)-1]
	return last.Add(limit / 4), last.Add(limit * 5 / 4)
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

// stored records round r's publication once its chunks are stored: the
// round is done here, its requests ready for the list. Call with s.mu
// held.
func stored(fx *roundstep.PubFx, x *sround) {
	x.pub, x.pubDone = roundstep.Published{IDs: fx.Published, Requests: fx.Requests, ReqByPos: fx.ReqByPos}, true
}

// takeList takes rl, a checked final request list of its round (body as
// signed), come at now, unless the round has one: the first copy is the
// list, the proposal and signatures gathered for it go. published: the
// round was published here (else its manifests are none). Call with s.mu
// held.
func takeList(rs *roundsState, rl *wire.RoundList, body []byte, now time.Time) (first, published bool) {
	x := rs.at(rl.Round)
	if x.list != nil {
		return false, x.pubDone
	}
	x.list, x.listBytes, x.listAt = rl, body, now
	x.proposal, x.propBytes, x.listSigs = nil, nil, nil
	return true, x.pubDone
}

// at is the state of round r, made on first use. Call with s.mu held.
func (rs *roundsState) at(r uint32) *sround {
	x := rs.rounds[r]
	if x == nil {
		x = &sround{subs: map[uint32]wire.Submit{}, digests: map[uint32][32]byte{}, pub: roundstep.Published{Requests: map[[32]byte]bool{}}}
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

// batchDigest is roundstep.BatchDigest, by the name the round blame's
// files use.
func batchDigest(b *wire.Batch) [32]byte { return roundstep.BatchDigest(b) }

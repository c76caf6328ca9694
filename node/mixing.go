package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// mixDepth is how many rounds may be in the chain at once: S_0 mixes round
// r once round r−mixDepth is published here, so that its sending of r
// overlaps the later servers' work on r−1, as well as the PIR of earlier
// rounds. With the cover window W = 2 the onions of r are in by then.
const mixDepth = 2

// mixLoop is S_0's round driver: round r is mixed once every slot has a
// signed onion for it and round r-1 has been published, so that the upload
// and mixing of r overlap the PIR of r-1 (pipelining).
func (s *Server) mixLoop(e *sepoch) {
	p := e.final.desc.Params
	limit := time.Duration(p.RoundLimitMs) * time.Millisecond
	n := e.n()
	all := make([]uint32, n)
	for i := range all {
		all[i] = uint32(i)
	}
	bb, k := e.bk()
	onionSize := mix.OnionSize(bb, k, len(e.final.chain))
	for r := uint32(0); r < p.Rounds; r++ {
		ctx, cancel := context.WithTimeout(s.ctx, limit)
		var ins [][]byte
		var sigs [][64]byte
		var hashes [][32]byte
		err := s.waitFor(ctx, func() bool {
			if e.ended || !e.setupDone {
				return e.ended
			}
			x := e.round(r)
			// A dead slot (deadslot.go) is not waited for: it holds
			// the zero filler, with no client signature.
			if live, in := e.liveCount(x, all); in < live || (r >= mixDepth && !e.round(r-mixDepth).pubDone && !e.round(r-mixDepth).void) {
				return false
			}
			ins, sigs, hashes = make([][]byte, n), make([][64]byte, n), make([][32]byte, n)
			for i := 0; i < n; i++ {
				if e.isDead(uint32(i)) {
					ins[i] = make([]byte, onionSize)
					continue
				}
				ins[i], sigs[i], hashes[i] = x.subs[uint32(i)].Onion, x.subs[uint32(i)].Sig, x.digests[uint32(i)]
			}
			x.mixed, x.inAt = true, time.Now()
			return true
		})
		cancel()
		if err != nil || ins == nil {
			// §5.2 v3: a round whose publication never came is signed
			// void by every server, once an epoch, and the epoch goes
			// on; round r waits again.
			if r >= mixDepth && s.ctx.Err() == nil && s.voidRound(e, r-mixDepth) {
				r--
				continue
			}
			s.mu.Lock()
			// §5.4: a round that cannot be filled ends the epoch.
			s.endUnfilled(e, r)
			s.mu.Unlock()
			return
		}
		s.mixStep(e, r, ins, sigs, hashes)
	}
	s.awaitLastRounds(e)
}

// awaitLastRounds waits, after the epoch's last round is mixed, for the
// publication of its last mixDepth rounds, which no later round's wait
// covers: each gets the round limit, as if rounds R and R+1 were to be
// mixed. The first still missing is signed void (one void an epoch, §5.2
// v3); a void last round ends the epoch as complete (onRoundList), an
// earlier one lets the last round's PIR end it, and a second missing one
// ends the epoch with an abort for the missing publication, charged to the
// last server (§3). Without this wait a last server that kept one of the
// two last rounds left the epoch, and with it every server and client of
// the chain, waiting for ever. S_0 only.
func (s *Server) awaitLastRounds(e *sepoch) {
	p := e.final.desc.Params
	limit := time.Duration(p.RoundLimitMs) * time.Millisecond
	for q := max(p.Rounds, mixDepth) - mixDepth; q < p.Rounds; q++ {
		ctx, cancel := context.WithTimeout(s.ctx, limit)
		err := s.waitFor(ctx, func() bool {
			x := e.round(q)
			return e.ended || x.pubDone || x.void
		})
		cancel()
		if s.ctx.Err() != nil {
			return
		}
		if err == nil {
			s.mu.Lock()
			ended := e.ended
			s.mu.Unlock()
			if ended {
				return
			}
			continue
		}
		if s.voidRound(e, q) {
			continue
		}
		s.mu.Lock()
		if !e.ended {
			s.endNoPub(e, q, fmt.Sprintf("epoch's end: no publication of round %d", q))
		}
		s.mu.Unlock()
		return
	}
}

// awaitSetup waits, up to the round limit, until this server has verified
// the epoch's setup: S_0 starts round 0 once its own check is done, and a
// later server's check (it verifies every step) can still be running when
// round 0's batch arrives. It reports false if the epoch ended instead, or
// ends it if the setup does not finish in time.
func (s *Server) awaitSetup(e *sepoch) bool {
	limit := time.Duration(e.final.desc.Params.RoundLimitMs) * time.Millisecond
	ctx, cancel := context.WithTimeout(s.ctx, limit)
	defer cancel()
	err := s.waitFor(ctx, func() bool { return e.setupDone || e.ended })
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !e.setupDone && !e.ended {
		s.end(e, "setup not verified within the round limit")
	}
	return e.setupDone && !e.ended
}

// mixStep opens this server's layer of round r at every input position,
// permutes by π_s and passes the batch on (§5.2).
func (s *Server) mixStep(e *sepoch, r uint32, in [][]byte, clientSigs [][64]byte, clientHashes [][32]byte) {
	if !s.awaitPace(e) {
		return
	}
	defer s.trace("mixStep", r)()
	s.hookStage(e.final.id, r, "mix")
	v := e.final
	m := len(v.chain)
	fail := func(reason string, err error) {
		s.log.Warn("round void", "round", r, "err", err)
		s.mu.Lock()
		s.end(e, reason)
		s.mu.Unlock()
	}
	if !s.awaitSetup(e) {
		return
	}
	s.mu.Lock()
	rk, U, fwd := e.rk, e.U, e.forward
	ok := e.acquire()
	s.mu.Unlock()
	if !ok {
		return
	}
	defer func() {
		s.mu.Lock()
		e.release()
		s.mu.Unlock()
	}()
	mixStart := time.Now()
	keys, err := mix.ServerLayerKeys(mix.EpochID(v.id), e.pos, uint64(r), rk, U)
	if err != nil {
		fail("layer keys", err)
		return
	}
	// Decrypt into this epoch's reused buffers (never in place: the input
	// is the predecessor's signed batch, the evidence of a blame). A
	// round blame under way is waited for: its dead slot, if it names a
	// client, is absent from this round too (deadslot.go).
	bufs := e.takeLayerBufs(len(in), len(in[0])-mix.TagSize)
	defer e.putLayerBufs(s, bufs)
	dead, live := s.awaitSettled(e, e.pos)
	if !live {
		mix.CloseLayerKeys(keys)
		return
	}
	out, err := mix.OpenLayerSkipInto(bufs, mix.EpochID(v.id), uint64(r), e.pos, keys, in, dead)
	if err == nil {
		if p, ok := s.hookAccuse(r); ok {
			err = &mix.MACError{Server: e.pos, Round: uint64(r), Positions: []int{p}}
		}
	}
	var me *mix.MACError
	if errors.As(err, &me) {
		// A blame that started meanwhile (this round was in flight) may
		// name the failing position's client: once it settles, the
		// round opens again without the dead positions.
		// What still fails then is walked (a second culprit).
		if now, ok := s.awaitSettled(e, e.pos); ok && len(now) > len(dead) {
			out, err = mix.OpenLayerSkipInto(bufs, mix.EpochID(v.id), uint64(r), e.pos, keys, in, now)
		}
	}
	mix.CloseLayerKeys(keys)
	if err != nil {
		// §5.2 (v2): any fault voids the round; nothing is forwarded. The
		// input batch stays as the evidence for blame (§8), which walks
		// the first failing position.
		s.mu.Lock()
		e.keepEvidence(r, in)
		s.mu.Unlock()
		if errors.As(err, &me) && len(me.Positions) > 0 {
			s.accuse(e, r, me.Positions[0])
			return
		}
		fail(fmt.Sprintf("round %d void: layer %d: %v", r, e.pos, err), err)
		return
	}
	out = mix.Permute(fwd, out)
	s.hookCorruptOut(r, out)
	if s.hookDropOut(r) {
		out = out[:len(out)-1]
	}
	s.timing.add(&s.timing.mix, time.Since(mixStart))
	b := wire.Batch{Epoch: v.id, Round: r, S: uint16(e.pos + 1), Entries: out, ClientSigs: clientSigs, ClientHashes: clientHashes}
	var ph *payloadHashes
	if e.pos == m-1 {
		bb, k := e.bk()
		ph = hashPublished(out, bb, k)
	}
	if err := s.signBatch(&b, ph); err != nil {
		fail("sign batch", err)
		return
	}
	s.announceRoot(e, &b)
	ctx, cancel := context.WithTimeout(s.ctx, bulkTimeout)
	defer cancel()
	if e.pos == m-1 {
		s.hookLastOut(v.id, r, out)
	}
	if e.pos == m-1 && s.hookWithhold(r) {
		return
	}
	if e.pos == m-1 {
		// Published payloads go out without their zero padding (a cover
		// is all padding): every receiver puts it back before it checks
		// the root (wire.ZeroRun). The bytes signed are the same.
		bb, k := e.bk()
		b.Zeros = make([]wire.ZeroRun, len(out))
		for i, raw := range out {
			at, n := mix.PaddingRun(raw, bb, k)
			b.Zeros[i] = wire.ZeroRun{At: uint32(at), N: uint32(n)}
		}
		// The payloads go to every other server while this one publishes
		// its own output in place: no copy of the batch, no second Merkle
		// root of what it has just signed. The buffers stay ours until
		// both are done.
		others := make([]peer.ID, 0, m-1)
		for _, p := range v.chain {
			if p != s.h.ID() {
				others = append(others, p)
			}
		}
		sent := make(chan error, 1)
		go func() {
			// Retried within the round limit: a publication lost on its
			// way to one server would leave that server without the
			// round's chunks for good, while the others serve them
			// (TestSwarm seed 3). A repeat is acknowledged like the first.
			rctx, rcancel := context.WithTimeout(ctx, time.Duration(v.desc.Params.RoundLimitMs)*time.Millisecond)
			err := deliverAll(rctx, others, s.cfg.Timing.EvidenceBackoff, s.cfg.Timing.EvidenceBackoffMax, func(ctx context.Context, p peer.ID) error {
				_, err := call(ctx, s.h, p, request{Proto: ProtoRound, Type: wire.TypeBatch, Segments: b.Segments(), Timeout: bulkTimeout})
				return err
			})
			rcancel()
			if err == nil && s.hookRepeatOut(r) {
				_, err = s.each(ctx, others, request{Proto: ProtoRound, Type: wire.TypeBatch, Segments: b.Segments(), Timeout: bulkTimeout})
			}
			sent <- err
		}()
		s.publish(e, r, out, ph)
		if err := <-sent; err != nil {
			s.log.Warn("publish", "round", r, "err", err)
		}
		return
	}
	switch {
	case s.hookHideOut(r):
		return // withheld: neither sent nor kept for a fetch
	case s.hookLoseOut(r):
		err = errors.New("lost in transit (test)")
	default:
		s.mu.Lock()
		e.round(r).sending = true
		s.mu.Unlock()
		_, err = call(ctx, s.h, v.chain[e.pos+1], request{Proto: ProtoRound, Type: wire.TypeBatch, Segments: b.Segments(), Timeout: bulkTimeout})
		s.mu.Lock()
		e.round(r).sending = false
		s.mu.Unlock()
	}
	if err != nil {
		// §5.2 v3: the successor fetches what it did not get (lack.go);
		// if it cannot, it claims the lack and the void is its own.
		s.log.Warn("forward batch: kept for a fetch", "round", r, "err", err)
		s.keepUndelivered(e, r, &b)
		return
	}
	if s.hookRepeatOut(r) {
		_, _ = call(ctx, s.h, v.chain[e.pos+1], request{Proto: ProtoRound, Type: wire.TypeBatch, Segments: b.Segments(), Timeout: bulkTimeout})
	}
}

func batchDigest(b *wire.Batch) [32]byte {
	var e wire.Enc
	e.U32(b.Round)
	e.U16(b.S)
	return taggedHash(tagBatch, b.Epoch[:], e.B, b.Root[:])
}

// signBatch sets the batch's root (publishedRoot if ph, the hashes of a
// published batch, is given) and signs it.
func (s *Server) signBatch(b *wire.Batch, ph *payloadHashes) error {
	if ph != nil {
		b.Root = publishedRoot(b.Entries, ph)
	} else {
		b.Root = merkleRoot(b.Entries)
	}
	sig, err := sign(s.priv, batchDigest(b))
	b.Sig = sig
	return err
}

// handleRound serves /riffle/1/round (servers only).
func (s *Server) handleRound(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if err := takes(ProtoRound, t); err != nil {
		return 0, nil, err
	}
	if from != s.h.ID() && s.roster.get(from) == nil {
		return 0, nil, errors.New("node: round messages are for chain servers")
	}
	switch t {
	case wire.TypeSubmitBatch:
		var b wire.SubmitBatch
		if err := b.Unmarshal(body, genericLimits()); err != nil {
			return 0, nil, err
		}
		if err := s.takeSubs(from, body, &b); err != nil {
			return 0, nil, err
		}
		return wire.TypeAck, ack, nil
	case wire.TypeBatch:
		return s.onBatch(from, body)
	case wire.TypeProposal:
		return s.onProposal(ctx, from, body)
	case wire.TypeRoundList:
		return s.onRoundList(from, body)
	case wire.TypePadAnswers:
		return s.onPadAnswers(from, body)
	case wire.TypeRoot:
		return s.onRoot(from, body)
	case wire.TypeGetBatch:
		return s.onGetBatch(from, body)
	case wire.TypeLack:
		return s.onLack(from, body)
	case wire.TypeClosingProposal:
		return s.onClosingProposal(ctx, from, body)
	case wire.TypeClosing:
		return s.onClosing(from, body)
	case wire.TypeClosingSig:
		return s.onClosingSig(from, body)
	case wire.TypeEquivocation:
		return s.onEquivocation(from, body)
	case wire.TypeDoubleSubmit:
		return s.onDoubleSubmit(from, body)
	case wire.TypeKeyEvidence:
		return s.onKeyEvidence(from, body)
	case wire.TypeBadBatch:
		return s.onBadBatch(from, body)
	case wire.TypeGetChunk:
		var c wire.Chunk
		if err := c.Unmarshal(body, 0); err != nil {
			return 0, nil, err
		}
		data, err := s.store.GetChunk(c.ID)
		if err != nil {
			return 0, nil, err
		}
		return wire.TypeChunk, (&wire.Chunk{ID: c.ID, Data: data}).Marshal(), nil
	case wire.TypeListReq:
		return s.onListReq(body)
	}
	return 0, nil, unhandled(ProtoRound, t)
}

func (s *Server) onBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var b wire.Batch
	// Entries sent without their zero padding are rebuilt in recycled
	// buffers (a published round of covers is n·b bytes rebuilt).
	var rebuilt [][]byte
	alloc := func(n int) []byte {
		x := s.pool.get(n)
		rebuilt = append(rebuilt, x)
		return x
	}
	// Sender, epoch and signature are checked on the head alone, before
	// the body costs anything: only then are entries rebuilt, bounded by
	// this epoch's limits (§5.2; only a signed batch is evidence against
	// its sender).
	h, err := wire.PeekBatch(body)
	if err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(h.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	m, n := len(v.chain), e.n()
	S := int(h.S)
	if S < 1 || S > m || v.chain[S-1] != from || (S < m && S != e.pos) {
		return 0, nil, fmt.Errorf("node: batch for server %d not expected from %s", S, from.ShortString())
	}
	if err := verifyPeerSig(from, batchDigest(&wire.Batch{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root}), h.Sig); err != nil {
		return 0, nil, err
	}
	// A round outside the epoch or the kept window is refused before its
	// root is recorded: nothing of it may stay here.
	if h.Round >= v.desc.Params.Rounds {
		return 0, nil, fmt.Errorf("node: batch for round %d beyond the epoch's %d", h.Round, v.desc.Params.Rounds)
	}
	s.mu.Lock()
	err = e.admit(h.Round)
	in := 0 // which batch of the round: the input, or the payloads
	if S == m {
		in = 1
	}
	taken := err == nil && e.round(h.Round).batchIn[in]
	void := err == nil && (e.round(h.Round).void || (in == 0 && e.round(h.Round).lacked))
	s.mu.Unlock()
	if err != nil {
		return 0, nil, err
	}
	if void {
		// §5.2 v3: the round was signed void here, or its input given
		// up (lack.go); nothing of it is mixed or published any more.
		return wire.TypeAck, ack, nil
	}
	if taken {
		// A repeat (a retry, or a replay by the sender): one batch a
		// round is mixed; a different one signed for the round is
		// equivocation, which its root shows (noteRoot).
		return s.repeatBatch(e, h)
	}
	lim := limitsFor(v.desc.Params, m)
	lim.Frame = s.roundCaps(wire.TypeBatch)
	if err := b.UnmarshalAlloc(body, lim, alloc); err != nil {
		return 0, nil, err
	}
	if !s.noteRoot(e, &wire.Root{Epoch: b.Epoch, Round: b.Round, S: b.S, Root: b.Root, Sig: b.Sig}) {
		return wire.TypeAck, ack, nil
	}
	var ph *payloadHashes
	root := [32]byte{}
	if S == m {
		bb, k := e.bk()
		ph = hashPublished(b.Entries, bb, k)
		root = publishedRoot(b.Entries, ph)
	} else {
		root = merkleRoot(b.Entries)
	}
	if b.Round >= v.desc.Params.Rounds || root != b.Root {
		return 0, nil, errors.New("node: malformed batch")
	}
	s.mu.Lock()
	x := e.round(b.Round)
	taken = x.batchIn[in]
	x.batchIn[in] = true
	if in == 0 && !taken {
		x.inAt = time.Now()
	}
	s.mu.Unlock()
	if taken {
		return wire.TypeAck, ack, nil // the same batch, delivered twice at once
	}
	bb, k := e.bk()
	want := mix.OnionSize(bb, k, m) - mix.TagSize*S
	bad := len(b.Entries) != n
	for _, x := range b.Entries {
		bad = bad || len(x) != want
	}
	if bad {
		// §5.2 (v2): a signed batch with a missing or wrong-size entry is
		// a fault of its sender: the round is void (nothing forwarded,
		// nothing published), the signed batch is kept as evidence, and
		// the epoch ends for everyone. It is acknowledged: it was
		// delivered, and refusing it would only hide the evidence.
		s.mu.Lock()
		e.keepEvidence(b.Round, b.Entries)
		s.end(e, fmt.Sprintf("round %d void: batch from server %d malformed", b.Round, S-1))
		s.noteBadBatch(e, S-1, b.Round, body)
		s.mu.Unlock()
		return wire.TypeAck, ack, nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		// The body and the rebuilt entries (every entry lives in one) go
		// back to the pool once the round's work here is done; a mixing
		// server's input batch stays until the round is published here,
		// the evidence of a later fault's walk (roundblame.go).
		held := false
		if S < m {
			s.mu.Lock()
			held = e.holdInput(b.Round, b.Entries, append(rebuilt, body))
			s.mu.Unlock()
		}
		defer func() {
			if held {
				return
			}
			s.pool.put(body)
			for _, x := range rebuilt {
				s.pool.put(x)
			}
		}()
		// Dead slots carry no client signature; a blame under way may
		// have made one dead (deadslot.go).
		deadSlots, live := s.awaitSettled(e, 0)
		if !live {
			return
		}
		if err := checkClientSigs(e, &b, deadSlots); err != nil {
			// §5.2 (v2): a slot without its client's signature is a fault
			// of the sender, who passed it on: void, evidence kept.
			s.log.Warn("round void", "round", b.Round, "err", err)
			s.mu.Lock()
			e.keepEvidence(b.Round, b.Entries)
			s.end(e, fmt.Sprintf("round %d void: batch from server %d: %v", b.Round, S-1, err))
			s.mu.Unlock()
			return
		}
		if S < m {
			s.mixStep(e, b.Round, b.Entries, b.ClientSigs, b.ClientHashes)
		} else {
			s.publish(e, b.Round, b.Entries, ph)
		}
	}()
	return wire.TypeAck, ack, nil
}

// repeatBatch answers a signed batch for a round whose batch was taken:
// its root is recorded as any signed root is, so that a different root
// names its signer (equivocation), and the batch itself is dropped.
func (s *Server) repeatBatch(e *sepoch, h wire.BatchHead) (wire.Type, []byte, error) {
	s.noteRoot(e, &wire.Root{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root, Sig: h.Sig})
	return wire.TypeAck, ack, nil
}

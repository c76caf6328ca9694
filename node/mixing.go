package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/node/transport"
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
	p := e.final.Desc.Params
	limit := time.Duration(p.RoundLimitMs) * time.Millisecond
	n := e.n()
	all := make([]uint32, n)
	for i := range all {
		all[i] = uint32(i)
	}
	bb, k := e.bk()
	onionSize := mix.OnionSize(bb, k, len(e.final.Chain))
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
			x.mixed = true
			return true
		})
		cancel()
		if err != nil || ins == nil {
			// §5.2 v3: a round whose publication never came is signed
			// void by every server, once an epoch, and the epoch goes
			// on; round r waits again.
			if r >= mixDepth && s.ctx.Err() == nil {
				if missing, came := s.pubMissing(e, r-mixDepth); came || (missing && s.voidRound(e, r-mixDepth)) {
					r--
					continue
				}
			}
			// §5.4: the primaries of its empty slots say them dry
			// (held.go), or send their onions again.
			if s.ctx.Err() == nil && s.askDries(e, r) {
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
		s.pub.Watch(pubEpoch(e), r)
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
	p := e.final.Desc.Params
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
		missing, came := s.pubMissing(e, q)
		if came || (missing && s.voidRound(e, q)) {
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

// pubMissing waits, before S_0 claims round q's publication missing,
// until every part of q is due here and a quarter of a round limit more,
// so that the others' dues, counted from their own opening of the round,
// have passed too and they attest what is missing (charges.go). missing:
// the publication is still missing (the epoch running); came: it came
// (or the round turned void) during this wait. S_0 only.
func (s *Server) pubMissing(e *sepoch, q uint32) (missing, came bool) {
	gone := func() bool {
		x := e.round(q)
		return x.pubDone || x.void
	}
	s.mu.Lock()
	due := e.absenceDue(q)
	was := gone()
	s.mu.Unlock()
	if was {
		return false, false
	}
	if due != nil {
		slack := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond / 4
		ctx, cancel := context.WithDeadline(s.ctx, due[len(due)-1].Add(slack))
		_ = s.waitFor(ctx, func() bool { return e.ended || gone() })
		cancel()
	}
	// A publication that reached other chain servers and not this one
	// is fetched from them (pubfetch.go): the last server does not make
	// S_0 claim what others hold, which they would not back. The watch
	// began fetching it once it was due (pubfetch.Service.Watch); once that is over,
	// the holders are asked once more, should they have taken it since.
	// A holder that does not answer delays the claim a round limit (in
	// all: the watch's fetch and this one).
	end := time.Now().Add(time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond)
	if due != nil {
		end = due[len(due)-1].Add(time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond * 5 / 4)
	}
	ctx, cancel := context.WithDeadline(s.ctx, end)
	if watch := e.pubs.Watch(q); watch != nil {
		select {
		case <-watch:
		case <-ctx.Done():
		}
	}
	fetched := s.pub.Fetch(ctx, pubEpoch(e), q, e.final.Chain)
	cancel()
	if fetched {
		ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
		_ = s.waitFor(ctx, func() bool { return e.ended || gone() })
		cancel()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended || s.ctx.Err() != nil {
		return false, false
	}
	return !gone(), gone()
}

// awaitSetup waits, up to the round limit, until this server has verified
// the epoch's setup: S_0 starts round 0 once its own check is done, and a
// later server's check (it verifies every step) can still be running when
// round 0's batch arrives. It reports false if the epoch ended instead, or
// ends it if the setup does not finish in time.
func (s *Server) awaitSetup(e *sepoch) bool {
	limit := time.Duration(e.final.Desc.Params.RoundLimitMs) * time.Millisecond
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
// permutes by π_s and passes the batch on (§5.2). It drives
// roundstep.LayerFault and SealBatch (internal/roundstep): it waits, opens the layer and sends.
func (s *Server) mixStep(e *sepoch, r uint32, in [][]byte, clientSigs [][64]byte, clientHashes [][32]byte) {
	if !s.awaitPace(e) {
		return
	}
	defer s.trace("mixStep", r)()
	s.hookCfg().Stage(e.final.ID, r, "mix")
	ep := s.roundFacts(e)
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
	keys, err := mix.ServerLayerKeys(mix.EpochID(ep.ID), e.pos, uint64(r), rk, U)
	if err != nil {
		s.roundFault(e, r, roundstep.Fx{End: "layer keys"}, err)
		return
	}
	// Decrypt into this epoch's reused buffers (never in place: the input
	// is the predecessor's signed batch, the evidence of a blame). A
	// round blame under way is waited for: its dead slot, if it names a
	// client, is absent from this round too (deadslot.go).
	bufs := e.layers.Take(len(in), len(in[0])-mix.TagSize)
	defer e.layers.Put(bufs)
	dead, live := s.awaitSettled(e, e.pos)
	if !live {
		mix.CloseLayerKeys(keys)
		return
	}
	out, err := mix.OpenLayerSkipInto(bufs, mix.EpochID(ep.ID), uint64(r), e.pos, keys, in, dead)
	if err == nil {
		if p, ok := s.hookRun().Accuse(r); ok {
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
			out, err = mix.OpenLayerSkipInto(bufs, mix.EpochID(ep.ID), uint64(r), e.pos, keys, in, now)
		}
	}
	mix.CloseLayerKeys(keys)
	if err != nil {
		s.roundFault(e, r, roundstep.LayerFault(ep, r, in, err), err)
		return
	}
	out = mix.Permute(fwd, out)
	s.hookRun().CorruptOut(r, out)
	if s.hookRun().DropOut(r) {
		out = out[:len(out)-1]
	}
	s.timing.add(&s.timing.mix, time.Since(mixStart))
	sd, err := roundstep.SealBatch(ep, s.priv, r, out, clientSigs, clientHashes)
	if err != nil {
		s.roundFault(e, r, roundstep.Fx{End: "sign batch"}, err)
		return
	}
	s.announceRoot(e, &sd.Batch)
	s.sendBatch(e, r, &sd)
}

// roundFault does what a step's fault asks: keeps the round's evidence
// (copied before s.mu is taken), then starts a MAC blame or ends the
// epoch (err is logged).
func (s *Server) roundFault(e *sepoch, r uint32, fx roundstep.Fx, err error) {
	var ev [][]byte
	if fx.Evidence != nil {
		ev = copyEntries(fx.Evidence)
	}
	if fx.Accuse > 0 {
		s.mu.Lock()
		e.keepCopied(r, ev)
		s.mu.Unlock()
		s.accuse(e, r, fx.Accuse-1)
		return
	}
	s.log.Warn("round void", "round", r, "err", err)
	s.mu.Lock()
	if ev != nil {
		e.keepCopied(r, ev)
	}
	s.end(e, fx.End)
	s.mu.Unlock()
}

// sendBatch sends a sealed batch where it goes. The last server's
// payloads go to every other server while it publishes its own output in
// place: no copy of the batch, no second Merkle root of what it has just
// signed; the buffers stay ours until both are done. A middle batch is
// kept for the fetches of its receiver and of the servers its receiver
// asks to relay it (§5.2 v3, lack.go).
func (s *Server) sendBatch(e *sepoch, r uint32, sd *roundstep.Sealed) {
	ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
	defer cancel()
	req := transport.Request{Proto: ProtoRound, Type: wire.TypeBatch, Segments: sd.Batch.Segments(), Timeout: transport.BulkTimeout}
	if sd.Publish {
		s.hookCfg().LastOut(e.final.ID, r, sd.Batch.Entries)
		if s.hookRun().Withhold(r) {
			return
		}
		sent := make(chan error, 1)
		go func() {
			// Retried within the round limit: a publication lost on its
			// way to one server would leave that server without the
			// round's chunks for good, while the others serve them
			// (TestSwarm seed 3). A repeat is acknowledged like the first.
			rctx, rcancel := context.WithTimeout(ctx, time.Duration(e.final.Desc.Params.RoundLimitMs)*time.Millisecond)
			err := deliverAll(rctx, sd.To, s.cfg.Timing.EvidenceBackoff, s.cfg.Timing.EvidenceBackoffMax, func(ctx context.Context, p peer.ID) error {
				if d := s.hookRun().PubLate(r, p); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				_, err := transport.Call(ctx, s.h, p, req)
				return err
			})
			rcancel()
			if err == nil && s.hookRun().RepeatOut(r) {
				_, err = s.each(ctx, sd.To, req)
			}
			sent <- err
		}()
		s.publish(e, r, sd.Batch.Entries, sd.PH)
		if err := <-sent; err != nil {
			s.log.Warn("publish", "round", r, "err", err)
		}
		return
	}
	if s.hookRun().HideOut(r) {
		return // withheld: neither sent nor kept for a fetch
	}
	if d := s.hookRun().LateOut(r); d > 0 {
		// Late, and kept from every fetch meanwhile (test).
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return
		}
	}
	// Kept for the fetches of the successor and of the servers it asks
	// to relay the batch (lack.go), whether or not it takes it now.
	s.keepOut(e, r, &sd.Batch)
	var err error
	switch {
	case s.hookRun().LoseOut(r):
		err = errors.New("lost in transit (test)")
	case s.hookRun().RefuseSucc(r):
		return // withheld from the successor alone (test)
	default:
		s.mu.Lock()
		e.round(r).sending = true
		s.mu.Unlock()
		_, err = transport.Call(ctx, s.h, sd.To[0], req)
		s.mu.Lock()
		e.round(r).sending = false
		s.mu.Unlock()
	}
	if err != nil {
		// The successor fetches what it did not get, from here or
		// from the servers it asks to relay it.
		s.log.Warn("forward batch: kept for a fetch", "round", r, "err", err)
		return
	}
	if s.hookRun().RepeatOut(r) {
		_, _ = transport.Call(ctx, s.h, sd.To[0], req)
	}
}

// batchDigest is roundstep.BatchDigest, by the name the round blame's
// files use.
func batchDigest(b *wire.Batch) [32]byte { return roundstep.BatchDigest(b) }

// handleRound serves /riffle/1/round (servers only).
func (s *Server) handleRound(ctx context.Context, from peer.ID, t wire.Type, body []byte) (wire.Type, []byte, error) {
	if err := transport.Takes(ProtoRound, t); err != nil {
		return 0, nil, err
	}
	if from != s.h.ID() && s.roster.get(from) == nil {
		return 0, nil, errors.New("node: round messages are for chain servers")
	}
	switch t {
	case wire.TypeSubmitBatch:
		var b wire.SubmitBatch
		if err := b.Unmarshal(body, proto.GenericLimits()); err != nil {
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
		return s.ix.PIR.OnPadAnswers(from, body)
	case wire.TypeRoot:
		return s.onRoot(from, body)
	case wire.TypeRootRelay:
		return s.onRootRelay(from, body)
	case wire.TypeGetBatch:
		return s.onGetBatch(from, body)
	case wire.TypeLack:
		return s.onLack(from, body)
	case wire.TypeClosingProposal:
		return s.closing.onProposal(ctx, from, body)
	case wire.TypeClosing:
		return s.closing.onRecord(from, body)
	case wire.TypeClosingSig:
		return s.closing.onSig(from, body)
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
		return s.ix.OnListReq(s.listReqBody(body), catchEnv{s}.HeldList)
	case wire.TypeDryReq:
		return s.onDryReq(from, body)
	case wire.TypeDrySet:
		return s.onDrySet(from, body)
	case wire.TypeAccountReq:
		return s.onAccountReq(from, body)
	}
	return 0, nil, transport.Unhandled(ProtoRound, t)
}

// onBatch takes a signed batch from the server before this one, or the
// last server's publication: the driver of roundstep.CheckBatchHead,
// batchHeadStep and batchStep (roundstep.go).
func (s *Server) onBatch(from peer.ID, body []byte) (wire.Type, []byte, error) {
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
	ep := s.roundFacts(e)
	if err := roundstep.CheckBatchHead(ep, from, h); err != nil {
		return 0, nil, err
	}
	if s.hookRun().DropIn(h.Round) && int(h.S) == e.pos {
		return wire.TypeAck, ack, nil
	}
	s.mu.Lock()
	next, fx := batchHeadStep(ep, &e.roundsState, h)
	s.mu.Unlock()
	switch next {
	case roundstep.Refused:
		return 0, nil, fx.Refuse
	case roundstep.Ack:
		return wire.TypeAck, ack, nil
	case roundstep.Repeat:
		return s.repeatBatch(e, h)
	}
	// Entries sent without their zero padding are rebuilt in recycled
	// buffers (a published round of covers is n·b bytes rebuilt).
	var b wire.Batch
	var rebuilt [][]byte
	alloc := func(n int) []byte {
		x := s.pool.Get(n)
		rebuilt = append(rebuilt, x)
		return x
	}
	lim := proto.LimitsFor(ep.Params, ep.M())
	lim.Frame = roundCaps(wire.TypeBatch)
	if err := b.UnmarshalAlloc(body, lim, alloc); err != nil {
		return 0, nil, err
	}
	if !s.noteRoot(e, &wire.Root{Epoch: b.Epoch, Round: b.Round, S: b.S, Root: b.Root, Sig: b.Sig}) {
		return wire.TypeAck, ack, nil
	}
	root, ph := roundstep.BatchRoot(ep, &b)
	s.mu.Lock()
	next, fx = batchStep(ep, &e.roundsState, &b, root, time.Now())
	if next == roundstep.Publish {
		// Kept for a chain server the last server left without it. It
		// also shows that every server passed the round on: this
		// server's own batch of it need not be kept any longer (lack.go
		// passedOn; a noted server asks for the publication then).
		e.pubs.Keep(b.Round, body)
		e.round(b.Round).kept = nil
	}
	if next == roundstep.Fault {
		e.keepEvidence(b.Round, fx.Evidence)
		s.end(e, fx.End)
		s.noteBadBatch(e, fx.BadFrom-1, b.Round, body)
	}
	s.mu.Unlock()
	switch next {
	case roundstep.Refused:
		return 0, nil, fx.Refuse
	case roundstep.Mix, roundstep.Publish:
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.runBatch(e, &b, ph, append(rebuilt, body))
		}()
	}
	return wire.TypeAck, ack, nil
}

// runBatch mixes or publishes a batch that batchStep took. The body and
// the rebuilt entries (bufs: every entry lives in one) go back to the
// pool once the round's work here is done; a mixing server's input batch
// stays until the round is published here, the evidence of a later
// fault's walk (roundblame.go).
func (s *Server) runBatch(e *sepoch, b *wire.Batch, ph *roundstep.Hashes, bufs [][]byte) {
	S := int(b.S)
	m := len(e.final.Chain)
	held := false
	if S < m {
		s.mu.Lock()
		held = e.holdInput(b.Round, b.Entries, bufs)
		s.mu.Unlock()
	}
	defer func() {
		if held {
			return
		}
		for _, x := range bufs {
			s.pool.Put(x)
		}
	}()
	// Dead slots carry no client signature; a blame under way may
	// have made one dead (deadslot.go).
	deadSlots, live := s.awaitSettled(e, 0)
	if !live {
		return
	}
	if err := checkClientSigs(e, b, deadSlots); err != nil {
		// §5.2 (v2): a slot without its client's signature is a fault
		// of the sender, who passed it on: void, evidence kept.
		s.roundFault(e, b.Round, roundstep.Fx{Evidence: b.Entries, End: fmt.Sprintf("round %d void: batch from server %d: %v", b.Round, S-1, err)}, err)
		return
	}
	if S < m {
		s.mixStep(e, b.Round, b.Entries, b.ClientSigs, b.ClientHashes)
	} else {
		s.publish(e, b.Round, b.Entries, ph)
	}
}

// repeatBatch answers a signed batch for a round whose batch was taken:
// its root is recorded as any signed root is, so that a different root
// names its signer (equivocation), and the batch itself is dropped.
func (s *Server) repeatBatch(e *sepoch, h wire.BatchHead) (wire.Type, []byte, error) {
	s.noteRoot(e, &wire.Root{Epoch: h.Epoch, Round: h.Round, S: h.S, Root: h.Root, Sig: h.Sig})
	return wire.TypeAck, ack, nil
}

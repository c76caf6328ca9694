package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/manifests"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roundstep"
	"github.com/riffle-net/riffle/node/internal/window"
	"github.com/riffle-net/riffle/node/transport"
	"github.com/riffle-net/riffle/store"
)

// publish checks, stores and indexes a round's payloads (§5.3, §7), with
// their hashes from the batch's Merkle root. It drives beginPublish (roundstep.go)
// and roundstep.PublishStep: it verifies, waits and stores, outside s.mu.
func (s *Server) publish(e *sepoch, r uint32, payloads [][]byte, ph *roundstep.Hashes) {
	defer s.trace("publish", r)()
	ep := s.roundFacts(e)
	s.hookCfg().Stage(ep.ID, r, "publish")
	if !s.awaitSetup(e) {
		return
	}
	s.mu.Lock()
	ok := beginPublish(e.ended, e.round(r))
	ps := e.pseudonyms
	s.mu.Unlock()
	if !ok {
		return
	}
	defer func() {
		s.mu.Lock()
		e.round(r).publishing = false
		s.mu.Unlock()
	}()
	verifyStart := time.Now()
	bad := mix.VerifyPayloadsHashed(mix.EpochID(ep.ID), uint64(r), ps, payloads, ph.Hs, ph.OK, s.rand)
	s.timing.add(&s.timing.verify, time.Since(verifyStart))
	var deadOut []int
	if len(bad) > 0 {
		// A payload at a dead slot's output that fails is absent (the
		// filler, or the culprit's onion of a round in flight); one that
		// verifies is published as any other (deadslot.go). A blame
		// under way is waited for first.
		s.mu.Lock()
		pending := e.blames.Any()
		s.mu.Unlock()
		if pending {
			var ok bool
			if deadOut, ok = s.awaitSettled(e, ep.M()); !ok {
				return
			}
		}
	}
	fx := roundstep.PublishStep(ep, r, payloads, ph, bad, deadOut)
	for _, sr := range fx.Seen {
		s.hookCfg().Requests(ep.ID, r, sr.Q, sr.IDs)
	}
	if fx.End != "" {
		s.mu.Lock()
		s.end(e, fx.End)
		s.mu.Unlock()
		return
	}
	storeStart := time.Now()
	err := s.store.PutRound(ep.ID, r, fx.Published, fx.Chunks, nil)
	s.timing.add(&s.timing.store, time.Since(storeStart))
	s.timing.addRound()
	if err != nil {
		s.log.Error("store round", "round", r, "err", err)
		s.mu.Lock()
		s.end(e, "store failed")
		s.mu.Unlock()
		return
	}
	s.indexManifests(e, r, fx.Cands)
	if fx.Blame > 0 {
		// §5.3: the payloads that verify, public already, are stored;
		// the round is not acknowledged and blame walks the first bad
		// position (§8).
		s.walks().PayloadBlame(blameEp(e), r, fx.Blame-1, payloads)
		return
	}
	s.mu.Lock()
	x := e.round(r)
	stored(&fx, x)
	e.opened(r + mixDepth)
	s.releaseInput(e, r)
	s.notify()
	s.mu.Unlock()
	if e.pos == 0 && !x.void && !s.hookRun().NoList(r) {
		s.proposeList(e, r)
	}
}

// proposeList is the leader's request list for round r (§5.3 v2): the ids
// requested this round that it holds, cut to L_max round-robin across
// output positions (v3, listcut.go), sorted, with lengths; every server
// signs it.
func (s *Server) proposeList(e *sepoch, r uint32) {
	defer s.trace("proposeList", r)()
	v := e.final
	s.listingStart(e)
	defer s.listingDone(e)
	// The list carries the round's indexed manifests (§6.4 v3): known
	// once every earlier round is published here or has a final list
	// (manifests.go). No timeout of its own: the epoch's end frees it.
	var manifests [][32]byte
	if err := s.waitFor(s.ctx, func() bool {
		var done bool
		manifests, done = e.man.Taken(r)
		return done || e.ended
	}); err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
	defer cancel()
	ep := s.roundFacts(e)
	s.mu.Lock()
	pub := e.round(r).pub
	s.mu.Unlock()
	ids := pub.Requested()
	var rl wire.RoundList
	var reps [][]byte
	var err error
	for try := 0; try < 2; try++ {
		// Ids not held are left out, never a zero row.
		held, herr := s.store.Held(ids)
		if herr != nil {
			s.log.Error("request list", "round", r, "err", herr)
		}
		lens := make(map[[32]byte]uint32, len(held))
		for _, h := range held {
			lens[h.ID] = h.Length
		}
		rl = roundstep.ProposeList(ep, r, pub, manifests, lens)
		if err = s.signProposal(&rl); err != nil {
			break
		}
		if to := s.hookRun().ProposalTo(r, v.Chain); len(to) != len(v.Chain) {
			// A corrupt S_0 that leaves a signer out (riffletest).
			_, _ = s.each(ctx, to, transport.Request{Proto: ProtoRound, Type: wire.TypeProposal, Body: rl.Marshal(), Timeout: transport.BulkTimeout})
			return
		}
		reps, err = s.each(ctx, v.Chain, transport.Request{Proto: ProtoRound, Type: wire.TypeProposal, Body: rl.Marshal(), Timeout: transport.BulkTimeout})
		// A server that holds a requested id this one lacks refuses the
		// list (it omits the id): fetch what it names, propose again.
		if err == nil || !s.fetchOmitted(ctx, e, refusedOmitted(err)) {
			break
		}
	}
	if err != nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		if x := e.rounds[r]; x != nil && x.list != nil {
			return // assembled by a signer from the signatures it got (listsig.go)
		}
		s.log.Warn("request list refused", "round", r, "err", err)
		s.end(e, fmt.Sprintf("round %d: request list refused", r))
		return
	}
	if rl.Sigs, err = roundstep.ChainSigs(reps); err != nil {
		s.mu.Lock()
		s.end(e, "bad list signature")
		s.mu.Unlock()
		return
	}
	var to []peer.ID
	for _, p := range v.Chain {
		if s.hookRun().ListTo(r, p) {
			to = append(to, p)
		}
	}
	if _, err := s.each(ctx, to, transport.Request{Proto: ProtoRound, Type: wire.TypeRoundList, Body: rl.Marshal(), Timeout: transport.BulkTimeout}); err != nil {
		s.log.Warn("deliver request list", "round", r, "err", err)
	}
}

func (s *Server) onProposal(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var rl wire.RoundList
	if err := rl.Unmarshal(body, proto.GenericLimits()); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(rl.Epoch)
	if err != nil {
		return 0, nil, err
	}
	if e.final.Chain[0] != from {
		return 0, nil, errors.New("node: proposal not from the leader")
	}
	return s.takeProposal(ctx, e, &rl, from, true)
}

// takeProposal signs rl, S_0's proposal of a round, come from S_0 or
// handed on by from, a chain server that signed it (listsig.go): its
// chunks and publication are fetched from from. The signature goes back
// to from and to every chain server (spreadListSig). direct: from is S_0.
func (s *Server) takeProposal(ctx context.Context, e *sepoch, rl *wire.RoundList, from peer.ID, direct bool) (wire.Type, []byte, error) {
	if rl.Round >= e.final.Desc.Params.Rounds || len(rl.Entries) > int(e.final.Desc.Params.MaxRows) {
		return 0, nil, errors.New("node: proposal malformed")
	}
	if err := checkProposal(e, rl); err != nil {
		return 0, nil, err
	}
	// S_0 proposed to this server: it signs no note that S_0 did not
	// (listdue.go listNoteLocked), however long its checks take. A
	// proposal only handed on by a signer does not count: else S_0 and
	// one signer that hands its proposal on and withholds its signature
	// keep every honest server from noting and hold the epoch for good.
	if direct {
		s.mu.Lock()
		if x := e.rounds[rl.Round]; x != nil {
			x.proposed = true
		}
		s.mu.Unlock()
	}
	var t wire.Type
	var rep []byte
	var err error
	if rl.Void() {
		t, rep, err = s.signVoid(ctx, e, rl)
	} else {
		t, rep, err = s.signList(ctx, e, rl, from, direct)
	}
	if err == nil {
		s.spreadListSig(e, rl, rep)
		if d := s.hookRun().LeaderLate(rl.Round); d > 0 {
			time.Sleep(d) // a signer that keeps its answer from S_0 (riffletest)
			return 0, nil, errors.New("node: late")
		}
	}
	return t, rep, err
}

// signList checks and signs rl, a proposal of a published round (§5.3);
// direct as for takeProposal.
func (s *Server) signList(ctx context.Context, e *sepoch, rlp *wire.RoundList, from peer.ID, direct bool) (wire.Type, []byte, error) {
	rl := *rlp
	if d := s.hookRun().SignLate(rl.Round); d > 0 {
		time.Sleep(d) // a chain server that holds its list signature (riffletest)
	}
	// A publication the last server left this server without is
	// fetched from from, S_0 or a signer, which holds it (pubfetch.go).
	s.mu.Lock()
	s.pub.FetchFrom(pubEpoch(e), rl.Round, from)
	s.mu.Unlock()
	// Whether the round is done here is read under the lock, in the
	// condition: publish sets it concurrently.
	var x *sround
	var mans [][32]byte
	done := false
	if err := s.waitFor(ctx, func() bool {
		x = e.round(rl.Round)
		x.proposed = x.proposed || direct
		var manDone bool
		mans, manDone = e.man.Taken(rl.Round)
		done = x.pubDone && manDone
		return done || e.ended
	}); err != nil || !done {
		return 0, nil, errors.New("node: round not published here")
	}
	s.mu.Lock()
	pub := x.pub
	s.mu.Unlock()
	refuse, pairs := roundstep.CheckList(pub, mans, &rl)
	if refuse != nil {
		return 0, nil, refuse
	}
	// (v3) no censorship: every requested id held here is in, unless the
	// round-robin cut to L_max leaves it out.
	omitted, err := s.omittedHeld(s.roundFacts(e), rl.Round, pub, &rl, int(e.final.Desc.Params.MaxRows))
	if err != nil {
		return 0, nil, err
	}
	if len(omitted) > 0 {
		return 0, nil, omitError(omitted)
	}
	if pairs != nil {
		return 0, nil, pairs
	}
	// Fetch what this server lacks (chunks are public and self-verifying).
	ids := make([][32]byte, len(rl.Entries))
	for i, le := range rl.Entries {
		ids[i] = le.ID
	}
	heldList, err := s.store.Held(ids)
	if err != nil {
		return 0, nil, fmt.Errorf("node: proposal: %w", err)
	}
	held := make(map[[32]byte]uint32, len(heldList))
	for _, h := range heldList {
		held[h.ID] = h.Length
	}
	fetch, err := roundstep.ToFetch(&rl, held)
	if err != nil {
		return 0, nil, err
	}
	for _, le := range fetch {
		rep, err := transport.Call(ctx, s.h, from, transport.Request{Proto: ProtoRound, Type: wire.TypeGetChunk, Body: (&wire.Chunk{ID: le.ID}).Marshal(), Timeout: transport.BulkTimeout})
		if err != nil {
			return 0, nil, fmt.Errorf("node: fetch %x: %w", le.ID[:6], err)
		}
		c, err := roundstep.Fetched(rep, le, MaxChunkSize)
		if err != nil {
			return 0, nil, err
		}
		if err := s.store.PutChunks([]store.Chunk{{ID: c.ID, Data: c.Data}}); err != nil {
			return 0, nil, err
		}
	}
	dg := proto.ListDigest(&rl)
	sig, err := proto.Sign(s.priv, dg)
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	x.signed, x.signedState = dg, wire.ClosedPublished
	x.signedListed = window.Listed{Pairs: window.ListPoolPairs(&rl), Manifests: rl.Manifests}
	s.mu.Unlock()
	return wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
}

func (s *Server) onRoundList(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var rl wire.RoundList
	if err := rl.Unmarshal(body, proto.GenericLimits()); err != nil {
		return 0, nil, err
	}
	e, err := s.epochFor(rl.Epoch)
	if err != nil {
		return 0, nil, err
	}
	// From the leader, or handed on by a chain server with S_0's part of
	// a round ahead (relayOpening): every chain server signed it, so a
	// copy is the list itself.
	if e.final.Chain[0] != from && !proto.InChain(e.final.Chain, from) {
		return 0, nil, errors.New("node: request list not from the chain")
	}
	// The first copy only (S_0's, or one assembled here: listsig.go).
	s.mu.Lock()
	had := e.rounds[rl.Round] != nil && e.rounds[rl.Round].list != nil
	s.mu.Unlock()
	if had {
		return wire.TypeAck, ack, nil
	}
	if err := proto.CheckList(e.final, &rl); err != nil {
		return 0, nil, err
	}
	// A void round has no round record and no requests (§5.2 v3).
	if !rl.Void() {
		// §7 v3: the round's public demand, which decoys follow.
		reqs, ps := roundstep.ListRecords(&rl)
		if err := s.store.PutRequests(rl.Epoch, rl.Round, reqs); err != nil {
			return 0, nil, err
		}
		if err := s.store.PutPairs(rl.Epoch, rl.Round, ps); err != nil {
			return 0, nil, err
		}
		// §7 v3: kept as signed, for a server catching up (catchup.go).
		if err := s.store.PutList(rl.Epoch, rl.Round, body); err != nil {
			return 0, nil, err
		}
	}
	s.mu.Lock()
	first, published := takeList(&e.roundsState, &rl, body, time.Now())
	var skipped []manifests.Round
	if first {
		e.listed(&s.pool, rl.Round)
		s.openAheadLocked(e)
		s.releaseHandoverLocked(e)
		if !published {
			// A final list for a round never published here (every
			// server signs a normal list only once it has published the
			// round): its manifests are none, and the index's cursor
			// goes past it (package manifests).
			p := e.final.Desc.Params
			skipped = e.man.Add(p.Rounds, p.ChunkSize, rl.Round, nil)
		}
		s.notify()
	}
	s.mu.Unlock()
	manifests.Put(s.store, s.log, e.v.ID, skipped)
	if first {
		if rl.Void() {
			s.noteVoid(e, rl.Round, body)
			if rl.Round == e.final.Desc.Params.Rounds-1 {
				// No PIR round ends the epoch (answerRound does).
				s.mu.Lock()
				s.endQuiet(e, "complete")
				s.mu.Unlock()
			}
		} else {
			// A void round has no database: clients query none.
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.answerRound(e, rl.Round) }()
		}
		s.checkDepartures(e, rl.Round)
	}
	return wire.TypeAck, ack, nil
}

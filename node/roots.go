package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// Signed batch roots (§5.2): every server broadcasts the signed Merkle root
// of each batch it passes on to every chain server, and every server keeps
// each root it sees, from a broadcast or from the batch itself. Two
// different roots signed by one server for one (round, S) are evidence of
// equivocation: the epoch ends, and both signed roots are kept.

type rootKey struct {
	round uint32
	s     uint16
}

// noteRoot records a verified signed root; it returns false, ending the
// epoch, if a different root was signed for the same (round, S).
func (s *Server) noteRoot(e *sepoch, r *wire.Root) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noteRootLocked(e, r)
}

// noteRootLocked is noteRoot with s.mu held.
func (s *Server) noteRootLocked(e *sepoch, r *wire.Root) bool {
	if e.roots == nil {
		e.roots = map[rootKey]wire.Root{}
	}
	k := rootKey{r.Round, r.S}
	old, ok := e.roots[k]
	if !ok {
		e.roots[k] = *r
		// When the part came, for the next part's due (charges.go),
		// kept apart from the round's state, which a root must not
		// create.
		if e.rootAt == nil {
			e.rootAt = map[rootKey]time.Time{}
		}
		now := time.Now()
		e.rootAt[k] = now
		if r.S >= 2 {
			// Its server passed the round on: a relayed copy of its
			// input is no longer needed here (notesHeld).
			e.dropNoted(r.Round, int(r.S)-2)
		}
		if r.S == 1 {
			// S_0's signed part says S_0 took the round as open: it
			// opens here too, so that a last server that sends the
			// publication of r − mixDepth to some servers late cannot
			// start their dues later than S_0's (attest.go). One
			// instant for both: the part counts as sent at the opening
			// (docs/protocol.md §3), so its successor's part is due a
			// hop after it, not as a part that came before the opening
			// (partCame), a round limit later.
			_, open := e.openAt[r.Round]
			e.openedAt(r.Round, now)
			// Relayed whoever handed it here: a corrupt server
			// that hands S_0's part to one server alone, as a copy,
			// must not keep it from the others
			// (TestS0RootRelayedCopyOpensEverywhere).
			if !open && e.pos > 0 {
				s.relayOpening(e, *r)
			}
		}
		// A part that came moves the dues after it (S_0's watch for
		// the publication, pubfetch.Service.Watch).
		s.wake()
		return true
	}
	if old.Root == r.Root {
		return true
	}
	s.equivocatedLocked(e, old, *r)
	return false
}

// equivocatedLocked ends the epoch on two different roots signed for one
// (round, S), keeping both as the evidence (the first stays in roots),
// and names their signer everywhere (internal/roundblame's
// Equivocation). Call with s.mu held.
func (s *Server) equivocatedLocked(e *sepoch, a, b wire.Root) {
	e.keepEvidence(b.Round, [][]byte{a.Marshal(), b.Marshal()})
	s.end(e, fmt.Sprintf("round %d: server %d signed two batch roots", b.Round, b.S-1))
	if e.blames.NameEquivocation() {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.walks().Equivocation(blameEp(e), a, b)
		}()
	}
}

// holdAheadLocked keeps S_0's signed part of a round beyond this server's
// admission window until the window reaches it (openAheadLocked): refused
// here, a part S_0 showed to one server whose window it had moved on
// first (S_0 hands out the lists) opened its round there alone, the round
// went stale there first and that honest server was charged
// (TestS0RootRelayAheadOfWindow). One part a round of the epoch, so at
// most R of a hundred and forty bytes; a second, different one is S_0's
// equivocation. Call with s.mu held.
func (s *Server) holdAheadLocked(e *sepoch, r wire.Root) {
	if a, ok := e.aheadS0[r.Round]; ok {
		if a.Root != r.Root {
			s.equivocatedLocked(e, a, r)
		}
		return
	}
	if e.aheadS0 == nil {
		e.aheadS0 = map[uint32]wire.Root{}
	}
	e.aheadS0[r.Round] = r
}

// openAheadLocked takes each held part of S_0 that the admission window
// now reaches as if it came now: it opens its round here from this
// instant, when this server can first take the round's batches, is
// relayed as any opening is, and is handed to S_0's receiver as onRoot
// hands it. Call with s.mu held after the window moved.
func (s *Server) openAheadLocked(e *sepoch) {
	for q, a := range e.aheadS0 {
		if e.admit(q) != nil {
			continue
		}
		delete(e.aheadS0, q)
		if e.ended {
			continue
		}
		r := a
		_, had := e.roots[rootKey{q, 1}]
		if !s.noteRootLocked(e, &r) {
			continue
		}
		if e.pos == 1 {
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.watchInput(e, q) // our own input (lack.go)
			}()
		} else if !had && len(e.final.Chain) > 1 {
			// As onRoot does: S_0's receiver may never have had it
			// (TestRelayedBatch, "root withheld, hidden").
			s.forwardRoot(e, r)
		}
	}
}

// announceRoot sends a batch's signed root to every other chain server,
// the receiver of the batch too: the root tells it a batch is on its way,
// which it fetches if it does not come (lack.go). Best effort: a lost
// announcement only weakens the evidence, or leaves a lost batch to the
// publication's void (void.go).
func (s *Server) announceRoot(e *sepoch, b *wire.Batch) {
	v := e.final
	m := len(v.Chain)
	if int(b.S) >= m {
		return // the publication reaches every server anyway
	}
	// When this part was passed on: the floor of its successor's
	// (blame.Dues.From), as its root's arrival is elsewhere.
	s.mu.Lock()
	if e.sentAt == nil {
		e.sentAt = map[uint32]time.Time{}
	}
	if _, ok := e.sentAt[b.Round]; !ok {
		e.sentAt[b.Round] = time.Now()
	}
	s.mu.Unlock()
	msg := (&wire.Root{Epoch: b.Epoch, Round: b.Round, S: b.S, Root: b.Root, Sig: b.Sig}).Marshal()
	msg = s.hookRun().Root(b, msg)
	if msg == nil {
		return // a test's silent server (hookRun.Root)
	}
	for _, p := range v.Chain {
		if p == s.h.ID() || !s.hookRun().RootTo(b.Round, p, p == v.Chain[b.S]) {
			continue
		}
		s.wg.Add(1)
		go func(p peer.ID) {
			defer s.wg.Done()
			if d := s.hookRun().RootDelay(b.Round, p); d > 0 {
				select {
				case <-time.After(d):
				case <-s.ctx.Done():
				}
			}
			if _, err := transport.Call(s.ctx, s.h, p, transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: msg, Timeout: transport.ShortTimeout}); err != nil {
				s.log.Debug("announce root", "round", b.Round, "err", err)
			}
		}(p)
	}
}

func (s *Server) onRoot(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var r wire.Root
	if err := r.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	return s.takeRoot(from, r, nil)
}

// takeRoot takes a copy of a signed part's root handed here by from, with
// the relay signatures it carries (rootrelay.go; none from its signer, or
// a plain hand-on).
func (s *Server) takeRoot(from peer.ID, r wire.Root, relays []wire.RelaySig) (wire.Type, []byte, error) {
	e, err := s.epochFor(r.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	// From its signer, or handed on by another chain server to its
	// receiver (forwardRoot) or, S_0's, to every server (relayOpening),
	// or relayed signed (rootrelay.go): the signature is the signer's
	// either way.
	if r.S < 1 || int(r.S) > len(v.Chain) || r.Round >= v.Desc.Params.Rounds ||
		(v.Chain[r.S-1] != from && !proto.InChain(v.Chain, from)) || len(relays) > len(v.Chain) {
		return 0, nil, errors.New("node: root announced by the wrong server")
	}
	// A copy of a root held here already needs no second check of its
	// signature; a different one does (it may be the signer's second).
	// One this server relayed already changes nothing (relayTaken).
	s.mu.Lock()
	k := rootKey{r.Round, r.S}
	if e.relayTaken(k, &r) {
		s.mu.Unlock()
		return wire.TypeAck, ack, nil
	}
	old, had := e.roots[k]
	if a, ok := e.aheadS0[r.Round]; ok && !had && r.S == 1 {
		old, had = a, true
	}
	s.mu.Unlock()
	if !had || old.Root != r.Root || old.Sig != r.Sig {
		b := wire.Batch{Epoch: r.Epoch, Round: r.Round, S: r.S, Root: r.Root}
		if err := proto.VerifyPeerSig(v.Chain[r.S-1], batchDigest(&b), r.Sig); err != nil {
			return 0, nil, err
		}
	}
	if err := checkRelays(v.Chain, &r, relays); err != nil {
		return 0, nil, err
	}
	// Nothing is kept of a round too far ahead, or over (principle 3),
	// but S_0's own part of a round ahead, held within its budget
	// (holdAheadLocked).
	s.mu.Lock()
	err = e.admit(r.Round)
	if err != nil && r.S == 1 && r.Round >= e.pruned {
		s.holdAheadLocked(e, r)
		s.mu.Unlock()
		return wire.TypeAck, ack, nil
	}
	s.mu.Unlock()
	if err != nil {
		return 0, nil, err
	}
	noted := s.noteRoot(e, &r)
	if noted && int(r.S) == e.pos {
		// Our own input: fetch it if it does not come (lack.go).
		s.watchInput(e, r.Round)
	}
	if noted {
		// Relayed, every part one honest server takes in time the
		// others take in time too, so that they attest alike: a signer
		// that showed its part to some servers only, or timed it to
		// reach one at the edge of its due, split the honest servers'
		// attestations, and with a corrupt minority withholding theirs
		// the round's charge stayed on nobody for good
		// (TestCorruptPairVoidRelayed, TestEdgeSplitCharged).
		s.mu.Lock()
		var outs []relayOut
		if !e.ended && e.roots[k] == r {
			outs = s.takeCopyLocked(e, r, relays, time.Now())
		}
		s.mu.Unlock()
		s.sendRelays(e, outs)
	}
	return wire.TypeAck, ack, nil
}

// relayOpening hands S_0's signed part of round r, which opened r here, to
// every other chain server but S_0, where it opens r too: a corrupt S_0
// that showed its part of a round ahead to one server alone opened the
// round there only, the round went stale there first (its dues count from
// the opening), and the abort of its missing publication, which the
// others, where the round never opened, attested nothing of, charged that
// honest server (TestS0RootAheadFramesNoOne). Relayed, the part opens the
// round at every honest server within a message's delay, and each
// attests what it lacked. Once a round at most, m − 2 messages of a
// hundred and forty bytes; an honest S_0's part rarely opens a round (it
// mixes r once r − 2 is published, which opens r everywhere). Call with
// s.mu held.
func (s *Server) relayOpening(e *sepoch, r wire.Root) {
	if s.h == nil {
		return // a bare server of the dues' unit tests: no network
	}
	msg := r.Marshal()
	// With it the newest final list here, which moved this server's
	// admission window to r: S_0 hands out the lists, and a server it
	// gave a list late would refuse the round's notes and parts as too
	// far ahead (TestS0RootRelayAheadOfWindow).
	var list []byte
	if e.listHigh > 0 {
		if x := e.rounds[e.listHigh-1]; x != nil {
			list = x.listBytes
		}
	}
	for _, p := range e.final.Chain[1:] {
		if p == s.h.ID() {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if list != nil {
				if _, err := transport.Call(s.ctx, s.h, p, transport.Request{Proto: ProtoRound, Type: wire.TypeRoundList, Body: list, Timeout: transport.BulkTimeout}); err != nil {
					s.log.Debug("relay opening's list", "round", r.Round, "to", p.ShortString(), "err", err)
				}
			}
			if _, err := transport.Call(s.ctx, s.h, p, transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: msg, Timeout: transport.ShortTimeout}); err != nil {
				s.log.Debug("relay opening", "round", r.Round, "to", p.ShortString(), "err", err)
			}
		}()
	}
}

// forwardRoot hands a signed root of a middle batch to the batch's
// receiver if the receiver has not passed the round on here fetchGrace
// after the root came: a signer that keeps both its batch and its root
// from its receiver alone, announcing the root to the others, left the
// receiver nothing to start its wait and its relay notes from, and the
// round's void was charged to the receiver, its part missing everywhere
// (TestRelayedBatch, "root withheld"). At most m − 2 messages of a
// hundred and forty bytes a batch, and only when the receiver is late.
func (s *Server) forwardRoot(e *sepoch, r wire.Root) {
	v := e.final
	to := v.Chain[r.S]
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.ctx, fetchGrace(e))
		_ = s.waitFor(ctx, func() bool {
			x := e.rounds[r.Round]
			return e.ended || e.passedOn(r.Round, int(r.S)-1) || (x != nil && x.void)
		})
		cancel()
		s.mu.Lock()
		x := e.rounds[r.Round]
		skip := e.ended || e.passedOn(r.Round, int(r.S)-1) || (x != nil && x.void) || e.admit(r.Round) != nil
		s.mu.Unlock()
		if skip || s.ctx.Err() != nil {
			return
		}
		if _, err := transport.Call(s.ctx, s.h, to, transport.Request{Proto: ProtoRound, Type: wire.TypeRoot, Body: r.Marshal(), Timeout: transport.ShortTimeout}); err != nil {
			s.log.Debug("forward root", "round", r.Round, "to", to.ShortString(), "err", err)
		}
	}()
}

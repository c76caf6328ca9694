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
	// Keep both signed roots as the evidence (the first stays in roots),
	// and name their signer everywhere (roundblame_after.go).
	e.keepEvidence(r.Round, [][]byte{old.Marshal(), r.Marshal()})
	s.end(e, fmt.Sprintf("round %d: server %d signed two batch roots", r.Round, r.S-1))
	if !e.equivNamed {
		e.equivNamed = true
		a, b := old, *r
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.equivocation(e, a, b)
		}()
	}
	return false
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
	e, err := s.epochFor(r.Epoch)
	if err != nil {
		return 0, nil, err
	}
	v := e.final
	// From its signer, or handed on by another chain server to its
	// receiver (forwardRoot) or, S_0's, to every server (relayOpening):
	// the signature is the signer's either way.
	if r.S < 1 || int(r.S) > len(v.Chain) || r.Round >= v.Desc.Params.Rounds ||
		(v.Chain[r.S-1] != from && ((int(r.S) != e.pos && r.S != 1) || !proto.InChain(v.Chain, from))) {
		return 0, nil, errors.New("node: root announced by the wrong server")
	}
	b := wire.Batch{Epoch: r.Epoch, Round: r.Round, S: r.S, Root: r.Root}
	if err := proto.VerifyPeerSig(v.Chain[r.S-1], batchDigest(&b), r.Sig); err != nil {
		return 0, nil, err
	}
	// Nothing is kept of a round too far ahead, or over (principle 3).
	s.mu.Lock()
	err = e.admit(r.Round)
	_, had := e.roots[rootKey{r.Round, r.S}]
	s.mu.Unlock()
	if err != nil {
		return 0, nil, err
	}
	if s.noteRoot(e, &r) && int(r.S) == e.pos {
		// Our own input: fetch it if it does not come (lack.go).
		s.watchInput(e, r.Round)
	} else if !had && int(r.S) < len(v.Chain) && int(r.S) != e.pos && from != v.Chain[r.S] {
		s.forwardRoot(e, r)
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
	for _, p := range e.final.Chain[1:] {
		if p == s.h.ID() {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
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

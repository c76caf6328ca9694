package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A dead slot (docs/protocol.md §8 "A dead slot"): a round blame that
// names a client voids its round, as before, but no longer ends the epoch.
// The named slot is dead for the rest of the epoch instead: its route
// through the chain is revealed forward, S_0 first, each server proving
// against its setup shuffle where its permutation sends the dead position
// (a DropStep, with the same route proof as a walk step), and every
// server from then on treats the dead position at its input as absent
// (mix.OpenLayerSkip: a zero filler that the permutation carries to the
// dead position of the next server's input). S_0 mixes a filler in the
// slot without waiting for its client, no server checks the slot's
// client signature, the slot's primary takes no more onions for it, and a
// payload at the dead output that fails its pseudonym signature (the
// filler, or the culprit's last onions) is absent from the publication.
// The culprit's further onions, or its silence, void nothing any more.
//
// Only the named slot's route is revealed, and only after the walk named
// it: a server reveals its step only once it has itself concluded the
// walk with that slot and checked every earlier step of the reveal. A
// step whose route proof does not verify names its server, and the epoch
// ends (a lying server cannot move the dead position onto an honest
// client's route: the proof is against its published shuffle); a step
// that cannot be had ends the epoch naming nobody. A later blame in the
// same epoch works the same once the one before has settled (several dead
// slots, each round void); a blame that starts while another runs ends
// the epoch, as every blame did before.

// isDead reports whether a slot is dead. Call with s.mu held.
func (e *sepoch) isDead(slot uint32) bool { return e.blames.IsDead(slot) }

// awaitSettled waits until no round blame of e is unsettled and returns
// the dead positions at server t's input; false if the epoch ended.
func (s *Server) awaitSettled(e *sepoch, t int) ([]int, bool) {
	var dead []int
	ended := false
	_ = s.waitFor(s.ctx, func() bool {
		if e.ended {
			ended = true
			return true
		}
		if e.blames.Pending() {
			return false
		}
		dead = e.blames.DeadIn(t)
		return true
	})
	return dead, !ended && s.ctx.Err() == nil
}

// blameVoid has every server sign the blamed round void, as a void that
// names nobody is (void.go), except that it is not counted against the
// epoch's one such void and charges nobody: the culprit is named. S_0 only,
// once its own reveal has settled; the epoch ends if it fails.
func (s *Server) blameVoid(e *sepoch, r uint32) {
	v := e.final
	rl := wire.RoundList{Epoch: v.ID, Round: r, Flags: wire.ListVoid | wire.ListBlame}
	ctx, cancel := context.WithTimeout(s.ctx, transport.BulkTimeout)
	defer cancel()
	err := s.signProposal(&rl)
	var reps [][]byte
	if err == nil {
		reps, err = s.each(ctx, v.Chain, transport.Request{Proto: ProtoRound, Type: wire.TypeProposal, Body: rl.Marshal(), Timeout: transport.BulkTimeout})
	}
	if err == nil {
		rl.Sigs = nil
		for i, rep := range reps {
			var sg wire.Sig
			if err = sg.Unmarshal(rep); err == nil && int(sg.Index) != i {
				err = errors.New("signature of another server")
			}
			if err != nil {
				break
			}
			rl.Sigs = append(rl.Sigs, sg.Sig)
		}
	}
	if err != nil {
		s.log.Warn("void list of a blamed round refused", "round", r, "err", err)
		s.mu.Lock()
		s.end(e, fmt.Sprintf("round %d: the blamed round was not signed void", r))
		s.mu.Unlock()
		return
	}
	if _, err := s.each(ctx, v.Chain, transport.Request{Proto: ProtoRound, Type: wire.TypeRoundList, Body: rl.Marshal(), Timeout: transport.BulkTimeout}); err != nil {
		s.log.Warn("deliver void list", "round", r, "err", err)
	}
}

// signBlameVoid signs a void proposal of the round under blame here, once
// this server's own reveal has settled with the slot dropped. Handled is
// false for any other round (the ordinary void rules apply).
func (s *Server) signBlameVoid(ctx context.Context, e *sepoch, rl *wire.RoundList) (handled bool, t wire.Type, body []byte, err error) {
	if !rl.Blamed() {
		return false, 0, nil, nil
	}
	s.mu.Lock()
	bl := e.blames.Of(rl.Round)
	s.mu.Unlock()
	if bl == nil || bl.Double {
		// Signed, it would waive a void whose cause is not public.
		return true, 0, nil, errors.New("node: a blame void of a round not blamed here")
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(len(e.final.Chain)+1)*s.cfg.Timing.BlameStepTimeout)
	defer cancel()
	_ = s.waitFor(wctx, func() bool { return e.ended || bl.Settled })
	s.mu.Lock()
	if e.ended || !bl.Dropped {
		s.mu.Unlock()
		return true, 0, nil, errors.New("node: the blamed round's slot was not dropped here")
	}
	if x := e.round(rl.Round); !x.void {
		e.voided(x, rl.Round)
		s.log.Warn("round void (a client was named), epoch goes on", "round", rl.Round)
	}
	s.mu.Unlock()
	sig, err := proto.Sign(s.priv, proto.ListDigest(rl))
	if err != nil {
		return true, 0, nil, err
	}
	return true, wire.TypeSig, (&wire.Sig{Index: uint16(e.pos), Sig: sig}).Marshal(), nil
}

// liveCount counts the slots among mine that are not dead and, of those,
// how many have a submission in x. Call with s.mu held.
func (e *sepoch) liveCount(x *sround, mine []uint32) (live, in int) {
	for _, sl := range mine {
		if e.isDead(sl) {
			continue
		}
		live++
		if _, ok := x.subs[sl]; ok {
			in++
		}
	}
	return live, in
}

// forwardPending forwards, once a slot died, the rounds whose live
// submissions are all in at this primary (the dead slot's no longer
// awaited). Call with s.mu held.
func (s *Server) forwardPending(e *sepoch) {
	if e.pos == 0 || e.ended {
		return
	}
	for r := range e.rounds {
		if r >= e.pruned {
			s.forwardIfReady(e, r)
		}
	}
}

// forwardIfReady forwards this primary's clients' onions of round r once
// every live one is in. Call with s.mu held.
func (s *Server) forwardIfReady(e *sepoch, r uint32) {
	x := e.round(r)
	mine := e.clientsOf(e.pos)
	if x.forwarded {
		return
	}
	if live, in := e.liveCount(x, mine); in < live {
		return
	}
	x.forwarded = true
	batch := wire.SubmitBatch{Epoch: e.final.ID, Round: r}
	for _, sl := range mine {
		if sub, ok := x.subs[sl]; ok && !e.isDead(sl) {
			batch.Subs = append(batch.Subs, sub)
		}
	}
	if len(batch.Subs) == 0 {
		return
	}
	f := s.signForwardRootLocked(e, r) // forward.go
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		s.forwardSubs(e, &batch)
	}()
	go func() {
		defer s.wg.Done()
		if f != nil {
			s.sendForwardRoot(e, f)
		}
	}()
}

package node

import "github.com/riffle-net/riffle/internal/wire"

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
//
// The reveal, the blamed round's void and the epoch's dead slots are
// package internal/roundblame's (Service.Settle, SignVoid; Blames); here
// the dead positions are read for the mix path and the primary's intake.

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

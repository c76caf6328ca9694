package node

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
)

// Handing over on leaving (docs/protocol.md §5.4 v3). A client that must
// leave mid-epoch (a shutdown, an override) seals onions for the rounds
// after the last one it sealed, at most handoverMax of them and never
// beyond the epoch, each carrying what the client would have sent in its
// round (the next queued chunk, its jobs' requests, decoys: fillPayload),
// and hands them to its primary, which submits each in its round as if the
// client had sent it. The epoch then ends, if at all, only when those run
// out, so that a client leaving does not end the epoch within W rounds of
// its last upload or download: mostly crashes end epochs early.

// onHandover takes one cover onion a leaving client of this primary hands
// over for a later round: checked as a submission (slot served here,
// size, the slot's registration key over epoch, round, slot and onion)
// before anything is kept, at most handoverMax per slot, and submitted
// when its round is admitted (releaseHandoverLocked).
func (s *Server) onHandover(body []byte) (wire.Type, []byte, error) {
	sub, e, _, err := s.checkSubmission(body, "handed-over onion")
	if err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.ended {
		return 0, nil, fmt.Errorf("node: epoch ended: %s", e.reason)
	}
	if sub.Round < e.pruned {
		return 0, nil, fmt.Errorf("node: round %d is over", sub.Round)
	}
	if x := e.rounds[sub.Round]; x != nil {
		if old, ok := x.subs[sub.Slot]; ok {
			if bytes.Equal(old.Onion, sub.Onion) {
				return wire.TypeAck, ack, nil
			}
			return 0, nil, fmt.Errorf("node: round %d already holds this slot's onion", sub.Round)
		}
	}
	if e.handover == nil {
		e.handover = map[uint32]map[uint32]wire.Submit{}
	}
	held := e.handover[sub.Slot]
	if held == nil {
		held = map[uint32]wire.Submit{}
		e.handover[sub.Slot] = held
	}
	if _, ok := held[sub.Round]; !ok && len(held) >= handoverMax {
		return 0, nil, fmt.Errorf("node: more than %d onions handed over for one slot", handoverMax)
	}
	if e.departed == nil {
		e.departed = map[uint32]bool{}
	}
	e.departed[sub.Slot] = true
	s.notify() // a round may wait for this slot's queries
	// A copy: the frame goes back to its pool, and the onion may wait
	// for its round a while.
	sub.Onion = bytes.Clone(sub.Onion)
	held[sub.Round] = sub
	s.releaseHandoverLocked(e)
	return wire.TypeAck, ack, nil
}

// releaseHandoverLocked submits every handed-over onion whose round is
// now admitted, in round order. Called when one comes and whenever a
// round's list is final (the admitted window moves). Call with s.mu held.
func (s *Server) releaseHandoverLocked(e *sepoch) {
	for slot, held := range e.handover {
		rounds := make([]uint32, 0, len(held))
		for r := range held {
			rounds = append(rounds, r)
		}
		sort.Slice(rounds, func(i, j int) bool { return rounds[i] < rounds[j] })
		for _, r := range rounds {
			if e.ended {
				return
			}
			if r < e.pruned {
				delete(held, r) // its round went by (the epoch ends anyway)
				continue
			}
			if e.admit(r) != nil {
				break
			}
			sub := held[r]
			delete(held, r)
			if _, _, err := s.takeSubmitLocked(e, sub, nil, mix.SubmissionDigest(sub.Onion)); err != nil {
				s.log.Debug("handed-over onion not taken", "round", r, "err", err)
			}
		}
		if len(held) == 0 {
			delete(e.handover, slot)
		}
	}
}

// queriesDue counts the slots among mine whose PIR queries a round
// waits for: all but those whose client handed over and left. Call with
// s.mu held.
func (e *sepoch) queriesDue(mine []uint32) int {
	n := 0
	for _, sl := range mine {
		if !e.departed[sl] && !e.isDead(sl) {
			n++
		}
	}
	return n
}

// handedOver reports whether a handed-over onion waits for (slot, r).
// Call with s.mu held.
func (e *sepoch) handedOver(slot, r uint32) bool {
	_, ok := e.handover[slot][r]
	return ok
}

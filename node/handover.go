package node

import (
	"bytes"
	"fmt"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/proto"
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
func (in *submissions) onHandover(body []byte) (wire.Type, []byte, error) {
	sub, e, _, err := in.checkSubmission(body, "handed-over onion")
	if err != nil {
		return 0, nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
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
	if err := e.handover.Hold(sub, proto.HandoverMax); err != nil {
		return 0, nil, err
	}
	in.host.notify() // a round may wait for this slot's queries
	in.releaseHandoverLocked(e)
	return wire.TypeAck, ack, nil
}

// releaseHandoverLocked submits every handed-over onion whose round is
// now admitted, in round order. Called when one comes and whenever a
// round's list is final (the admitted window moves). Call with s.mu held.
func (in *submissions) releaseHandoverLocked(e *sepoch) {
	if e.ended {
		return
	}
	due := e.handover.Due(e.pruned, func(r uint32) bool { return e.admit(r) == nil })
	for _, sub := range due {
		if e.ended {
			return
		}
		if _, _, err := in.takeSubmitLocked(e, sub, nil, mix.SubmissionDigest(sub.Onion)); err != nil {
			in.log.Debug("handed-over onion not taken", "round", sub.Round, "err", err)
		}
	}
}

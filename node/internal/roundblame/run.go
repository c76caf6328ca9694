package roundblame

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
)

// A blame's run at one server: started (an accusation taken, a bad
// payload found, a second onion), walked, its culprit named, and settled:
// a client named here has its slot dropped and the round void, and the
// epoch goes on; anything else ends the epoch.

var ack = []byte{}

// OnAccuse takes an accusation from its accuser: checked for its sender
// and signature, it holds this server's secrets and starts the walk here.
func (s *Service) OnAccuse(from peer.ID, body []byte) (wire.Type, []byte, error) {
	var a wire.Accuse
	ep := s.h.FinalEpoch(body)
	if ep == nil {
		return 0, nil, errors.New("node: accusation of an unknown epoch")
	}
	if err := a.Unmarshal(body, ep.EntrySize(0)); err != nil {
		return 0, nil, err
	}
	v := ep.V
	if int(a.S) >= len(v.Chain) || v.Chain[a.S] != from || a.Round >= v.Desc.Params.Rounds {
		return 0, nil, errors.New("node: accusation not from its accuser")
	}
	if err := proto.VerifyPeerSig(from, blame.AccuseDigest(&a), a.Sig); err != nil {
		return 0, nil, err
	}
	var bl *Blame
	s.h.Locked(func() {
		if ep.Blames.Busy() || !s.h.Acquire(ep) {
			return // one blame per epoch
		}
		bl = NewAccused(a.Round, &a)
		ep.Blames.Start(bl)
		s.h.Notify()
	})
	if bl == nil {
		return wire.TypeAck, ack, nil
	}
	s.h.Go(func() { s.Run(ep, bl, false) })
	return wire.TypeAck, ack, nil
}

// PayloadBlame starts the walk of a bad payload at output q of round r
// (§5.3, §8): every server found it in S_{m-1}'s signed batch, so each
// starts on its own.
func (s *Service) PayloadBlame(ep *Ep, r uint32, q int, payloads [][]byte) {
	var bl *Blame
	s.h.Locked(func() {
		if q >= len(payloads) || ep.Blames.Busy() || !s.h.Acquire(ep) {
			s.h.End(ep, fmt.Sprintf("round %d: bad pseudonym signature", r))
			return
		}
		m := len(ep.V.Chain)
		bl = NewPayload(r, m, q, append([]byte(nil), payloads[q]...))
		ep.Blames.Start(bl)
		s.h.Notify()
	})
	if bl == nil {
		return
	}
	s.Log.Warn("round void: bad pseudonym signature; blame starts", "round", r)
	s.Run(ep, bl, false)
}

// DropDouble kills the slot of a client that signed two onions for one
// round (§5.1, DoubleSubmit): no walk, the evidence names it; the forward
// reveal runs as after a walk. The round is not void: the slot's first
// onion, or the filler, stands in it. Without the server's lock.
func (s *Service) DropDouble(ep *Ep, d wire.DoubleSubmit) {
	var bl *Blame
	s.h.Locked(func() {
		if s.h.Ended(ep) || ep.Blames.IsDead(d.Slot) {
			return
		}
		if ep.Blames.Busy() || !s.h.Acquire(ep) {
			s.h.End(ep, "two onions signed for one slot")
			return
		}
		bl = NewDouble(d.Round)
		ep.Blames.Start(bl)
		s.h.Notify()
	})
	if bl == nil {
		return
	}
	s.Settle(ep, bl, &Culprit{Server: -1, Slot: int(d.Slot)}, true)
	s.h.Locked(func() { s.h.Release(ep) })
}

// Run walks bl, names its culprit and settles it (abort: whether its end
// tells the others), then gives back the epoch's secrets its start took.
func (s *Service) Run(ep *Ep, bl *Blame, abort bool) {
	c := s.Walk(ep, bl)
	s.Conclude(ep, bl, c)
	s.Settle(ep, bl, c, abort)
	s.h.Locked(func() { s.h.Release(ep) })
}

// Conclude acts on a walk's result: log, record, exclusion.
func (s *Service) Conclude(ep *Ep, bl *Blame, c *Culprit) {
	v := ep.V
	if c == nil {
		s.Log.Warn("round blame: the walk did not finish; nobody is named", "epoch", fmt.Sprintf("%x", v.ID[:6]), "round", bl.Round)
		return
	}
	s.h.Name(ep, bl.Round, c, bl.Evidence())
}

// Settle follows a walk's result at this server: a client named here
// has its slot dropped and the round void, and the epoch goes on;
// anything else ends the epoch as before (abort: whether to tell the
// others). Call without the server's lock, while holding the epoch's
// secrets.
func (s *Service) Settle(ep *Ep, bl *Blame, c *Culprit, abort bool) {
	if c != nil && c.Server < 0 {
		s.h.Locked(func() {
			bl.SlotKnown, bl.Slot = true, c.Slot
			s.h.Notify()
		})
		if s.dropSlot(ep, bl) {
			s.h.Locked(func() {
				bl.Settled, bl.Dropped = true, true
				s.h.ForwardPending(ep)
				s.h.Notify()
			})
			if ep.Pos == 0 && !bl.Double {
				s.blameVoid(ep, bl.Round)
			}
			return
		}
	}
	s.h.Locked(func() {
		bl.Settled = true
		if abort {
			s.h.End(ep, "round blame done")
		} else {
			s.h.EndQuiet(ep, "round blame done")
		}
		s.h.Notify()
	})
}

// dropSlot runs the forward reveal of the slot the walk named and records
// its route; false if it did not finish (a server named, or a step not
// had), which ends the epoch.
func (s *Service) dropSlot(ep *Ep, bl *Blame) bool {
	m := len(ep.V.Chain)
	// The steps are checked against the setup's shuffles (a second
	// onion can be named before this server has verified the setup).
	if !s.h.AwaitSetup(ep) {
		return false
	}
	ctx, cancel := context.WithTimeout(s.Ctx, time.Duration(m)*s.StepTimeout)
	defer cancel()
	pos := make([]int, m+1)
	pos[0] = bl.Slot
	var evidence [][]byte
	for t := 0; t < m; t++ {
		res := s.DropOf(ctx, ep, bl, t)
		if res.St != nil {
			evidence = append(evidence, res.St.Marshal())
		}
		if res.Named != nil {
			s.h.Name(ep, bl.Round, res.Named, evidence)
			return false
		}
		if res.Err != nil {
			s.Log.Warn("dead slot: route reveal stopped, nobody named", "round", bl.Round, "position", t, "err", res.Err)
			return false
		}
		pos[t+1] = int(res.St.Out)
	}
	ok := false
	s.h.Locked(func() {
		if s.h.Ended(ep) {
			return
		}
		ep.Blames.dead = append(ep.Blames.dead, deadRoute{slot: bl.Slot, pos: pos})
		// The slot is the culprit's own; no honest client is tied to it.
		s.Log.Warn("round void, epoch goes on: the named client's slot is dead for the rest of the epoch", "round", bl.Round, "slot", bl.Slot)
		ok = true
	})
	return ok
}

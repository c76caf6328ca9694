package roundblame

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// A dead slot (docs/protocol.md §8 "A dead slot"): the named slot's route
// is revealed forward, S_0 first, each server proving against its setup
// shuffle where its permutation sends the dead position (a DropStep). A
// server reveals its step only once it has itself concluded the walk with
// that slot and checked every earlier step of the reveal.

// The route proof of a drop step is a DLEQ proof of fixed size.
var _ [wire.DropRouteSize - mix.DLEQProofSize]struct{}
var _ [mix.DLEQProofSize - wire.DropRouteSize]struct{}

// DropOf returns server t's checked drop step, computed once per blame.
func (s *Service) DropOf(ctx context.Context, ep *Ep, bl *Blame, t int) DropResult {
	bl.mu.Lock()
	if bl.dcells == nil {
		bl.dcells = map[int]*dropCell{}
	}
	c, ok := bl.dcells[t]
	if !ok {
		c = &dropCell{done: make(chan struct{})}
		bl.dcells[t] = c
	}
	bl.mu.Unlock()
	if ok {
		select {
		case <-c.done:
			return c.res
		case <-ctx.Done():
			return DropResult{Err: ctx.Err()}
		}
	}
	cctx, cancel := context.WithTimeout(s.Ctx, time.Duration(t+1)*s.StepTimeout)
	c.res = s.computeDrop(cctx, ep, bl, t)
	cancel()
	close(c.done)
	return c.res
}

func (s *Service) computeDrop(ctx context.Context, ep *Ep, bl *Blame, t int) DropResult {
	v := ep.V
	if t < 0 || t >= len(v.Chain) {
		return DropResult{Err: fmt.Errorf("server %d is not on the chain", t)}
	}
	var in int
	var known bool
	s.h.Locked(func() { in, known = bl.Slot, bl.SlotKnown })
	if !known {
		return DropResult{Err: errors.New("no client named here")}
	}
	if t > 0 {
		prev := s.DropOf(ctx, ep, bl, t-1)
		if prev.Named != nil || prev.Err != nil {
			return DropResult{Err: errors.New("the reveal stopped at an earlier server")}
		}
		in = int(prev.St.Out)
	}
	var st *wire.DropStep
	if t == ep.Pos {
		var err error
		if st, err = s.ownDropStep(ep, bl, in); err != nil {
			return DropResult{Err: err}
		}
	} else {
		req := wire.DropReq{Epoch: v.ID, Round: bl.Round, T: uint16(t), In: uint32(in)}
		rep, err := s.h.Call(ctx, v.Chain[t], transport.Request{Proto: transport.ProtoEpoch, Type: wire.TypeDropReq, Body: req.Marshal(), Timeout: s.StepTimeout, Max: wire.DropStepSize})
		if err != nil {
			return DropResult{Err: fmt.Errorf("drop step of server %d: %w", t, err)}
		}
		st = &wire.DropStep{}
		if err := st.Unmarshal(rep); err != nil {
			return DropResult{Named: ServerCulprit(t, "its drop step of round %d is malformed: %v", bl.Round, err)}
		}
	}
	if t == ep.Pos && s.hooked() && s.Hooks.Liar() {
		return DropResult{St: st} // a liar takes its own step as it is
	}
	if c := CheckDrop(ep, s.h.Setup(ep), bl.Round, t, in, st); c != nil {
		return DropResult{St: st, Named: c}
	}
	return DropResult{St: st}
}

// ownDropStep is this server's drop step at input position in: where its
// permutation sends it, with the route proof at that output.
func (s *Service) ownDropStep(ep *Ep, bl *Blame, in int) (*wire.DropStep, error) {
	v := ep.V
	id := mix.EpochID(v.ID)
	t := ep.Pos
	x := s.h.Secrets(ep)
	sec, fwd := x.Sec, x.Forward
	if sec == nil || in < 0 || in >= len(fwd) {
		return nil, errors.New("node: drop step: secrets gone or position out of range")
	}
	out := fwd[in]
	su := s.h.Setup(ep)
	got, proof, err := sec.ProveRoute(id, v.ServerKeys, su.Inputs[t], su.Steps[t], out, s.Rand)
	if err != nil {
		return nil, fmt.Errorf("node: drop step: %w", err)
	}
	if got != in || len(proof) != wire.DropRouteSize {
		return nil, errors.New("node: drop step: the route proof does not match the permutation")
	}
	st := &wire.DropStep{Epoch: v.ID, Round: bl.Round, T: uint16(t), In: uint32(in), Out: uint32(out)}
	copy(st.Route[:], proof)
	if s.hooked() && s.Hooks.LieDrop(bl.Round) {
		// A lying server: another output position, under the proof of
		// the true one.
		st.Out = uint32((out + 1) % len(fwd))
	}
	if st.Sig, err = proto.Sign(s.Priv, blame.DropStepDigest(st)); err != nil {
		return nil, err
	}
	return st, nil
}

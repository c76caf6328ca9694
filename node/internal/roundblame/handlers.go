package roundblame

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
)

// The answers to the chain's asks for this server's steps.

// OnStepReq answers a walk request for this server's step: only once this
// server has itself checked every step between the evidence and itself.
func (s *Service) OnStepReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.BlameReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	ep, err := s.h.StepEpoch(req.Epoch, from, req.T, "blame")
	if err != nil {
		return 0, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, s.StepWait)
	var bl *Blame
	// Wait for this round's own blame: the accusation may reach this
	// server after the request, and an earlier blame of the epoch (a
	// dead slot's) is not this one.
	_ = s.h.WaitFor(wctx, func() bool { bl = ep.Blames.Of(req.Round); return bl != nil || s.h.Ended(ep) })
	cancel()
	if bl == nil {
		return 0, nil, errors.New("node: no round blame of this round here")
	}
	sctx, cancel := context.WithTimeout(ctx, time.Duration(bl.start+1)*s.StepTimeout)
	defer cancel()
	res := s.StepOf(sctx, ep, bl, ep.Pos)
	if res.St == nil {
		return 0, nil, errors.New("node: the walk does not reach this server")
	}
	if int(res.St.Out) != int(req.Out) {
		return 0, nil, fmt.Errorf("node: step asked at output %d, the walk reaches %d here", req.Out, res.St.Out)
	}
	return wire.TypeBlameStep, res.St.Marshal(), nil
}

// OnDropReq answers a drop step request: only once this server's own walk
// named the slot the route starts at, and it has checked every earlier
// step of the reveal itself.
func (s *Service) OnDropReq(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.DropReq
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	ep, err := s.h.StepEpoch(req.Epoch, from, req.T, "drop")
	if err != nil {
		return 0, nil, err
	}
	m := len(ep.V.Chain)
	wctx, cancel := context.WithTimeout(ctx, time.Duration(m+1)*s.StepTimeout)
	defer cancel()
	var bl *Blame
	_ = s.h.WaitFor(wctx, func() bool {
		bl = ep.Blames.Of(req.Round)
		return s.h.Ended(ep) || (bl != nil && (bl.SlotKnown || bl.Settled))
	})
	var ok bool
	s.h.Locked(func() { ok = bl != nil && bl.SlotKnown && !s.h.Ended(ep) })
	if !ok {
		return 0, nil, errors.New("node: no client named here for this round")
	}
	if !s.h.AwaitSetup(ep) {
		return 0, nil, errors.New("node: setup not verified here")
	}
	res := s.DropOf(wctx, ep, bl, ep.Pos)
	if res.St == nil {
		return 0, nil, errors.New("node: the reveal does not reach this server")
	}
	if int(res.St.In) != int(req.In) {
		return 0, nil, fmt.Errorf("node: drop step asked at input %d, the route reaches %d here", req.In, res.St.In)
	}
	return wire.TypeDropStep, res.St.Marshal(), nil
}

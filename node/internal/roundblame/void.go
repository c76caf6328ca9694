package roundblame

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/transport"
)

// The blamed round's void (§8 "A dead slot"): signed by every server as a
// void that names nobody is, except that it is not counted against the
// epoch's one such void and charges nobody: the culprit is named.

// blameVoid has every server sign the blamed round void. S_0 only, once
// its own reveal has settled; the epoch ends if it fails.
func (s *Service) blameVoid(ep *Ep, r uint32) {
	v := ep.V
	rl := wire.RoundList{Epoch: v.ID, Round: r, Flags: wire.ListVoid | wire.ListBlame}
	ctx, cancel := context.WithTimeout(s.Ctx, transport.BulkTimeout)
	defer cancel()
	err := s.h.SignProposal(&rl)
	var reps [][]byte
	if err == nil {
		reps, err = s.h.Each(ctx, v.Chain, transport.Request{Proto: transport.ProtoRound, Type: wire.TypeProposal, Body: rl.Marshal(), Timeout: transport.BulkTimeout})
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
		s.Log.Warn("void list of a blamed round refused", "round", r, "err", err)
		s.h.Locked(func() { s.h.End(ep, fmt.Sprintf("round %d: the blamed round was not signed void", r)) })
		return
	}
	if _, err := s.h.Each(ctx, v.Chain, transport.Request{Proto: transport.ProtoRound, Type: wire.TypeRoundList, Body: rl.Marshal(), Timeout: transport.BulkTimeout}); err != nil {
		s.Log.Warn("deliver void list", "round", r, "err", err)
	}
}

// SignVoid signs a void proposal of the round under blame here, once
// this server's own reveal has settled with the slot dropped. Handled is
// false for any other round (the ordinary void rules apply).
func (s *Service) SignVoid(ctx context.Context, ep *Ep, rl *wire.RoundList) (handled bool, t wire.Type, body []byte, err error) {
	if !rl.Blamed() {
		return false, 0, nil, nil
	}
	var bl *Blame
	s.h.Locked(func() { bl = ep.Blames.Of(rl.Round) })
	if bl == nil || bl.Double {
		// Signed, it would waive a void whose cause is not public.
		return true, 0, nil, errors.New("node: a blame void of a round not blamed here")
	}
	wctx, cancel := context.WithTimeout(ctx, time.Duration(len(ep.V.Chain)+1)*s.StepTimeout)
	defer cancel()
	_ = s.h.WaitFor(wctx, func() bool { return s.h.Ended(ep) || bl.Settled })
	var dropped bool
	s.h.Locked(func() {
		if s.h.Ended(ep) || !bl.Dropped {
			return
		}
		dropped = true
		if s.h.VoidRound(ep, rl.Round) {
			s.Log.Warn("round void (a client was named), epoch goes on", "round", rl.Round)
		}
	})
	if !dropped {
		return true, 0, nil, errors.New("node: the blamed round's slot was not dropped here")
	}
	sig, err := proto.Sign(s.Priv, proto.ListDigest(rl))
	if err != nil {
		return true, 0, nil, err
	}
	return true, wire.TypeSig, (&wire.Sig{Index: uint16(ep.Pos), Sig: sig}).Marshal(), nil
}

package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/blame"
	"github.com/riffle-net/riffle/node/internal/strikes"
)

// walkInput returns the input position at server t on the walk back of
// the epoch's share fault, with t's verified route proof. It walks
// strictly from the evidence towards t: t's output position is the input
// position at t+1, established (and checked here) first (§8 v2: nobody
// reveals its step before checking every step between the evidence and
// itself). Results are remembered: each server reveals one route.
func (s *Server) walkInput(ctx context.Context, e *sepoch, t int) (int, []byte, error) {
	s.mu.Lock()
	se := e.shareErr
	in, done := e.walkIn[t]
	proof := e.walkProof[t]
	s.mu.Unlock()
	if se == nil {
		return 0, nil, errors.New("node: no share fault to walk back")
	}
	if done {
		return in, proof, nil
	}
	t0, out := blame.WalkStart(se)
	if t < 0 || t > t0 {
		return 0, nil, fmt.Errorf("node: server %d is not on the walk (start %d)", t, t0)
	}
	if t < t0 {
		var err error
		if out, _, err = s.walkInput(ctx, e, t+1); err != nil {
			return 0, nil, err
		}
	}
	v := e.final
	id := mix.EpochID(v.ID)
	if t == e.pos {
		s.mu.Lock()
		sec := e.sec
		s.mu.Unlock()
		if sec == nil {
			return 0, nil, errors.New("node: step secret gone before the walk")
		}
		var err error
		in, proof, err = sec.ProveRoute(id, v.ServerKeys, e.stepInputs[t], e.steps[t], out, s.rand)
		if err != nil {
			return 0, nil, fmt.Errorf("node: route proof of server %d at output %d: %w", t, out, err)
		}
	} else {
		req := wire.Route{Epoch: v.ID, S: uint16(t), Out: uint32(out)}
		rep, err := call(ctx, s.h, v.Chain[t], request{Proto: ProtoEpoch, Type: wire.TypeRoute, Body: req.Marshal(), Timeout: shortTimeout})
		if err != nil {
			return 0, nil, fmt.Errorf("node: route of server %d: %w", t, err)
		}
		var rt wire.Route
		if err := rt.Unmarshal(rep); err != nil || rt.Epoch != v.ID || int(rt.S) != t || int(rt.Out) != out {
			return 0, nil, fmt.Errorf("node: route reply of server %d malformed: %v", t, err)
		}
		in, proof = int(rt.In), rt.Proof
	}
	// Every route is checked, this server's own too, against the
	// published setup step: a server cannot misroute the walk (§8 v2).
	if err := mix.VerifyRoute(id, t, v.ServerKeys, e.stepInputs[t], e.steps[t], out, in, proof); err != nil {
		return 0, nil, fmt.Errorf("node: route of server %d from output %d does not verify (server %d is the culprit): %w", t, out, t, err)
	}
	s.mu.Lock()
	if e.walkIn == nil {
		e.walkIn, e.walkProof = map[int]int{}, map[int][]byte{}
	}
	e.walkIn[t], e.walkProof[t] = in, proof
	s.mu.Unlock()
	return in, proof, nil
}

// onRoute answers a walk request for this server's route: only for the
// output position this server itself reaches by walking from the evidence.
func (s *Server) onRoute(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	var req wire.Route
	if err := req.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	s.mu.Lock()
	e := s.epochs[req.Epoch]
	var se *mix.ShareError
	inChain := false
	if e != nil && e.final != nil {
		se = e.shareErr
		for _, p := range e.final.Chain {
			inChain = inChain || p == from
		}
	}
	s.mu.Unlock()
	if se == nil || !inChain || int(req.S) != e.pos {
		return 0, nil, errors.New("node: no share fault of this epoch to walk here")
	}
	if se.Duplicate >= 0 {
		return s.onDupRoute(ctx, e, se, req)
	}
	t0, out := blame.WalkStart(se)
	if e.pos < t0 {
		var err error
		if out, _, err = s.walkInput(ctx, e, e.pos+1); err != nil {
			return 0, nil, err
		}
	}
	if out != int(req.Out) {
		return 0, nil, fmt.Errorf("node: route asked for output %d, the walk reaches %d here", req.Out, out)
	}
	in, proof, err := s.walkInput(ctx, e, e.pos)
	if err != nil {
		return 0, nil, err
	}
	req.In, req.Proof = uint32(in), proof
	return wire.TypeRoute, req.Marshal(), nil
}

// shareFault handles a share fault found at setup (§4.2 step 3): the
// proven result was broadcast; every server walks the position back to
// its input slot with the route proofs, the primary of that slot refuses
// its peer in the next epoch, and the epoch ends. Only the culprit's path
// is revealed, and only a client can cause such a value.
func (s *Server) shareFault(ctx context.Context, e *sepoch, se *mix.ShareError) {
	s.mu.Lock()
	e.shareErr = se
	s.mu.Unlock()
	if se.Duplicate >= 0 {
		s.dupFault(ctx, e, se) // both positions (§4.1 v3)
		return
	}
	t0, slot := blame.WalkStart(se)
	var err error
	if t0 >= 0 {
		slot, _, err = s.walkInput(ctx, e, 0)
	}
	if err != nil {
		s.log.Warn("setup share fault: walk failed", "err", err)
		s.mu.Lock()
		s.end(e, "setup share fault; walk failed")
		s.mu.Unlock()
		return
	}
	// Let later walkers fetch this server's cached route before the
	// epoch ends (the cache answers without the secret).
	wctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.RouteLinger)
	<-wctx.Done()
	cancel()
	var recs []strikes.Rec
	defer func() { s.saveStrikes(recs) }() // after s.mu's unlock
	s.mu.Lock()
	defer s.mu.Unlock()
	if slot >= 0 && slot < len(e.final.Desc.Clients) {
		c := e.final.Desc.Clients[slot]
		if int(c.Primary) == e.pos {
			if p, ok := e.RegFrom[c.RegKey]; ok {
				// Excluded as after a round blame (§8): doubling, by
				// peer id and address, kept on disk.
				_, recs = s.strikes.Client(p, s.peerIPs(p), e.final.Desc.Number)
			}
		}
		// Every server walked to this slot itself: its long-term key
		// is excluded as after a round blame (ltexclude.go).
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.clientNamed(e, slot)
		}()
	}
	s.log.Warn("setup aborted: a client's share is the identity or repeated; it is excluded from the next epoch")
	s.endQuiet(e, "setup share fault: client excluded")
}

package node

import (
	"context"
	"errors"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/mix"
	"github.com/riffle-net/riffle/node/internal/blame"
	"github.com/riffle-net/riffle/node/internal/strikes"
)

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
		return s.dups.OnRoute(ctx, dupEp(e), se, req)
	}
	// The walk is the duplicate's walk with one start (internal/dupwalk):
	// this server's route only from the output its own walk reaches.
	t0, out := blame.WalkStart(se)
	st, err := s.dups.WalkOf(dupEp(e)).Serve(ctx, t0, [2]int{out, out}, int(req.Out))
	if err != nil {
		return 0, nil, err
	}
	req.In, req.Proof = uint32(st.In), st.Proof
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
		s.dups.Fault(ctx, dupEp(e), se) // both positions (§4.1 v3)
		return
	}
	// Walked down from the evidence, each route checked against its
	// published step before the next is asked (§8 v2): as a duplicate's
	// walk, with one start.
	t0, slot := blame.WalkStart(se)
	var err error
	if t0 >= 0 {
		slot, err = s.dups.WalkOf(dupEp(e)).RouteAt(ctx, 0, t0, slot)
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
			if p, ok := e.reg.From(c.RegKey); ok {
				// Excluded as after a round blame (§8): doubling, by
				// peer id and address, kept on disk.
				_, recs = s.strikes.Client(p, s.peerIPs(p), e.final.Desc.Number)
			}
		}
		// Every server walked to this slot itself: its long-term key
		// is excluded as after a round blame (internal/evidence).
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.evs().ClientNamed(evEp(e), slot)
		}()
	}
	s.log.Warn("setup aborted: a client's share is the identity or repeated; it is excluded from the next epoch")
	s.endQuiet(e, "setup share fault: client excluded")
}

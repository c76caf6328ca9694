package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/riffle-net/riffle/internal/wire"
	"github.com/riffle-net/riffle/node/internal/proto"
	"github.com/riffle-net/riffle/node/internal/roster"
	"github.com/riffle-net/riffle/node/internal/slots"
	"github.com/riffle-net/riffle/node/transport"
)

// The roster of an epoch follows from the certificate of the number before
// (§3 (v3) "Epoch numbers and leaders"; docs/proto-node.md "Chains derived
// from certificates"; the chain is internal/members's Chains.Derived, and
// this file the left-out check and the would-serve question). The chain a
// server expects for number N is its group
// chain (live roster servers, not blamed, past probation, the operator's
// pins left aside) joined with the live servers of N−1's certificate that
// are neither blamed nor out for their refusal budget: a server of the
// last certified chain serves no probation anywhere, and a server that
// missed epochs still counts it. The leader of N is that chain's
// [N mod |chain|], the rotation every server checks a Prepare's sender
// against. A Prepare may leave out a server of N−1's certificate only with
// a cause each server checks alone: blamed, out for its refusal budget, not
// live here, or its own withdrawal, which each server asks of it
// (TypeWouldServe) rather than take the leader's word.

// checkLeftOut refuses a Prepare whose chain leaves out a server of its
// previous certificate without a cause that holds here. A full chain
// (wire.MaxServers) leaves servers out by its size. Never call with s.mu
// held.
func (s *Server) checkLeftOut(p *wire.Prepare) error {
	if p.Previous.Kind == wire.CertNone || len(p.Chain) >= wire.MaxServers {
		return nil
	}
	in := map[string]bool{}
	for _, b := range p.Chain {
		in[string(b)] = true
	}
	live := map[peer.ID]bool{}
	for _, q := range s.members.At(p.Number) {
		live[q] = true
	}
	for _, b := range p.Previous.Chain {
		d := peer.ID(b)
		if in[string(b)] || d == s.h.ID() || !live[d] || s.refusalOutAt(d, p.Number) {
			continue
		}
		ids := make([]peer.ID, 0, len(p.Chain)+1)
		for _, c := range p.Chain {
			ids = append(ids, peer.ID(c))
		}
		ids = append(ids, d)
		sortChain(ids)
		q := wire.Prepare{Number: p.Number, Nonce: p.Nonce, Params: p.Params, Chain: proto.ChainIDs(ids), Previous: p.Previous, Window: p.Window, Gap: p.Gap}
		ctx, cancel := context.WithTimeout(s.ctx, s.cfg.Timing.WouldServeTimeout)
		_, err := transport.Call(ctx, s.h, d, transport.Request{Proto: ProtoEpoch, Type: wire.TypeWouldServe, Body: q.Marshal(), Timeout: s.cfg.Timing.WouldServeTimeout})
		cancel()
		switch {
		case err == nil:
			return fmt.Errorf("node: prepared chain leaves out %s of epoch %d's certificate, which would serve", d.ShortString(), p.Previous.Number)
		case strings.Contains(err.Error(), withdrawMark):
			s.log.Debug("left-out server withdraws", "peer", d.ShortString(), "number", p.Number)
		default:
			// Not reachable from here: as good as not live.
			s.log.Debug("left-out server did not answer", "peer", d.ShortString(), "err", err)
		}
	}
	return nil
}

// onWouldServe answers a roster server that asks whether this server would
// serve in a chain (a Prepare left it out): an ack, or the withdrawal it
// would send the leader (eligible.go).
func (s *Server) onWouldServe(ctx context.Context, from peer.ID, body []byte) (wire.Type, []byte, error) {
	if err := s.amnesia.Lost(s.cert.Top()); err != nil {
		return 0, nil, err
	}
	if s.roster.get(from) == nil {
		return 0, nil, errors.New("node: would-serve question only from roster servers")
	}
	var p wire.Prepare
	if err := p.Unmarshal(body); err != nil {
		return 0, nil, err
	}
	// The parameters too, as its Prepare would be checked: a server that
	// would refuse them refuses to serve, and may be left out.
	if err := proto.CheckParams(p.Params, s.cfg.PIRRate); err != nil {
		return 0, nil, err
	}
	if err := proto.CheckGroupParams(p.Params, s.cfg.Params.Wire()); err != nil {
		return 0, nil, err
	}
	// The chain's servers as its Prepare would check them (onPrepare):
	// a server that would refuse the Prepare for a server of the chain
	// named by a round blame or out for its refusal budget here says so,
	// and is left out. It answered yes, and refused every Prepare that
	// left it out: one server that counted another out for its budget,
	// where the leader did not, held the group without an epoch for good
	// (the swarm's seed 5; TestWouldServeAsPrepare).
	out := func(q peer.ID) bool { return s.refusalOutAt(q, p.Number) }
	pos, err := roster.Members(p.Chain, s.h.ID(), "would-serve chain", s.cfg.MinServers, s.rb.serverExcluded, out, s.members.Eligible)
	if err != nil {
		return 0, nil, err
	}
	if pos < 0 {
		return 0, nil, errors.New("node: would-serve chain without this server")
	}
	// The window, as its Prepare would be checked (takeWindow): a server
	// that neither holds it nor gets it from the asker, which took it
	// before it asked, would refuse the Prepare, so it says so and is left
	// out. It answered yes, so the others refused the attempt that left it
	// out for want of the window (TestWouldServeWindow). The answer
	// depends only on the question and what is held here, never on who
	// asked before: what is held answers first; a yes this server gave
	// after a fetch for the same question (number, Previous, Window, Gap)
	// answers next (saidYes), since nothing fetched is kept, the Previous
	// it walks from being unchecked here. A member asked it again for a
	// second attempt at N and it answered "not held", as good as not live,
	// and was left out (TestWouldServeAskedAgain).
	wctx, cancel := context.WithTimeout(ctx, s.cfg.Timing.WouldServeTimeout/2)
	defer cancel()
	if !s.win.Lacks(&p) {
		if _, err := s.win.Hold(wctx, "", &p, false); err != nil {
			return 0, nil, err
		}
		return wire.TypeAck, ack, nil
	}
	key := questionKey(&p)
	if s.windowSlots.SaidYes(key, p.Number) {
		return wire.TypeAck, ack, nil
	}
	// Else a fetch from the asker, one question at a time: only from a
	// server of the group (a roster server may be anyone that said hello)
	// in the question's chain, as a member of the Prepare it checks is,
	// for the next number here, within the asker's budget for the number
	// (askedFetch), the reply capped at maxLookbackWindow: a group peer
	// cannot make this server download window after window of made-up
	// refs. A fetch that failed (the asker slow or its slots full) leaves
	// the next question a fetch, up to slots.WouldServeFetches; one that could
	// not run is given back. A question beyond that is answered from what
	// is held here. "Busy" is no answer, since it says nothing of the
	// question and the asker took it as not live: a question whose fetch
	// finds every slot taken waits for one (the slots cover every fetch
	// the budgets give for a number; TestWouldServeBusyWaits).
	src := peer.ID("")
	if s.members.GroupPeer(from) && slices.ContainsFunc(p.Chain, func(b []byte) bool { return peer.ID(b) == from }) && p.Number == s.cert.Top()+1 {
		if done, ok := s.askedFetch(from, p.Number); ok {
			release, err := s.windowSlots.Asking.TakeWait(wctx, from, "", slots.MaxAskers, slots.MaxAskers)
			if err != nil {
				done(false)
			} else {
				defer release()
				defer done(true)
				src = from
			}
		}
	}
	if _, err := s.win.Hold(wctx, src, &p, false); err != nil {
		return 0, nil, err
	}
	if src != "" {
		s.windowSlots.RememberYes(key, p.Number)
	}
	return wire.TypeAck, ack, nil
}

// questionKey is what a would-serve answer about the window depends on:
// the question without its chain and nonce.
func questionKey(p *wire.Prepare) [32]byte {
	q := *p
	q.Chain, q.Nonce = nil, [32]byte{}
	return sha256.Sum256(q.Marshal())
}

// askedFetch reports whether this server may fetch the window of a
// would-serve question of number n (the next here) from the asker from,
// and counts it (slots.Window.Asked, whose budgets it is): the servers
// of n−1's certificate (the group certified for n) are members, any
// other server of the group is counted in its address range. A Prepare
// of n holds more than half of n−1's certificate (certs.HoldsPrevGroup), so an
// honest one of its members asks, fetches, and its yes then answers the
// same question from the others (SaidYes).
func (s *Server) askedFetch(from peer.ID, n uint64) (done func(ran bool), ok bool) {
	member := false
	if g, ok := s.cert.Group(n); ok && g[from] && !s.rb.serverExcluded(from) {
		member = true
	}
	rng := ""
	if !member {
		rng = s.peers.Range(from)
	}
	return s.windowSlots.Asked(from, n, member, rng)
}

package node

import (
	"github.com/riffle-net/riffle/node/internal/wouldserve"
)

// The roster of an epoch follows from the certificate of the number before
// (§3 (v3) "Epoch numbers and leaders"; docs/proto-node.md "Chains derived
// from certificates"; the chain is internal/members's Chains.Derived, the
// left-out check and the would-serve question internal/wouldserve's). The
// chain a server expects for number N is its group chain (live roster
// servers, not blamed, past probation, the operator's pins left aside)
// joined with the live servers of N−1's certificate that
// are neither blamed nor out for their refusal budget: a server of the
// last certified chain serves no probation anywhere, and a server that
// missed epochs still counts it. The leader of N is that chain's
// [N mod |chain|], the rotation every server checks a Prepare's sender
// against. A Prepare may leave out a server of N−1's certificate only with
// a cause each server checks alone: blamed, out for its refusal budget, not
// live here, or its own withdrawal, which each server asks of it
// (TypeWouldServe) rather than take the leader's word.

// newWouldServe is s's would-serve question and answer
// (internal/wouldserve).
func newWouldServe(s *Server) *wouldserve.Service {
	return &wouldserve.Service{H: s.h, Chains: &s.members, Peers: &s.peers, Roster: &s.roster.Table, Win: &s.win,
		Slots: &s.windowSlots, Log: s.log, Ctx: s.ctx, Timing: &s.cfg.Timing, PIRRate: s.cfg.PIRRate, Params: s.cfg.Params.Wire(),
		Lost: func() error { return s.amnesia.Lost(s.cert.Top()) }}
}
